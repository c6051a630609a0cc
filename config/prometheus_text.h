// A crawl's stats in Prometheus' text exposition format (version 0.0.4), for METRICS_PORT and
// `crawler status NAME --metrics`:
//
//   # HELP crawler_response_received_count_total Scrapy stat response_received_count
//   # TYPE crawler_response_received_count_total counter
//   crawler_response_received_count_total{spider="books"} 1204
//   # HELP crawler_downloader_response_status_count_total Scrapy stat
//   #   downloader/response_status_count/<response_status>
//   crawler_downloader_response_status_count_total{spider="books",response_status="200"} 1198
//
// A stat's name becomes a snake_case metric name under `crawler_` ('/' and other characters
// become '_'); a stat under a "..._count/" family (status codes, exception types, log levels)
// becomes one metric with the last part as a label. Counts are counters (`_total`); the stats
// that can go down or are maxima (memusage/*, *_max, elapsed_time_seconds) and the gauges given
// are gauges. Stats that are not numbers (start_time, finish_reason) are left out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crawler {

/// A value read at the time of the scrape, beside the stats: requests queued, in flight.
struct prometheus_gauge {
  std::string name;  // without the crawler_ prefix: "queued_requests"
  std::string help;
  double value = 0;
};

/// `stats` (a flat object, as stats::to_json() gives) and `gauges`, labelled spider="`spider`".
std::string prometheus_text(const nlohmann::json& stats, const std::string& spider,
                            const std::vector<prometheus_gauge>& gauges = {});

}  // namespace crawler
