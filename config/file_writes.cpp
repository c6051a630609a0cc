#include "config/file_writes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>

namespace crawler {
namespace {

std::runtime_error cannot_write(const std::filesystem::path& path, int error) {
  return std::runtime_error("cannot write " + path.string() + ": " + std::strerror(error));
}

// Enough to write without a system call per request line, small beside a crawl's memory.
constexpr std::size_t flush_at = 64 * 1024;

}  // namespace

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    auto written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return false;
    if (written == 0) {
      errno = EIO;
      return false;
    }
    bytes.remove_prefix(std::size_t(written));
  }
  return true;
}

int create_beside(const std::filesystem::path& path, mode_t mode, std::filesystem::path& name) {
  static constexpr char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::random_device random;
  int error = EEXIST;
  // Another name is tried only when one exists already: every other error is the folder's.
  for (int attempt = 0; attempt < 100 && error == EEXIST; ++attempt) {
    name = path;
    name += ".tmp-";
    for (int i = 0; i < 16; ++i) name += digits[random() % 36];
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) return fd;
    error = errno;
  }
  throw cannot_write(path, error);
}

int open_to_append(const std::filesystem::path& path, mode_t mode) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode);
}

replacing_file::replacing_file(std::filesystem::path path, mode_t mode) : path_(std::move(path)) {
  fd_ = create_beside(path_, mode, temporary_);
}

replacing_file::~replacing_file() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temporary_.c_str());
  }
}

void replacing_file::fail(int error) const { throw cannot_write(path_, error); }

void replacing_file::flush() {
  if (!write_all(fd_, buffer_)) fail(errno);
  buffer_.clear();
}

void replacing_file::write(std::string_view bytes) {
  if (buffer_.size() + bytes.size() < flush_at) {
    buffer_ += bytes;
    return;
  }
  flush();
  // A large piece (a Bloom filter's bits) goes out as it is, not copied into the buffer first.
  if (!write_all(fd_, bytes)) fail(errno);
}

void replacing_file::commit(bool durable) {
  flush();
  if (durable && ::fsync(fd_) != 0) fail(errno);
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(temporary_.c_str());
    fail(error);
  }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    int error = errno;
    ::unlink(temporary_.c_str());
    fail(error);
  }
}

void replace_file(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  replacing_file file(path, mode);
  file.write(content);
  file.commit();
}

int open_destination(const std::filesystem::path& path, mode_t mode, bool truncate) {
  int mode_flags = truncate ? O_TRUNC : O_APPEND;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | mode_flags, mode);
  if (fd >= 0 || errno != ELOOP) return fd;
  // A link: followed only to a device or a pipe, judged on what was opened (no second lookup),
  // and opened without O_TRUNC, which would cut a file before it could be judged.
  fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_APPEND);
  if (fd < 0) return -1;
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || !(S_ISCHR(opened.st_mode) || S_ISFIFO(opened.st_mode))) {
    ::close(fd);
    errno = ELOOP;
    return -1;
  }
  return fd;
}

void write_destination(const std::filesystem::path& path, std::string_view content) {
  int fd = open_destination(path, 0666, true);
  if (fd < 0) {
    if (errno != ELOOP) throw cannot_write(path, errno);
    throw std::runtime_error("cannot write " + path.string() +
                             ": a symbolic link to a file (written to a file itself, or to a "
                             "device or pipe)");
  }
  bool written = write_all(fd, content);
  int error = errno;
  if (::close(fd) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written) throw cannot_write(path, error);
}

}  // namespace crawler
