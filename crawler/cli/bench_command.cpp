// `crawler bench`: Scrapy's `scrapy bench`. A generated site is served from a thread of this
// process and crawled, every link followed, for CLOSESPIDER_TIMEOUT (10) seconds with the default
// settings; the log shows pages/min each second and the last line sums it up. What a machine
// does with no setup, and a number to compare machines and versions by.
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "crawler/cli/detail/bench_site.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/parse/link_extractor.h"
#include "crawler/run_crawl.h"

namespace crawler::cli {
namespace {

// Scrapy's bench spider: every link of every page, through the default link extractor.
class follow_all_spider : public spider {
 public:
  explicit follow_all_spider(std::string start) : spider("follow") {
    start_urls.push_back(std::move(start));
    parses_html = true;
  }

  void parse(const response& response, output& out) override {
    for (auto& link : links_.extract_links(response)) out.request(request{std::move(link.url)});
  }

 private:
  link_extractor links_;
};

struct bench_options {
  std::vector<std::string> overrides;
};

int run_bench(const bench_options& options) {
  bench_site site;
  follow_all_spider spider(site.start_url());
  std::vector<std::string> overrides{"LOG_LEVEL=INFO", "LOGSTATS_INTERVAL=1",
                                     "CLOSESPIDER_TIMEOUT=10"};
  overrides.insert(overrides.end(), options.overrides.begin(), options.overrides.end());
  auto settings = settings_for(spider, overrides);
  crawl_options pages_only;  // bench counts pages; its spider yields no item
  pages_only.expects_items = false;
  auto result = run_crawl(spider, settings, std::move(pages_only));
  auto pages = result.stats.value("response_received_count", std::int64_t{0});
  auto seconds = result.stats.value("elapsed_time_seconds", 0.0);
  double per_second = seconds > 0 ? double(pages) / seconds : 0;
  std::cout << "crawler bench: " << pages << " pages in " << std::fixed << std::setprecision(1)
            << seconds << " s: " << std::setprecision(0) << per_second * 60 << " pages/min ("
            << per_second << " pages/s)\n";
  return pages > 0 ? 0 : 1;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<bench_options>();
  CLI::App* command = app.add_subcommand(
      "bench", "Crawl a generated site on loopback for 10 seconds and print pages/min");
  command->add_option("-s,--set", options->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([options, &exit_status] {
    exit_status = run_command("bench", [&] { return run_bench(*options); });
  });
}

}  // namespace crawler::cli
