#include "crawler/crawl_spider.h"

#include <unordered_set>

namespace crawler {

// What earlier releases named a rule's requests: a JOBDIR or a fleet's queue they wrote still
// holds them.
constexpr const char* earlier_rule_callback = "_crawl_spider_rule";

crawl_spider::crawl_spider(std::string name) : spider(std::move(name)) {
  callback(rule_callback, &crawl_spider::parse_rule_page);
  callback(earlier_rule_callback, &crawl_spider::parse_rule_page);
  errback(rule_errback, &crawl_spider::rule_failed);
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
    request.errback = rule_errback;
    request.meta["rule"] = index;
    request.meta["link_text"] = std::move(link.text);
    if (rule.process_request) {
      auto processed = rule.process_request(std::move(request), response);
      if (!processed) continue;
      request = std::move(*processed);
    }
    out.request(std::move(request));
  }
}

const rule* crawl_spider::rule_of(const nlohmann::json& meta) const {
  auto index = meta.find("rule");
  if (index == meta.end() || !index->is_number_integer()) return nullptr;
  auto at = index->get<std::int64_t>();  // a pickled or JSON int is signed
  return at >= 0 && std::uint64_t(at) < rules.size() ? &rules[std::size_t(at)] : nullptr;
}

std::string crawl_spider::check_request(const request& request) const {
  bool rules_request = request.callback == rule_callback ||
                       request.callback == earlier_rule_callback || request.errback == rule_errback;
  if (!rules_request || rule_of(request.meta)) return {};
  auto index = request.meta.find("rule");
  auto problem = index == request.meta.end()
                     ? "the request's meta names no rule of spider " + name()
                     : "spider " + name() + " has no rule " + index->dump();
  return problem + " (it has " + std::to_string(rules.size()) +
         "): both sides of a fleet must declare the same rules in the same order";
}

// Scrapy's CrawlSpider._callback: the rule's callback with the rule's cb_kwargs under the
// request's, then its links when the rule follows.
void crawl_spider::parse_rule_page(const response& response, output& out) {
  const auto* rule = rule_of(response.meta());
  if (!rule) throw std::invalid_argument(check_request(response.request));
  if (!rule->callback.empty()) {
    if (rule->cb_kwargs.empty()) {
      call(rule->callback, response, out);
    } else {
      auto with_kwargs = response;
      auto cb_kwargs = rule->cb_kwargs;
      cb_kwargs.update(response.cb_kwargs());
      with_kwargs.request.cb_kwargs = std::move(cb_kwargs);
      call(rule->callback, with_kwargs, out);
    }
  }
  if (rule->follow.value_or(rule->callback.empty())) follow_rules(response, out);
}

// Scrapy's CrawlSpider._errback: the rule's errback, when it has one.
void crawl_spider::rule_failed(const failure& failure, output& out) {
  const auto* rule = rule_of(failure.request.meta);
  if (!rule) throw std::invalid_argument(check_request(failure.request));
  if (!rule->errback.empty()) call_errback(rule->errback, failure, out);
}

}  // namespace crawler
