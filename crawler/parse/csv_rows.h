// CSV as Python's csv module reads it (the "excel" dialect: a delimiter, a quote character,
// doubled quotes inside quotes, newlines inside quoted fields, \r\n, \n or \r ending a row), for
// CSVFeedSpider (crawler/csv_feed_spider.h) and anything else that reads CSV bodies.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace crawler {

struct csv_options {
  char delimiter = ',';
  char quotechar = '"';
};

/// Calls `row(fields, line)` for each row of `text`, in order; `line` is the number of the last
/// source line the row took (Python's csv reader line_num). A blank line is a row of no fields.
void read_csv(std::string_view text, const csv_options& options,
              const std::function<void(std::vector<std::string>& fields, std::size_t line)>& row);

}  // namespace crawler
