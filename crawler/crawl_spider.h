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
// follows by default when it has no callback. A rule's requests carry its cb_kwargs and errback,
// and pass its process_request, as Scrapy's Rule's do. Do not override parse(): it drives the rules
// (override parse_start_url to handle the start pages).
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
  /// The callback every rule-made request names; its meta "rule" says which rule made it.
  static constexpr const char* rule_callback = "_crawl_spider_rule";

  explicit crawl_spider(std::string name);

  void parse(const response& response, output& out) final;
  /// What the start pages yield besides the links the rules follow. Yields nothing by default.
  virtual void parse_start_url(const response& response, output& out);

  std::vector<rule> rules;

  /// The links the rules take from `response`, in order, each with the index of the first rule
  /// that extracts it (after that rule's process_links): what the crawl follows from the page.
  std::vector<std::pair<std::size_t, link>> links_by_rule(const response& response) const;

 private:
  void follow_rules(const response& response, output& out);
  void parse_rule_page(const response& response, output& out);
};

}  // namespace crawler
