// Feed exports: scraped items written to files, Scrapy's FEEDS and `-o FILE`.
//
//   FEEDS = {"items.jsonl": {"format": "jsonlines"}, "items.csv": {"format": "csv",
//            "overwrite": true}}
//   crawler crawl books -o items.json          # format from the extension, appended
//   crawler crawl books -O items.csv           # overwritten
//   crawler crawl books -o items.data:jsonl    # the format named after the colon, as Scrapy's
//   crawler crawl books -o - | jq .title       # standard output (jsonlines; -o -:csv for CSV)
//
// Where a feed goes follows from its URI's scheme (feed_storage.h): a local file for a path or
// file://, standard output for stdout:, and any storage registered in C++ for another scheme.
//
// Formats: jsonlines (.jsonl, .jl), json (.json: one array), csv (.csv: a header row from the
// first item's fields, lists joined with commas), xml (.xml: Scrapy's XmlItemExporter, byte for
// byte). Files are appended to unless "overwrite" is true, as Scrapy's file storage; a .json or
// .xml feed is always overwritten, since two arrays (or documents) in one file would not parse. At close each feed logs "Stored <format> feed (N items) in: <path>" and counts
// `feedexport/success_count/FileFeedStorage`.
//
// As in Scrapy, a feed's options "fields", "encoding" and "indent" default to FEED_EXPORT_FIELDS
// (the fields written, in order; a CSV's columns), FEED_EXPORT_ENCODING (unset: JSON escapes
// non-ASCII text as \uXXXX; "utf-8" writes it as is) and FEED_EXPORT_INDENT (.json only), and a
// feed URI may name `%(name)s` (the spider), `%(time)s` (the UTC start, 2026-11-24T06-10-00) and
// any spider argument: `-o 'out/%(name)s-%(time)s.jsonl'`.
//
// Batches, as Scrapy's: with FEED_EXPORT_BATCH_ITEM_COUNT (or a feed's "batch_item_count") N > 0,
// a feed starts a new file after every N items, named by its URI's %(batch_id)d (from 1; a width
// pads it, %(batch_id)03d) or %(batch_time)s (when the batch began, to the microsecond); a
// batched URI that names neither is refused. The next file opens with its first item, so a crawl
// leaves no empty last batch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "request/item.h"

namespace crawler {

/// The FEEDS entry `-o FILE` (or `-O FILE` with overwrite) adds, as its URI and options: the format
/// named after the last colon when that is a format (`-o out.data:jsonl`, Scrapy's form), else by
/// the file's extension. `-` is standard output (Scrapy's "stdout:" URI), jsonlines unless a
/// format follows (`-o -:json`). Throws settings_error naming the argument when neither names a
/// format this crawler writes.
std::pair<std::string, nlohmann::json> feed_for_file(std::string_view argument, bool overwrite);

class spider;

class feed_exporter {
 public:
  /// The values a feed URI's `%(key)s` may name: the spider's name, the time and its arguments.
  using uri_parameters = std::map<std::string, std::string, std::less<>>;

  /// Opens every feed in FEEDS. Throws settings_error for a bad option (an unknown format, an
  /// encoding other than utf-8, a parameter the URI names that does not exist), naming
  /// FEEDS.<uri>.<option> or the FEED_EXPORT_* setting, and std::runtime_error for a file that
  /// cannot be opened.
  feed_exporter(const settings& settings, stats& stats, const uri_parameters& parameters);
  ~feed_exporter();

  /// False when a feed could not be written (a full disk): the crawl should stop.
  bool export_item(const crawler::item& item);
  /// Hands what is buffered to the operating system, so a killed process loses none of it.
  /// False when a feed could not be written.
  bool flush();
  /// How many times flush() was called: the number of the last one.
  std::uint64_t flushes() const { return flushes_; }
  /// With JOBDIR: the pages whose items the `flush`-th flush() (and those before) handed on are
  /// recorded as done. Their items stay whatever happens after.
  void recorded(std::uint64_t flush);
  /// With JOBDIR, before close() when JOBDIR could not record some pages as done: their items
  /// go back out of the feeds that can take them back (feed_storage::take_back_unrecorded),
  /// since the resume exports them again.
  void take_back_unrecorded();
  /// Finishes every file; returns false if one could not be written (each is logged).
  bool close();

  /// What the constructor would refuse in FEEDS' options, a line a feed, without opening any
  /// file (`crawler check`).
  static std::vector<std::string> problems(const settings& settings,
                                           const uri_parameters& parameters);
  /// A crawl's feed URI parameters: `name`, `time` (now, in UTC) and the spider's arguments.
  static uri_parameters parameters_for(const spider& spider);

  class feed;

 private:
  // One FEEDS entry: the file it writes now, and with FEED_EXPORT_BATCH_ITEM_COUNT, the batch.
  struct batched;
  static uri_parameters batch_parameters(uri_parameters parameters, std::size_t batch_id);

  std::vector<std::unique_ptr<batched>> batches_;
  stats& stats_;
  std::uint64_t flushes_ = 0;
};

}  // namespace crawler
