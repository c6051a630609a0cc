// The in-process backends: `set` (exact) and `bloom` (scalable Bloom filter), each persisted under
// JOBDIR so a stopped crawl resumes with what it had seen.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/file_writes.h"
#include "dedup/bloom_filter.h"
#include "dedup/detail/backends.h"
#include "dedup/detail/fingerprint_set.h"

namespace crawler::dedup::detail {
namespace {

namespace fs = std::filesystem;

std::string describe_errno(const fs::path& path, std::string_view action) {
  return "cannot " + std::string(action) + " " + path.string() + ": " + std::strerror(errno);
}

// Checks with the exception kept for the completion, so a bad JOBDIR reaches the caller as an
// error.
template <typename Handler, typename Action>
void complete_with(Handler handler, Action action) {
  std::exception_ptr error;
  try {
    action();
  } catch (...) {
    error = std::current_exception();
  }
  std::move(handler)(error);
}

// Scrapy's RFPDupeFilter: a set of fingerprints, and with JOBDIR a requests.seen file holding one
// 40-hex fingerprint a line, appended as requests are seen, read back at open.
class set_dupefilter final : public rfp_dupefilter {
 public:
  explicit set_dupefilter(const dupefilter_context& context)
      : rfp_dupefilter(context, "set", "dupefilter") {
    if (settings_.has("JOBDIR"))
      file_path_ = fs::path(settings_.get_string("JOBDIR")) / "requests.seen";
  }
  ~set_dupefilter() override {
    if (file_) std::fclose(file_);
  }

 private:
  void do_open(asio::any_completion_handler<done_signature> handler) override {
    complete_with(std::move(handler), [this] {
      if (file_path_.empty() || file_) return;
      fs::create_directories(file_path_.parent_path());
      bool missing_newline = false;
      // Only a regular file holds fingerprints: a device such as /dev/null or /dev/full does not
      // (read, it would never end), though it can be written.
      if (std::ifstream in(file_path_, std::ios::binary); in && fs::is_regular_file(file_path_)) {
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::size_t start = 0, whole = 0;
        for (std::size_t number = 1; start < text.size(); ++number) {
          auto end = text.find('\n', start);
          if (end == std::string::npos) {
            // A last line without its newline: whole if it is a fingerprint (a file edited by
            // hand), else cut short by a crash, and its request is in the queue's journal, which
            // marks it seen again. Either way the file ends with a newline before we append.
            if (auto fp = fingerprint::from_hex(std::string_view(text).substr(start, 40));
                fp && text.size() - start == 40) {
              seen_.insert(*fp);
              missing_newline = true;
            } else {
              logger_->warn("{}: dropped its last line, cut short by a crash", file_path_.string());
              fs::resize_file(file_path_, whole);
            }
            break;
          }
          auto line = text.substr(start, end - start);
          start = whole = end + 1;
          while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
          if (line.empty()) continue;
          auto fp = fingerprint::from_hex(line);
          if (!fp) {
            throw dupefilter_error(file_path_.string() + ":" + std::to_string(number) +
                                   ": expected a 40-hex fingerprint, got '" + line.substr(0, 80) +
                                   "'");
          }
          seen_.insert(*fp);
        }
      }
      // O_NOFOLLOW: JOBDIR may be a folder others can write, and a link planted at
      // requests.seen is refused, never appended through.
      int fd = open_to_append(file_path_, 0666);
      file_ = fd < 0 ? nullptr : ::fdopen(fd, "a");
      if (!file_) {
        auto error = describe_errno(file_path_, "open");
        if (fd >= 0) ::close(fd);
        throw dupefilter_error(error);
      }
      if (missing_newline) std::fputc('\n', file_);
    });
  }

  void do_seen(std::span<const fingerprint> batch,
               asio::any_completion_handler<seen_signature> handler) override {
    // The previous batch's fingerprints go to the file now, one batch late: by now the scheduler
    // has journaled their requests, so no fingerprint is on disk before its request.
    write_unwritten();
    seen_flags flags(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      bool inserted = seen_.insert(batch[i]);
      flags[i] = !inserted;
      if (inserted && file_ && recording_) {
        char line[41];
        batch[i].write_hex(line);
        line[40] = '\n';
        unwritten_.append(line, sizeof line);
      }
    }
    std::move(handler)(nullptr, std::move(flags));
  }

  std::string record_failure() const override { return record_failure_; }

  void stop_recording() override {
    recording_ = false;
    unwritten_.clear();
  }

  void do_close(asio::any_completion_handler<done_signature> handler) override {
    complete_with(std::move(handler), [this] {
      if (!file_) return;
      write_unwritten();
      bool failed = std::fclose(file_) != 0;
      file_ = nullptr;
      if (failed) throw dupefilter_error(describe_errno(file_path_, "write"));
      if (!record_failure_.empty()) throw dupefilter_error(record_failure_);
    });
  }

  void write_unwritten() {
    // Nothing after stop_recording(): it emptied unwritten_, and do_seen adds no more.
    if (!file_ || unwritten_.empty()) return;
    std::fwrite(unwritten_.data(), 1, unwritten_.size(), file_);
    unwritten_.clear();
    // The first failure's reason; the stream stays in error after it.
    if (std::ferror(file_) && record_failure_.empty()) {
      record_failure_ = describe_errno(file_path_, "write");
    }
  }

  fingerprint_set seen_;
  fs::path file_path_;
  std::FILE* file_ = nullptr;
  std::string unwritten_;  // the last batch's new fingerprints, written with the next
  std::string record_failure_;
  bool recording_ = true;  // stop_recording
};

// A scalable Bloom filter in memory; with JOBDIR saved to requests.bloom at close and loaded at
// open.
class bloom_dupefilter final : public rfp_dupefilter {
 public:
  explicit bloom_dupefilter(const dupefilter_context& context)
      : rfp_dupefilter(context, "bloom", "bloomfilter"),
        params_(bloom_capacity_from(context.settings)) {
    if (settings_.has("JOBDIR"))
      file_path_ = fs::path(settings_.get_string("JOBDIR")) / "requests.bloom";
  }

 private:
  void do_open(asio::any_completion_handler<done_signature> handler) override {
    complete_with(std::move(handler), [this] {
      if (!file_path_.empty()) {
        fs::create_directories(file_path_.parent_path());
        if (fs::exists(file_path_)) filter_ = scalable_bloom_filter::load(file_path_, params_);
      }
      if (!filter_) filter_.emplace(params_);
      report();
    });
  }

  void do_seen(std::span<const fingerprint> batch,
               asio::any_completion_handler<seen_signature> handler) override {
    seen_flags flags(batch.size());
    filter_->test_and_insert(batch, flags.data());
    // The estimate moves slowly; refreshing it every 16 pages keeps the stats lock off the hot
    // path.
    if (++batches_ % 16 == 0) report();
    std::move(handler)(nullptr, std::move(flags));
  }

  void do_close(asio::any_completion_handler<done_signature> handler) override {
    complete_with(std::move(handler), [this] {
      if (!filter_) return;
      report();
      if (!file_path_.empty() && recording_) filter_->save(file_path_);
    });
  }

  // The file saved at the last clean close stays; the journal since then marks the rest seen.
  void stop_recording() override { recording_ = false; }

  void report() {
    report_bloom(params_.capacity, filter_->bits(), filter_->hashes(), filter_->estimated_fpr(),
                 params_.error_rate);
  }

  scalable_bloom_filter::params params_;
  bool recording_ = true;  // stop_recording
  std::optional<scalable_bloom_filter> filter_;
  std::uint64_t batches_ = 0;
  fs::path file_path_;
};

}  // namespace

std::unique_ptr<rfp_dupefilter> make_set_dupefilter(const dupefilter_context& context) {
  return std::make_unique<set_dupefilter>(context);
}

std::unique_ptr<rfp_dupefilter> make_bloom_dupefilter(const dupefilter_context& context) {
  return std::make_unique<bloom_dupefilter>(context);
}

}  // namespace crawler::dedup::detail
