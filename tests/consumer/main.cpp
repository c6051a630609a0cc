// A user's program against the installed library: a fingerprint, then a spider run from main().
#include <crawler/run_crawl.h>
#include <dedup/fingerprint.h>

#include <iostream>

class quotes_page : public crawler::spider {
 public:
  explicit quotes_page(std::string url) : spider("quotes_page") { start_urls = {std::move(url)}; }
  void parse(const crawler::response& response, crawler::output& out) override {
    auto page = response.json();  // a named value: iterating a temporary's member would dangle
    for (const auto& quote : page["quotes"]) out.item(quote);
  }
};

int main(int argc, char** argv) {
  auto fp = crawler::dedup::request_fingerprint("GET", "http://example.com/");
  if (fp.hex() != "cebe46deeab7ee5915824a38cf73ee6f7eb0aba5") return 1;
  if (argc < 2) return 0;
  quotes_page spider{std::string("file://") + argv[1]};
  auto settings = crawler::settings_for(spider, {"LOG_LEVEL=WARNING"});
  auto result = crawler::run_crawl(spider, settings);
  std::cout << "items: " << result.stats.value("item_scraped_count", 0) << '\n';
  return result.stats.value("item_scraped_count", 0) == 10 ? 0 : 1;
}
