// Scrapy's CSVFeedSpider: a spider whose pages are CSV files, a callback per row.
//
//   class products : public crawler::csv_feed_spider {
//    public:
//     products() : csv_feed_spider("products") {
//       start_urls = {"https://shop.example/feed.csv"};
//       delimiter = ';';                 // as Scrapy's, ',' and '"' by default
//     }
//     void parse_row(const crawler::response&, const crawler::item& row,
//                    crawler::output& out) override {
//       out.item({{"sku", row["id"]}, {"name", row["name"]}});
//     }
//   };
//
// As in Scrapy: the first row names the columns unless `headers` does; each following row comes
// to parse_row as an object of column -> text, in the columns' order; a row with another number
// of fields than there are columns (a blank line too) is skipped with a WARNING,
// "ignoring row N (length: L, should be: H)", N counting source lines.
#pragma once

#include <string>
#include <vector>

#include "crawler/spider.h"

namespace crawler {

class csv_feed_spider : public spider {
 public:
  explicit csv_feed_spider(std::string name);

  char delimiter = ',';
  char quotechar = '"';
  /// The columns' names; empty: the first row's.
  std::vector<std::string> headers;

  /// One row of a page, as column -> text.
  virtual void parse_row(const response& response, const crawler::item& row, output& out) = 0;
  /// What parse_row yielded for a row, to change before it is scheduled (Scrapy's hook).
  virtual void process_results(const response& response, output& results);

  /// Reads the page's rows (parse, for every page the spider's requests leave to it).
  void parse(const response& response, output& out) override;
};

}  // namespace crawler
