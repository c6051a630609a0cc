#include "crawler/xml_feed_spider.h"

#include <stdexcept>

namespace crawler {

xml_feed_spider::xml_feed_spider(std::string name) : spider(std::move(name)) {}

response xml_feed_spider::adapt_response(const response& response) {
  return response;
}

void xml_feed_spider::process_results(const response&, output&) {}

void xml_feed_spider::parse(const response& page, output& out) {
  auto adapted = adapt_response(page);
  std::shared_ptr<const html_document> document;
  std::string query;
  if (iterator == "iternodes") {
    document = html_document::parse_xml(adapted.body, adapted.header("Content-Type"),
                                        adapted.parse_limits);
    // By the name as written, as Scrapy's xmliter finds "<itertag" in the text. An itertag
    // holding a quote cannot name an element: no node, rather than an XPath error.
    if (itertag.find_first_of("'\"") == std::string::npos) query = "//*[name()='" + itertag + "']";
  } else if (iterator == "xml") {
    document = html_document::parse_xml(adapted.body, adapted.header("Content-Type"),
                                        adapted.parse_limits);
    query = "//" + itertag;
  } else if (iterator == "html") {
    document = html_document::parse(adapted.body, adapted.header("Content-Type"),
                                    adapted.parse_limits, adapted.parser);
    query = "//" + itertag;
  } else {
    throw std::invalid_argument("spider " + name() + ": unsupported XMLFeedSpider iterator \"" +
                                iterator + "\" (iternodes, xml or html)");
  }
  for (const auto& [prefix, uri] : namespaces) document->register_namespace(prefix, uri);
  if (query.empty()) return;
  for (const auto& node : select_xpath(document, query)) {
    if (!node.is_element()) continue;
    output results;
    parse_node(adapted, node, results);
    process_results(adapted, results);
    out.append(std::move(results));
  }
}

}  // namespace crawler
