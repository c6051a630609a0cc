#include "crawler/detail/whole_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "config/file_writes.h"

namespace crawler::detail {

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::string content{std::istreambuf_iterator<char>(in), {}};
  if (in.bad()) throw std::runtime_error("cannot read " + path.string());
  return content;
}

void write_whole_file(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  auto failed = [&path](int error) {
    return std::runtime_error("cannot write " + path.string() + ": " + std::strerror(error));
  };
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw failed(errno);
  if (!write_all(fd, content)) {
    auto error = errno;
    ::close(fd);
    throw failed(error);
  }
  if (::close(fd) != 0) throw failed(errno);
}

}  // namespace crawler::detail
