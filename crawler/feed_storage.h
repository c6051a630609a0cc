// Feed storages: where a feed's bytes go, chosen by its URI's scheme, as Scrapy's FEED_STORAGES.
// Built in: local files (a path, or file://PATH) and standard output ("stdout:", `-o -`).
//
// A storage for another scheme is a class registered in C++. Scrapy's S3 and FTP storages write
// the feed to a local temporary file as items come and upload it once, when the feed is stored;
// one of ours would do the same, with the SDK or client of one's choice:
//
//   class s3_storage : public crawler::feed_storage {
//    public:
//     explicit s3_storage(const crawler::feed_target& target)
//         : uri_(target.uri), file_(temp_path_, std::ios::binary) {}
//     std::ostream& stream() override { return file_; }
//     bool store() override {
//       file_.close();
//       return file_ && upload(temp_path_, uri_);  // e.g. the AWS SDK's PutObject
//     }
//     std::string_view stats_name() const override { return "S3FeedStorage"; }
//    private: ...
//   };
//   CRAWLER_REGISTER_FEED_STORAGE(s3_storage, "s3");
//   // then: FEEDS = {"s3://bucket/%(name)s/%(time)s.jsonl": {"format": "jsonlines"}}
//
// The exporter writes each item to stream() as it is exported, flush()es at the end of each
// page's items with JOBDIR, and calls store() once when the feed (or a batch of it) is complete:
// false there counts feedexport/failed_count/<stats_name> and fails the crawl, as an upload that
// failed should.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace crawler {

/// What a storage is asked to keep.
struct feed_target {
  /// The feed's URI with its %(name)s parameters filled in: "s3://bucket/books.jsonl", or a path.
  std::string uri;
  /// Whether the feed replaces what the URI holds (FEEDS' "overwrite"; always for json and xml)
  /// rather than adding to it.
  bool overwrite = false;
  /// With JOBDIR: flush() marks the end of a page whose items must not be lost.
  bool flushed_per_page = false;
};

class feed_storage {
 public:
  virtual ~feed_storage();
  /// Where the feed's bytes are written.
  virtual std::ostream& stream() = 0;
  /// Whether the feed continues one the storage already held (a CSV then writes no header row).
  virtual bool continues_existing() const { return false; }
  /// The first item is written: the crawl is under way. A storage that kept the previous feed
  /// until now (a file written beside it) puts the new one in its place. False when it could not.
  virtual bool under_way() { return true; }
  /// What was written so far is whole (the end of a page's items): hand it on. False when it
  /// could not be.
  virtual bool flush();
  /// A write failed (a full disk): put back what a half-written item left, as far as possible.
  virtual void after_failed_write() {}
  /// With JOBDIR, the flush()es of this storage counted from 1: JOBDIR recorded as done every
  /// page whose items reached this storage by its `flush`-th flush. Their items must stay.
  virtual void recorded(std::uint64_t flush) { (void)flush; }
  /// With JOBDIR, at the close of a crawl stopped because JOBDIR could not record the pages
  /// flushed after the last recorded() one (a full disk): the resume crawls them again and
  /// exports their items again. A storage that can takes them back out (a file appended to goes
  /// back to its size after that flush); one that cannot keeps them, and they appear twice.
  virtual void take_back_unrecorded() {}
  /// The feed is complete: keep it (close the file, upload it). False when it could not be.
  virtual bool store() = 0;
  /// The storage's name in the stats, as Scrapy's class names: "FileFeedStorage".
  virtual std::string_view stats_name() const = 0;
};

using feed_storage_factory = std::function<std::unique_ptr<feed_storage>(const feed_target&)>;

/// Makes `make` the storage of URIs "scheme://..."; a second registration replaces the first.
bool register_feed_storage(std::string scheme, feed_storage_factory make);
/// Every scheme a storage is registered for ("file" and "stdout" included), sorted.
std::vector<std::string> registered_feed_storages();
/// The scheme of a feed URI: "file" for a path, "stdout" for "stdout:".
std::string feed_uri_scheme(std::string_view uri);
/// The storage for `target.uri`'s scheme. Throws std::invalid_argument naming the registered
/// schemes when none is registered for it, and what the storage throws when it cannot open.
std::unique_ptr<feed_storage> open_feed_storage(const feed_target& target);

}  // namespace crawler

/// Registers `Class` (a crawler::feed_storage constructed from a const feed_target&) as the
/// storage of `scheme` URIs.
#define CRAWLER_REGISTER_FEED_STORAGE(Class, scheme)                                  \
  static const bool crawler_registered_feed_storage_##Class =                         \
      ::crawler::register_feed_storage(scheme, [](const ::crawler::feed_target& target) \
                                                   -> std::unique_ptr<::crawler::feed_storage> { \
        return std::make_unique<Class>(target);                                        \
      })
