#include "crawler/parse/csv_rows.h"

namespace crawler {

void read_csv(std::string_view text, const csv_options& options,
              const std::function<void(std::vector<std::string>& fields, std::size_t line)>& row) {
  // The states of CPython's Modules/_csv.c that the excel dialect reaches (strict off).
  enum class state { start_record, start_field, in_field, in_quoted, quote_in_quoted };
  std::vector<std::string> fields;
  std::string field;
  std::size_t line = 0;
  auto state = state::start_record;
  auto end_field = [&] {
    fields.push_back(std::move(field));
    field.clear();
  };
  auto end_record = [&] {
    ++line;
    row(fields, line);
    fields.clear();
    state = state::start_record;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool newline = c == '\n' || c == '\r';
    // "\r\n" ends a row once, as one line.
    auto end_of_line = [&] {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    };
    auto end_row = [&] {
      end_field();
      end_of_line();
      end_record();
    };
    switch (state) {
      case state::start_record:
        if (newline) {  // a blank line: a row of no fields
          end_of_line();
          end_record();
          continue;
        }
        state = state::start_field;
        [[fallthrough]];
      case state::start_field:
        if (c == options.quotechar) {
          state = state::in_quoted;
        } else if (c == options.delimiter) {
          end_field();
        } else if (newline) {
          end_row();
        } else {
          field += c;
          state = state::in_field;
        }
        break;
      case state::in_field:
        if (c == options.delimiter) {
          end_field();
          state = state::start_field;
        } else if (newline) {
          end_row();
        } else {
          field += c;
        }
        break;
      case state::in_quoted:
        if (c == options.quotechar) {
          state = state::quote_in_quoted;
        } else {
          if (c == '\n' || (c == '\r' && !(i + 1 < text.size() && text[i + 1] == '\n'))) ++line;
          field += c;
        }
        break;
      case state::quote_in_quoted:
        if (c == options.quotechar) {  // a doubled quote: one quote in the field
          field += c;
          state = state::in_quoted;
        } else if (c == options.delimiter) {
          end_field();
          state = state::start_field;
        } else if (newline) {
          end_row();
        } else {  // "a"b: the rest of the field goes on unquoted
          field += c;
          state = state::in_field;
        }
        break;
    }
  }
  // The last row, when the text does not end with a newline.
  if (state != state::start_record) {
    end_field();
    end_record();
  }
}

}  // namespace crawler
