// A JSON API crawl, as the Scrapy tutorial's quotes.toscrape.com/api/quotes: each page holds
// quotes and says whether a next page exists; the spider yields one item per quote and follows
// the next page.
//
//   crawler crawl quotes -O quotes.jsonl                       # the pages shipped in spiders/data
//   crawler crawl quotes -a start=https://quotes.toscrape.com/api/quotes?page=1 -o quotes.csv
#include <cctype>

#include "crawler/spider.h"

namespace {

class quotes : public crawler::spider {
 public:
  quotes() : spider("quotes") {
    // Ten pages at most: with DUPEFILTER_CLASS=bloom, a filter sized for them (1.4 Mbit), not
    // for the default 10 million URLs (158 Mbit).
    custom_settings = {{"BLOOMFILTER_CAPACITY", 100000}};
  }

  void start_requests(crawler::output& out) override {
    auto start = argument("start", "file://" CRAWLER_SOURCE_DIR "/spiders/data/quotes/page-1.json");
    out.request(crawler::request{start});
  }

  void parse(const crawler::response& response, crawler::output& out) override {
    auto page = response.json();
    for (const auto& quote : page.value("quotes", nlohmann::json::array())) {
      nlohmann::json tags = quote.value("tags", nlohmann::json::array());
      out.item({{"text", quote.value("text", "")},
                {"author", quote.contains("author") && quote["author"].is_object()
                               ? quote["author"].value("name", "")
                               : quote.value("author", "")},
                {"tags", tags}});
    }
    if (page.value("has_next", false)) out.request(crawler::request{next_page(response.url)});
  }

 private:
  // The page number sits after "page=" (the live API) or "page-" (the shipped files): the first
  // "page" followed by one of them and a digit.
  static std::string next_page(const std::string& url) {
    for (auto at = url.find("page"); at != std::string::npos; at = url.find("page", at + 1)) {
      auto digits = at + 5;
      if (digits >= url.size() || (url[at + 4] != '=' && url[at + 4] != '-') ||
          !std::isdigit(static_cast<unsigned char>(url[digits]))) {
        continue;
      }
      auto end = digits;
      while (end < url.size() && std::isdigit(static_cast<unsigned char>(url[end]))) ++end;
      if (end - digits > 15) break;  // no page number is that long
      auto next = std::stoll(url.substr(digits, end - digits)) + 1;
      return url.substr(0, digits) + std::to_string(next) + url.substr(end);
    }
    throw std::invalid_argument(url + ": no page number to advance");
  }
};

}  // namespace

CRAWLER_REGISTER_SPIDER(quotes, "Quotes from a paged JSON API (offline copy in spiders/data)");
