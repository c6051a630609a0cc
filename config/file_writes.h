// Files written where someone else may write too (FILES_STORE, HTTPCACHE_DIR, JOBDIR, feed
// folders, queue segments): never through a name another local user could have planted.
//
// A predictable name such as `store/full/<sha1>.jpg.tmp<pid>-<n>` lets whoever can write the
// folder plant a symbolic link there first, and an open(O_CREAT|O_TRUNC) of that name then
// overwrites the link's target with downloaded bytes. So every file is written under a name
// nobody can guess, created by that open alone (O_CREAT|O_EXCL|O_NOFOLLOW), and renamed into
// place; rename replaces whatever sits at the final name, a link included, without following it.
// A file that is appended to is opened with O_NOFOLLOW: a link planted at its name is refused.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace crawler {

/// Writes `content` to `path` through a new file beside it (see above), created with `mode` less
/// the umask, then renamed over `path`: a reader sees the old file or the whole new one. Throws
/// std::runtime_error "cannot write PATH: why"; nothing is left beside `path`.
void replace_file(const std::filesystem::path& path, std::string_view content, mode_t mode);

/// The writer replace_file uses, for content written in pieces: write() as often as needed, then
/// commit() renames it over `path`. Destroyed before commit(), it removes its file and `path` stays
/// as it was.
class replacing_file {
 public:
  /// Creates the new file beside `path` with `mode` (less the umask). Throws std::runtime_error
  /// "cannot write PATH: why".
  replacing_file(std::filesystem::path path, mode_t mode);
  ~replacing_file();
  replacing_file(const replacing_file&) = delete;
  replacing_file& operator=(const replacing_file&) = delete;

  /// Appends `bytes`. Throws std::runtime_error "cannot write PATH: why" (a full disk).
  void write(std::string_view bytes);
  /// Flushes, fsyncs when `durable`, and renames the file over `path`. Throws as write() does.
  void commit(bool durable = false);

  /// The unguessable name it is written under until commit().
  const std::filesystem::path& temporary() const { return temporary_; }

 private:
  void flush();
  [[noreturn]] void fail(int error) const;

  std::filesystem::path path_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  std::string buffer_;
};

/// A file beside `path` (`path` + ".tmp-" + 16 random characters), created by this call alone with
/// `mode` less the umask, open for writing; its name in `name`. Throws std::runtime_error
/// "cannot write PATH: why".
int create_beside(const std::filesystem::path& path, mode_t mode, std::filesystem::path& name);

/// `path` opened to append to (created with `mode` when missing), refusing a symbolic link at its
/// name. Returns the descriptor, or -1 with errno set (ELOOP for a link).
int open_to_append(const std::filesystem::path& path, mode_t mode);

/// `path` opened for writing as a destination a user named (LOG_FILE, STATS_FILE, a feed
/// appended to): the regular file at that name, created with `mode` when missing, truncated
/// when `truncate` and appended to otherwise; or the device or pipe the name, or a link at it,
/// leads to (/dev/stderr, a FIFO). A link to anything else is refused, and what it points at is
/// left untouched: whoever can write the folder could have planted it. Returns the descriptor,
/// or -1 with errno set (ELOOP for a refused link).
int open_destination(const std::filesystem::path& path, mode_t mode, bool truncate);

/// Writes `content` to `path` opened by open_destination (truncated). Throws std::runtime_error
/// "cannot write PATH: why".
void write_destination(const std::filesystem::path& path, std::string_view content);

/// Writes all of `bytes` to `fd`, retrying short writes; false with errno set when it cannot.
bool write_all(int fd, std::string_view bytes);

}  // namespace crawler
