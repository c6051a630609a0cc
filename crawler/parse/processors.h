// Processors: how an item loader (item_loader.h) cleans the values it collects for a field, as
// Scrapy's itemloaders.processors. A processor takes the field's values as a JSON array and
// returns what it makes of them:
//
//   using namespace crawler::processors;
//   auto input = map_compose({remove_tags, strip});  // each value through each function
//   auto output = take_first();                       // the first value neither null nor ""
//   output(input({" <b>12</b> ", "13"}))              // -> "12"
//
// map_compose's functions take one value and return its replacement: null drops the value, an
// array stands for several values (flattened). The value functions below leave what is not a
// string as it is.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "request/item.h"

namespace crawler::processors {

using value = crawler::item;  // a JSON value, objects keeping their key order
/// A processor: a field's values (a JSON array) in, the result out.
using processor = std::function<value(const value& values)>;
/// A function map_compose applies to each value.
using value_function = std::function<value(const value&)>;

/// The values as they are (Scrapy's Identity): a list.
processor identity();
/// The first value that is neither null nor "" (TakeFirst); null when there is none.
processor take_first();
/// The values joined with `separator` (Join; default " "), each as its text.
processor join(std::string separator = " ");
/// Each value through each function in turn, flattened, nulls dropped (MapCompose).
processor map_compose(std::vector<value_function> functions);
/// The whole list through each function in turn (Compose); a null result stops the chain there.
processor compose(std::vector<processor> functions);

/// Python's str.strip(): leading and trailing whitespace removed.
value strip(const value& text);
/// w3lib.html.remove_tags: the markup of the text's tags removed, their content kept.
value remove_tags(const value& text);
/// w3lib.html.replace_escape_chars: "\n", "\t" and "\r" removed.
value replace_escape_chars(const value& text);

/// The value function called `name` in a crawl file ("strip", "remove_tags",
/// "replace_escape_chars"), or nullopt.
std::optional<value_function> value_function_named(std::string_view name);
/// The names value_function_named knows, for error messages.
std::vector<std::string_view> value_function_names();

}  // namespace crawler::processors
