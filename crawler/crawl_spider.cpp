#include "crawler/crawl_spider.h"

#include <unordered_set>

namespace crawler {

crawl_spider::crawl_spider(std::string name) : spider(std::move(name)) {
  callback(rule_callback, &crawl_spider::parse_rule_page);
  parses_html = true;  // the link extractors read every page's tree
}

void crawl_spider::parse(const response& response, output& out) {
  parse_start_url(response, out);
  follow_rules(response, out);
}

void crawl_spider::parse_start_url(const response&, output&) {}

std::vector<std::pair<std::size_t, link>> crawl_spider::links_by_rule(
    const response& response) const {
  std::vector<std::pair<std::size_t, link>> taken;
  std::unordered_set<std::string> seen;
  for (std::size_t index = 0; index < rules.size(); ++index) {
    auto links = rules[index].link_extractor.extract_links(response);
    std::erase_if(links, [&seen](const link& link) { return !seen.insert(link.url).second; });
    if (rules[index].process_links) links = rules[index].process_links(std::move(links));
    for (auto& link : links) taken.emplace_back(index, std::move(link));
  }
  return taken;
}

void crawl_spider::follow_rules(const response& response, output& out) {
  for (auto& [index, link] : links_by_rule(response)) {
    const auto& rule = rules[index];
    crawler::request request{std::move(link.url), rule_callback};
    request.meta["rule"] = index;
    request.meta["link_text"] = std::move(link.text);
    request.cb_kwargs = rule.cb_kwargs;
    request.errback = rule.errback;
    if (rule.process_request) {
      auto processed = rule.process_request(std::move(request), response);
      if (!processed) continue;
      request = std::move(*processed);
    }
    out.request(std::move(request));
  }
}

void crawl_spider::parse_rule_page(const response& response, output& out) {
  auto index = response.meta().value("rule", std::size_t{0});
  if (index >= rules.size()) return;
  const auto& rule = rules[index];
  if (!rule.callback.empty()) call(rule.callback, response, out);
  if (rule.follow.value_or(rule.callback.empty())) follow_rules(response, out);
}

}  // namespace crawler
