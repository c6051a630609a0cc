#include "scheduler/detail/jobdir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace crawler::detail {

jobdir_lock::jobdir_lock(const std::filesystem::path& dir) {
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);  // a failure shows at open, with its reason
  auto path = dir / "lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);  // never a planted link
  if (fd_ < 0) {
    throw std::runtime_error("JOBDIR " + dir.string() + ": cannot open " + path.string() + ": " +
                             std::strerror(errno));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    char holder[32] = {};
    auto length = ::pread(fd_, holder, sizeof holder - 1, 0);
    std::string pid = length > 0 ? std::string(holder, std::size_t(length)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (error != EWOULDBLOCK) {
      throw std::runtime_error("JOBDIR " + dir.string() + ": cannot lock " + path.string() + ": " +
                               std::strerror(error));
    }
    throw std::runtime_error("JOBDIR " + dir.string() + " is in use by process " +
                             (pid.empty() ? "(unknown)" : pid) +
                             ": one crawl per JOBDIR (wait for it to stop, or choose another)");
  }
  auto pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid; only the next process's message is poorer.
  }
}

jobdir_lock::~jobdir_lock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace crawler::detail
