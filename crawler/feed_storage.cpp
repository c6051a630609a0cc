#include "crawler/feed_storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "config/file_writes.h"
#include "config/log.h"

namespace crawler {

feed_storage::~feed_storage() = default;

bool feed_storage::flush() {
  stream().flush();
  return bool(stream());
}

namespace {

// The file's size up to and including its last newline, and its whole size.
std::pair<std::uintmax_t, std::uintmax_t> whole_lines_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  auto size = std::streamoff(in.tellg());
  if (size <= 0) return {0, 0};
  std::streamoff keep = size;
  char c = 0;
  while (keep > 0) {
    in.seekg(keep - 1);
    in.get(c);
    if (c == '\n') break;
    --keep;
  }
  return {std::uintmax_t(keep), std::uintmax_t(size)};
}

// A feed appended to must end with a whole line: a crawl killed mid-write leaves a cut-short
// last line, which the next run's first item would merge into. It is dropped, with a warning
// (its item is crawled again: its page was not done).
void drop_torn_tail(const std::string& path) {
  auto [keep, size] = whole_lines_size(path);
  if (keep == size) return;
  std::filesystem::resize_file(path, keep);
  get_logger("feedexport")
      ->warn("{}: dropped its last {} bytes, a line cut short by a crash", path, size - keep);
}

// A new file beside `path` (config/file_writes.h: a name nobody can guess, never a planted file
// or link), with the permissions of the file it will replace, or the umask's.
std::string create_feed_beside(const std::string& path, std::filesystem::perms replaced) {
  std::filesystem::path name;
  int fd = -1;
  try {
    fd = create_beside(path, 0666, name);
  } catch (const std::exception& error) {
    throw std::runtime_error(path + ": cannot create a file beside it to write the feed to (" +
                             error.what() + ")");
  }
  if (replaced != std::filesystem::perms::unknown) ::fchmod(fd, static_cast<mode_t>(replaced));
  ::close(fd);
  return name.string();
}

// A feed appended to is the file its name names, never a file behind a link: anyone who can
// write the feed's folder could have put the link there, and the crawl would append to (and cut
// a torn line off) whatever it points at. A link to a device or a pipe (/dev/stdout) is a
// destination, not a file to harm: written through as before.
void refuse_a_link_to_a_file(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_symlink(path, error)) return;
  auto target = std::filesystem::status(path, error).type();
  if (target == std::filesystem::file_type::character ||
      target == std::filesystem::file_type::fifo) {
    return;
  }
  throw std::runtime_error(path +
                           ": is a symbolic link: a feed is appended to a file itself, never "
                           "through a link (write to the file it points at, or use -O)");
}

// Scrapy's FileFeedStorage: a local file, appended to unless the feed overwrites it. An
// overwritten file is written beside it first (a name of its own, create_beside) and takes its
// place with the first item, once the crawl is under way (or at its end, when none came): a crawl
// refused at start (a missing -a, a typo in a setting) leaves yesterday's feed as it was.
class file_storage : public feed_storage {
 public:
  explicit file_storage(const feed_target& target)
      : path_(target.uri.starts_with("file://") ? target.uri.substr(7) : target.uri),
        flushed_per_page_(target.flushed_per_page) {
    if (auto parent = std::filesystem::path(path_).parent_path(); !parent.empty()) {
      std::filesystem::create_directories(parent);
    }
    if (!target.overwrite) refuse_a_link_to_a_file(path_);
    existing_ = !target.overwrite && std::filesystem::is_regular_file(path_) &&
                std::filesystem::file_size(path_) > 0;
    if (existing_) drop_torn_tail(path_);
    // A device or a pipe (/dev/null, a FIFO) is written as it is: nothing to put beside it.
    std::error_code no_status;
    auto status = std::filesystem::status(path_, no_status);
    if (target.overwrite && (status.type() == std::filesystem::file_type::not_found ||
                             status.type() == std::filesystem::file_type::regular)) {
      pending_ = create_feed_beside(path_, status.type() == std::filesystem::file_type::regular
                                          ? status.permissions()
                                          : std::filesystem::perms::unknown);
    }
    if (target.overwrite) {
      out_.open(written(), std::ios::trunc);
    } else {
      // Not through a link (refuse_a_link_to_a_file), and as a name the stream can open: the
      // descriptor's /proc/self/fd entry, so the name is not looked up again.
      int fd = open_destination(path_, 0666, false);
      if (fd >= 0) {
        out_.open("/proc/self/fd/" + std::to_string(fd), std::ios::app);
        ::close(fd);
      }
    }
    if (!out_) throw std::runtime_error(path_ + ": cannot open the feed for writing");
    std::error_code no_size;  // a device such as /dev/full: none to go back to
    whole_size_ = std::filesystem::file_size(written(), no_size);
    appended_ = !target.overwrite && !no_size;
    recorded_size_ = whole_size_;
  }
  ~file_storage() override {
    std::error_code ignored;
    if (!pending_.empty()) std::filesystem::remove(pending_, ignored);  // never put in place
  }

  std::ostream& stream() override { return out_; }
  bool continues_existing() const override { return existing_; }
  bool under_way() override { return put_in_place(); }

  bool flush() override {
    ++flushes_;
    if (!feed_storage::flush() || !put_in_place()) return false;
    std::error_code error;
    if (auto size = std::filesystem::file_size(path_, error); !error) whole_size_ = size;
    if (flushed_per_page_ && appended_) unrecorded_.emplace_back(flushes_, whole_size_);
    return true;
  }

  void recorded(std::uint64_t flush) override {
    while (!unrecorded_.empty() && unrecorded_.front().first <= flush) {
      recorded_size_ = unrecorded_.front().second;
      unrecorded_.pop_front();
    }
  }

  // Only a file appended to: one overwritten is written anew by the resume, whole.
  void take_back_unrecorded() override {
    if (!flushed_per_page_ || !appended_) return;
    // First: what it buffers would land after the cut. The stream appends, so what comes
    // after (nothing, for JSON lines and CSV) lands at the new end.
    out_.flush();
    std::error_code ignored;
    if (std::filesystem::file_size(path_, ignored) > recorded_size_) {
      get_logger("feedexport")
          ->warn("{}: took back the items of the pages JOBDIR could not record as done, to "
                 "{} bytes; the resume exports them again",
                 path_, recorded_size_);
    }
    std::filesystem::resize_file(path_, recorded_size_, ignored);
  }

  // A failed write may have put part of a line on the disk (all of it that fit). With JOBDIR the
  // file goes back to its size at the last flush that succeeded, the end of a page that is done
  // (the items after it come again with their pages, crawled again by the resume); without, to
  // its last whole line.
  void after_failed_write() override {
    out_.close();  // now: later, closing would write the rest of its buffer after the cut
    std::error_code ignored;
    std::filesystem::resize_file(
        written(), flushed_per_page_ ? whole_size_ : whole_lines_size(written()).first, ignored);
  }

  bool store() override {
    out_.close();
    return bool(out_) && put_in_place();
  }
  std::string_view stats_name() const override { return "FileFeedStorage"; }

 private:
  const std::string& written() const { return pending_.empty() ? path_ : pending_; }
  // The file written beside takes the feed's name; the stream goes on into it under that name.
  bool put_in_place() {
    if (pending_.empty()) return true;
    std::error_code error;
    std::filesystem::rename(pending_, path_, error);
    if (error) return false;
    pending_.clear();
    return true;
  }

  std::string path_;
  std::string pending_;  // the file written beside path_ until it takes its place
  std::ofstream out_;
  bool flushed_per_page_;
  bool existing_ = false;
  std::uintmax_t whole_size_ = 0;  // the file's size at the last flush that succeeded
  bool appended_ = false;          // a regular file, appended to (not overwritten)
  std::uint64_t flushes_ = 0;
  // With JOBDIR: the size after the last flush whose pages are recorded as done, and after each
  // flush since (its number, the size).
  std::uintmax_t recorded_size_ = 0;
  std::deque<std::pair<std::uint64_t, std::uintmax_t>> unrecorded_;
};

// Scrapy's StdoutFeedStorage. What the crawl prints goes to stderr: standard output is the
// feed's alone. Opened anew (appending), so a pipe or a file it was redirected to gets the feed
// as it is written; a pipe cannot be cut back after a failed write.
class stdout_storage : public feed_storage {
 public:
  explicit stdout_storage(const feed_target&) {
    out_.open("/dev/stdout", std::ios::app);
    if (!out_) throw std::runtime_error("stdout: cannot open standard output for the feed");
  }
  std::ostream& stream() override { return out_; }
  void after_failed_write() override { out_.close(); }
  bool store() override {
    out_.close();
    return bool(out_);
  }
  std::string_view stats_name() const override { return "StdoutFeedStorage"; }

 private:
  std::ofstream out_;
};

std::mutex& storages_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The built-ins are in the table from its first use, whichever comes first of a registration
// and a lookup.
std::map<std::string, feed_storage_factory, std::less<>>& storages() {
  static std::map<std::string, feed_storage_factory, std::less<>> table{
      {"file", [](const feed_target& target) -> std::unique_ptr<feed_storage> {
         return std::make_unique<file_storage>(target);
       }},
      {"stdout", [](const feed_target& target) -> std::unique_ptr<feed_storage> {
         return std::make_unique<stdout_storage>(target);
       }}};
  return table;
}

}  // namespace

bool register_feed_storage(std::string scheme, feed_storage_factory make) {
  std::lock_guard lock(storages_mutex());
  storages().insert_or_assign(std::move(scheme), std::move(make));
  return true;
}

std::vector<std::string> registered_feed_storages() {
  std::lock_guard lock(storages_mutex());
  std::vector<std::string> schemes;
  for (const auto& [scheme, make] : storages()) schemes.push_back(scheme);
  return schemes;
}

std::string feed_uri_scheme(std::string_view uri) {
  if (uri == "stdout:") return "stdout";
  auto separator = uri.find("://");
  return separator == std::string_view::npos ? "file" : std::string(uri.substr(0, separator));
}

std::unique_ptr<feed_storage> open_feed_storage(const feed_target& target) {
  auto scheme = feed_uri_scheme(target.uri);
  feed_storage_factory make;
  {
    std::lock_guard lock(storages_mutex());
    if (auto found = storages().find(scheme); found != storages().end()) make = found->second;
  }
  if (!make) {
    std::string known;
    for (const auto& each : registered_feed_storages()) known += (known.empty() ? "" : ", ") + each;
    throw std::invalid_argument("no feed storage is registered for \"" + scheme +
                                "\" URIs (registered: " + known +
                                "); one is registered in C++ with CRAWLER_REGISTER_FEED_STORAGE "
                                "(crawler/feed_storage.h)");
  }
  return make(target);
}

}  // namespace crawler
