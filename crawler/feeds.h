// Feed exports: scraped items written to files, Scrapy's FEEDS and `-o FILE`.
//
//   FEEDS = {"items.jsonl": {"format": "jsonlines"}, "items.csv": {"format": "csv",
//            "overwrite": true}}
//   crawler crawl books -o items.json          # format from the extension, appended
//   crawler crawl books -O items.csv           # overwritten
//
// Formats: jsonlines (.jsonl, .jl), json (.json: one array), csv (.csv: a header row from the
// first item's fields, lists joined with commas). Files are appended to unless "overwrite" is true,
// as Scrapy's file storage; a .json feed is always overwritten, since two arrays in one file would
// not be JSON. At close each feed logs "Stored <format> feed (N items) in: <path>" and counts
// `feedexport/success_count/FileFeedStorage`.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"

namespace crawler {

/// The FEEDS entry `-o FILE` (or `-O FILE` with overwrite) adds: the format named by the file's
/// extension. Throws settings_error naming the file when the extension is not a known format.
nlohmann::json feed_for_file(std::string_view path, bool overwrite);

class feed_exporter {
 public:
  /// Opens every feed in FEEDS. Throws settings_error for an unknown format (naming
  /// FEEDS.<uri>.format) and std::runtime_error for a file that cannot be opened.
  feed_exporter(const settings& settings, stats& stats);
  ~feed_exporter();

  /// False when a feed could not be written (a full disk): the crawl should stop.
  bool export_item(const nlohmann::json& item);
  /// Hands what is buffered to the operating system, so a killed process loses none of it.
  /// False when a feed could not be written.
  bool flush();
  /// Finishes every file; returns false if one could not be written (each is logged).
  bool close();

  class feed;

 private:
  std::vector<std::unique_ptr<feed>> feeds_;
  stats& stats_;
};

}  // namespace crawler
