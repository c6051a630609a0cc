// Scrapy's FilesPipeline and ImagesPipeline: the files an item names are downloaded through the
// crawl's own downloader and stored on disk, and the item carries where they went.
//
//   "ITEM_PIPELINES": {"scrapy.pipelines.files.FilesPipeline": 1},
//   "FILES_STORE": "downloads"
//
//   // a callback yields
//   {"title": "Report", "file_urls": ["https://example.org/report.pdf"]}
//   // and the feed gets
//   {"title": "Report", "file_urls": [...], "files": [{"url": "https://example.org/report.pdf",
//     "path": "full/<SHA-1 of the URL>.pdf", "checksum": "<MD5 of the body>",
//     "status": "downloaded"}]}
//
// As in Scrapy:
// - FILES_URLS_FIELD ("file_urls") names the URLs, FILES_RESULT_FIELD ("files") gets one entry per
//   file stored, in the URLs' order; a file that could not be had is logged as a WARNING and left
//   out. The result field is set on every item, [] when it names no file.
// - A file is stored at FILES_STORE/full/<SHA-1 of its URL><extension>, the extension the URL's
//   own when Python's table of common types knows it. A file stored less than FILES_EXPIRES days
//   ago (90) is not downloaded again: its status is "uptodate". Within a crawl a URL is fetched
//   once, however many items name it ("cached" when the HTTP cache answered).
// - Downloads go through the downloader middlewares (retries, the HTTP cache, the user agent) and
//   the downloader's per-site delays and concurrency, past the scheduler and the spider; redirects
//   are not followed unless MEDIA_ALLOW_REDIRECTS, and only a 200 with a body is a file.
// - Stats: file_count and file_status_count/<status>.
// The ImagesPipeline is the same with the IMAGES_* settings ("image_urls" -> "images"); images are
// stored as downloaded, under their URL's extension: no conversion to JPEG and no thumbnails.
//
// The URLs come from crawled pages, which are untrusted: only a scheme the crawl fetches and that
// is not local is fetched (a page naming file:///etc/passwd gets a WARNING, not the file), even on
// a crawl of file:// pages, since the pipeline does not know which page an item came from.
//
// A file is written beside its place and renamed into it, so a killed crawl never leaves half a
// file that the next one would take as up to date; what is found in the store is only trusted as
// a regular file (not a link or a folder).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/log.h"
#include "config/stats.h"
#include "crawler/components.h"
#include "crawler/pipeline.h"
#include "crawler/scheme_policy.h"
#include "request/fingerprint.h"

namespace crawler {

class files_pipeline : public async_item_pipeline {
 public:
  /// `prefix` chooses Scrapy's pipeline: "FILES" (FILES_STORE, FILES_URLS_FIELD, ...) or "IMAGES".
  /// Throws settings_error when <prefix>_STORE is unset or not a local folder.
  files_pipeline(crawl_context& crawl, std::string_view prefix);

  void process_item_async(crawler::item item, spider& spider, item_done done) override;

  /// Where the file at `url` is stored, under the store: "full/<SHA-1 of the URL><extension>".
  static std::string file_path(std::string_view url);

 private:
  // A stored file as the result field shows it ({url, path, checksum, status}), or none when it
  // could not be had.
  using file_result = std::optional<nlohmann::ordered_json>;
  using file_wanted = std::function<void(const file_result&)>;
  struct item_files {
    crawler::item item;
    item_done done;
    std::vector<file_result> results;  // by the index of the URL in the item
    std::size_t waiting = 0;
  };
  struct file_state {
    bool settled = false;
    file_result result;
    std::vector<file_wanted> waiting;
  };

  // Calls `wanted` with the file's result: at once when this crawl already has it, else once it
  // is found up to date in the store or downloaded.
  void want(const std::string& url, file_wanted wanted);
  void finish(item_files& held);
  void fetch(const std::string& url, dedup::fingerprint key);
  void settle(dedup::fingerprint key, file_result result);
  file_result up_to_date(const std::string& url, const std::string& path);
  file_result store(const std::string& url, const std::string& path, const download_result& got);
  void count(std::string_view status);

  crawl_engine& engine_;
  crawler::stats& stats_;
  std::filesystem::path store_;
  std::string urls_field_, result_field_;
  double expires_days_;
  bool allow_redirects_;
  scheme_policy schemes_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unordered_map<dedup::fingerprint, file_state> files_;
};

}  // namespace crawler
