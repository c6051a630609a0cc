// Follows every link of one site and yields one item per page: its URL, title and link count.
//
//   crawler crawl site -a start=http://127.0.0.1:8000/ -O pages.jsonl
//   crawler crawl site -a "start=http://127.0.0.2:8000/ http://127.0.0.3:8000/" -O pages.jsonl
//
// Links to other hosts are left alone: the start URLs' hosts become allowed_domains, which the
// offsite middleware enforces.
#include <boost/url/parse.hpp>
#include <sstream>

#include "crawler/parse/href_scanner.h"
#include "crawler/spider.h"

namespace {

std::string host_of(const std::string& url) {
  auto parsed = boost::urls::parse_uri(url);
  return parsed ? std::string(parsed->host()) : std::string();
}

std::string title_of(std::string_view html) {
  auto open = html.find("<title>");
  if (open == std::string_view::npos) return {};
  open += 7;
  auto close = html.find("</title>", open);
  return std::string(html.substr(open, close == std::string_view::npos ? 0 : close - open));
}

class site : public crawler::spider {
 public:
  // Its callback reads only the response, so pages are scanned on the worker threads.
  site() : spider("site") { concurrent_callbacks = true; }

  void start_requests(crawler::output& out) override {
    std::istringstream starts(argument("start"));
    std::string start;
    while (starts >> start) {
      allowed_domains.push_back(host_of(start));
      out.request(crawler::request{start});
    }
    if (allowed_domains.empty()) throw std::invalid_argument("spider site needs -a start=URL");
  }

  void parse(const crawler::response& response, crawler::output& out) override {
    std::size_t links = 0;
    crawler::for_each_href(response.text(), [&](std::string_view href) {
      ++links;
      if (href.starts_with("#") || href.starts_with("mailto:") || href.starts_with("javascript:")) {
        return;
      }
      std::string url;
      try {
        url = response.urljoin(href);
      } catch (const crawler::link_error&) {
        return;
      }
      out.request(crawler::request{std::move(url)});
    });
    out.item({{"url", response.url}, {"title", title_of(response.text())}, {"links", links}});
  }
};

}  // namespace

CRAWLER_REGISTER_SPIDER(site, "Every page of one site: -a start=URL");
