// Scrapy's XMLFeedSpider: a spider whose pages are XML feeds (RSS, Atom, product feeds), a
// callback per node.
//
//   class products : public crawler::xml_feed_spider {
//    public:
//     products() : xml_feed_spider("products") {
//       start_urls = {"https://shop.example/feed.rss"};
//       itertag = "item";                                        // Scrapy's default
//       namespaces = {{"g", "http://base.google.com/ns/1.0"}};
//     }
//     void parse_node(const crawler::response&, const crawler::selector& node,
//                     crawler::output& out) override {
//       out.item({{"title", node.xpath("title/text()").get("")},
//                 {"price", node.xpath("g:price/text()").get("")}});
//     }
//   };
//
// The iterators, as Scrapy's:
// - "iternodes" (the default): every element whose name, as the page writes it, is `itertag`,
//   whatever its namespace ("url" finds a sitemap's <url> elements; "n:url" finds none there);
// - "xml": the XPath //itertag over the page read as XML, `namespaces` registered (a sitemap's
//   <url> needs itertag "n:url" and the prefix n);
// - "html": the XPath //itertag over the page read as HTML.
// A node is a selector on the page's tree: "title/text()" and "link::text" look under it. Unlike
// Scrapy's iternodes, which cuts each node out into a document of its own, "//title" from a node
// still searches the whole page.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "crawler/spider.h"

namespace crawler {

class xml_feed_spider : public spider {
 public:
  explicit xml_feed_spider(std::string name);

  /// "iternodes", "xml" or "html"; another value fails each page with an error naming it.
  std::string iterator = "iternodes";
  std::string itertag = "item";
  /// (prefix, URI) pairs XPath may use, on the page and in parse_node.
  std::vector<std::pair<std::string, std::string>> namespaces;

  /// One node of a page.
  virtual void parse_node(const response& response, const selector& node, output& out) = 0;
  /// The page as the nodes are read from (Scrapy's hook, e.g. to mend a broken body): as it came.
  virtual response adapt_response(const response& response);
  /// What parse_node yielded for a node, to change before it is scheduled (Scrapy's hook).
  virtual void process_results(const response& response, output& results);

  /// Reads the page's nodes (parse, for every page the spider's requests leave to it).
  void parse(const response& response, output& out) override;
};

}  // namespace crawler
