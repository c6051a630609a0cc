#include "config/prometheus_text.h"

#include <gtest/gtest.h>

TEST(prometheus_text, stats_become_counters_and_gauges_with_a_family_per_count_kind) {
  nlohmann::json stats = {{"response_received_count", 12},
                          {"downloader/response_status_count/200", 10},
                          {"downloader/response_status_count/404", 2},
                          {"log_count/ERROR", 1},
                          {"memusage/max", 18870272},
                          {"request_depth_max", 3},
                          {"elapsed_time_seconds", 1.5},
                          {"finish_reason", "finished"},
                          {"retry/reason_count/twisted.internet.error.TimeoutError", 4}};
  auto text = crawler::prometheus_text(stats, "books", {{"queued_requests", "Queued", 7}});
  EXPECT_EQ(text,
            "# HELP crawler_downloader_response_status_count_total Scrapy stat "
            "downloader/response_status_count/<response_status>\n"
            "# TYPE crawler_downloader_response_status_count_total counter\n"
            "crawler_downloader_response_status_count_total{spider=\"books\","
            "response_status=\"200\"} 10\n"
            "crawler_downloader_response_status_count_total{spider=\"books\","
            "response_status=\"404\"} 2\n"
            "# HELP crawler_elapsed_time_seconds Scrapy stat elapsed_time_seconds\n"
            "# TYPE crawler_elapsed_time_seconds gauge\n"
            "crawler_elapsed_time_seconds{spider=\"books\"} 1.5\n"
            "# HELP crawler_log_count_total Scrapy stat log_count/<log>\n"
            "# TYPE crawler_log_count_total counter\n"
            "crawler_log_count_total{spider=\"books\",log=\"ERROR\"} 1\n"
            "# HELP crawler_memusage_max Scrapy stat memusage/max\n"
            "# TYPE crawler_memusage_max gauge\n"
            "crawler_memusage_max{spider=\"books\"} 18870272\n"
            "# HELP crawler_queued_requests Queued\n"
            "# TYPE crawler_queued_requests gauge\n"
            "crawler_queued_requests{spider=\"books\"} 7\n"
            "# HELP crawler_request_depth_max Scrapy stat request_depth_max\n"
            "# TYPE crawler_request_depth_max gauge\n"
            "crawler_request_depth_max{spider=\"books\"} 3\n"
            "# HELP crawler_response_received_count_total Scrapy stat response_received_count\n"
            "# TYPE crawler_response_received_count_total counter\n"
            "crawler_response_received_count_total{spider=\"books\"} 12\n"
            "# HELP crawler_retry_reason_count_total Scrapy stat retry/reason_count/<reason>\n"
            "# TYPE crawler_retry_reason_count_total counter\n"
            "crawler_retry_reason_count_total{spider=\"books\","
            "reason=\"twisted.internet.error.TimeoutError\"} 4\n");
}

TEST(prometheus_text, label_values_from_a_stat_name_are_escaped) {
  auto text = crawler::prometheus_text({{"x/kind_count/a\"b\\c\nd", 1}}, "s\"p");
  EXPECT_NE(text.find("crawler_x_kind_count_total{spider=\"s\\\"p\",kind=\"a\\\"b\\\\c\\nd\"} 1\n"),
            std::string::npos)
      << text;
}

// A count kind that is all suffix ("_count") names no label: the stat stays one metric, as a
// name with no count kind does, and never becomes a label with an empty name (which Prometheus
// refuses). One letter before the suffix is a kind.
TEST(prometheus_text, a_count_kind_that_is_all_suffix_is_no_label) {
  auto text = crawler::prometheus_text({{"x/_count/7", 1}, {"y/a_count/8", 2}}, "s");
  EXPECT_NE(text.find("crawler_x_count_7_total{spider=\"s\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("crawler_y_a_count_total{spider=\"s\",a=\"8\"} 2\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find(",=\""), std::string::npos) << text;
}
