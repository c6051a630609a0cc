// The dupefilter's classic check, from the articles on Bloom filters for Scrapy: ?wd=0..9, then
// ?wd=0..99, none dont_filter, so the dupefilter must drop exactly 10 of the 110 requests.
//
//   crawler crawl dupes -a base_url=http://127.0.0.1:8080/s?wd= -s DUPEFILTER_CLASS=bloom
#include "config/log.h"
#include "crawler/spider.h"

namespace {

class dupes : public crawler::spider {
 public:
  dupes() : spider("dupes") {}

  void start_requests(crawler::output& out) override {
    auto base_url = argument("base_url", "http://127.0.0.1:8080/s?wd=");
    for (int round : {10, 100}) {
      for (int i = 0; i < round; ++i) out.request(crawler::request{base_url + std::to_string(i)});
    }
  }

  void parse(const crawler::response& response, crawler::output&) override {
    crawler::get_logger(name())->debug("Response of {}", response.url);
  }
};

}  // namespace

CRAWLER_REGISTER_SPIDER(dupes, "The seeds' duplicate-request test: 110 requests, 10 duplicates");
