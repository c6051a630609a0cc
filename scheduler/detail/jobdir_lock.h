// One crawl per JOBDIR: two processes appending to one journal and one requests.seen would leave
// a JOBDIR neither can resume.
//
//   crawler::detail::jobdir_lock lock{"crawls/books-1"};  // throws if another process holds it
//
// An flock(2) on JOBDIR/lock, held while the object lives. The kernel drops it when the holder
// exits, however it exits, so a crawl killed with -9 leaves no stale lock behind. The file holds
// the holder's pid, for the message the next process gives.
#pragma once

#include <filesystem>

namespace crawler::detail {

class jobdir_lock {
 public:
  /// Creates `dir` if needed and locks it. Throws std::runtime_error naming the folder and the
  /// pid of the process that holds it, or why the lock file cannot be opened.
  explicit jobdir_lock(const std::filesystem::path& dir);
  ~jobdir_lock();
  jobdir_lock(const jobdir_lock&) = delete;
  jobdir_lock& operator=(const jobdir_lock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace crawler::detail
