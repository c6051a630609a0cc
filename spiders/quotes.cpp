// A JSON API crawl, as the Scrapy tutorial's quotes.toscrape.com/api/quotes: each page holds
// quotes and says whether a next page exists; the spider yields one item per quote and follows
// the next page.
//
//   crawler crawl quotes -O quotes.jsonl                       # the pages shipped in spiders/data
//   crawler crawl quotes -a start=https://quotes.toscrape.com/api/quotes?page=1 -o quotes.csv
#include <regex>

#include "crawler/spider.h"

namespace {

class quotes : public crawler::spider {
 public:
  quotes() : spider("quotes") {}

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
  // The page number sits after "page=" (the live API) or "page-" (the shipped files).
  static std::string next_page(const std::string& url) {
    static const std::regex number(R"(page([=-])(\d+))");
    std::smatch match;
    if (!std::regex_search(url, match, number)) {
      throw std::invalid_argument(url + ": no page number to advance");
    }
    auto next = std::stoll(match[2].str()) + 1;
    return match.prefix().str() + "page" + match[1].str() + std::to_string(next) +
           match.suffix().str();
  }
};

}  // namespace

CRAWLER_REGISTER_SPIDER(quotes, "Quotes from a paged JSON API (offline copy in spiders/data)");
