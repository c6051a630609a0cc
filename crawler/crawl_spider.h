// Scrapy's CrawlSpider: a spider driven by rules that say which links to follow and which
// callback parses the pages they lead to.
//
//   class books : public crawler::crawl_spider {
//    public:
//     books() : crawl_spider("books") {
//       start_urls = {"https://books.example/"};
//       rules.push_back({crawler::link_extractor({.allow = {R"(/catalogue/page-\d+\.html)"}})});
//       rules.push_back({crawler::link_extractor({.allow = {R"(/catalogue/[^/]+/index\.html)"}}),
//                        "parse_book"});
//       callback("parse_book", &books::parse_book);
//     }
//     void parse_book(const crawler::response& response, crawler::output& out);
//   };
//
// As in Scrapy: the start pages and every page reached through a rule with `follow` have their
// links run through the rules in order; each link goes to the first rule that extracts it. A rule
// follows by default when it has no callback. Do not override parse(): it drives the rules
// (override parse_start_url to handle the start pages).
//
// A rule's request is the one Scrapy 2.8's CrawlSpider._build_request makes: callback "_callback",
// errback "_errback", meta {"rule": the rule's index, "link_text": the link's text}, and it passes
// the rule's process_request. When its page comes, the rule of that index runs its callback with
// the rule's cb_kwargs under the request's own, and follows its links; a failure goes to the rule's
// errback. So a queue shared with scrapy-redis's RedisCrawlSpider runs on either side, provided
// both declare the same rules in the same order: a request names its rule by index alone. A
// request whose rule index this spider does not have is refused before it is fetched
// (check_request()).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "crawler/parse/link_extractor.h"
#include "crawler/spider.h"

namespace crawler {

struct rule {
  crawler::link_extractor link_extractor;
  /// The callback for the pages this rule's links lead to; empty: none.
  std::string callback;
  /// Whether those pages' links go through the rules too; nullopt: true without a callback.
  std::optional<bool> follow;
  /// Filters or rewrites the links this rule extracted from one page.
  std::function<std::vector<link>(std::vector<link>)> process_links;
  /// What the callback is called with, as response.cb_kwargs() (Scrapy's Rule.cb_kwargs).
  nlohmann::json cb_kwargs = nlohmann::json::object();
  /// Sees each request this rule makes, with the page its link came from, before it is
  /// scheduled: returns it (changed or not), or nullopt to drop it.
  std::function<std::optional<request>(request, const response&)> process_request;
  /// The errback for the requests this rule makes (a download error, an HTTP error status);
  /// empty: none.
  std::string errback;
};

class crawl_spider : public spider {
 public:
  /// The callback and errback every rule-made request names, as in Scrapy; its meta "rule" says
  /// which rule made it.
  static constexpr const char* rule_callback = "_callback";
  static constexpr const char* rule_errback = "_errback";

  explicit crawl_spider(std::string name);

  void parse(const response& response, output& out) final;
  /// What the start pages yield besides the links the rules follow. Yields nothing by default.
  virtual void parse_start_url(const response& response, output& out);

  std::vector<rule> rules;

  /// The links the rules take from `response`, in order, each with the index of the first rule
  /// that extracts it (after that rule's process_links): what the crawl follows from the page.
  std::vector<std::pair<std::size_t, link>> links_by_rule(const response& response) const;

  /// Refuses a rule's request (its callback or errback is the rules') whose meta "rule" is not
  /// the index of one of this spider's rules.
  std::string check_request(const request& request) const override;

 private:
  void follow_rules(const response& response, output& out);
  void parse_rule_page(const response& response, output& out);
  void rule_failed(const failure& failure, output& out);
  /// The rule `meta` names, or null.
  const rule* rule_of(const nlohmann::json& meta) const;
};

}  // namespace crawler
