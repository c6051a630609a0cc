#include "crawler/csv_feed_spider.h"

#include "config/log.h"
#include "crawler/parse/csv_rows.h"

namespace crawler {

csv_feed_spider::csv_feed_spider(std::string name) : spider(std::move(name)) {}

void csv_feed_spider::process_results(const response&, output&) {}

void csv_feed_spider::parse(const response& response, output& out) {
  auto columns = headers;
  bool named = !columns.empty();
  read_csv(response.text(), {delimiter, quotechar},
           [&](std::vector<std::string>& fields, std::size_t line) {
             if (!named) {
               columns = std::move(fields);
               named = true;
               return;
             }
             if (fields.size() != columns.size()) {
               get_logger("spider")->warn("ignoring row {} (length: {}, should be: {})", line,
                                          fields.size(), columns.size());
               return;
             }
             crawler::item row = crawler::item::object();
             for (std::size_t i = 0; i < fields.size(); ++i) row[columns[i]] = std::move(fields[i]);
             output results;
             parse_row(response, row, results);
             process_results(response, results);
             out.append(std::move(results));
           });
}

}  // namespace crawler
