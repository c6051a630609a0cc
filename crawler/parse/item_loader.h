// Items with declared fields and item loaders, as Scrapy's Item / Field and ItemLoader:
//
//   namespace p = crawler::processors;
//   const crawler::item_type book("Book", {
//       {"title", {.input = p::map_compose({p::remove_tags, p::strip})}},
//       {"price"},
//       {"tags", {.output = p::join(", ")}}});
//
//   void parse_book(const crawler::response& response, crawler::output& out) {
//     crawler::item_loader loader(book, response);
//     loader.default_output = p::take_first();
//     loader.add_css("title", "h1");
//     loader.add_css("price", "p.price_color::text", p::map_compose({p::strip}));
//     loader.add_css("tags", "ul.tags a::text");
//     out.item(loader.load_item());   // {"title": "...", "price": "...", "tags": "a, b"}
//   }
//
// A loader collects a list of values per field: add_value takes values as they are, add_css and
// add_xpath every match's getall() (an element's outer HTML, a ::text or ::attr() string). Each
// addition goes through the extra processors given with it, then the field's input processor,
// before it joins the list; load_item runs each field's output processor over its list. A field's processors are the loader's own for it
// (field_processors), else the item type's, else the loader's defaults (identity both: a field
// comes out as a list, as in Scrapy). A field the type does not declare is an error naming it, as
// Scrapy's KeyError "Book does not support field: ..." is; load_item leaves out a field whose
// output is null, and keeps the fields in the order they were first added.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crawler/parse/processors.h"
#include "crawler/parse/response.h"
#include "crawler/parse/selector.h"
#include "request/item.h"

namespace crawler {

/// A field's processors; an empty one is "not set here".
struct field_processors {
  processors::processor input;
  processors::processor output;
};

/// A kind of item: its name and declared fields (Scrapy's Item subclass and its Field()s).
class item_type {
 public:
  struct field {
    std::string name;
    field_processors processors = {};
  };

  item_type(std::string name, std::vector<field> fields);

  const std::string& name() const { return name_; }
  const std::vector<field>& fields() const { return fields_; }
  /// The field called `name`, or null when the type does not declare it.
  const field* find(std::string_view name) const;
  /// Throws std::invalid_argument ("Book does not support field: pirce") when `name` is not
  /// declared.
  const field& at(std::string_view name) const;
  /// Throws as at() for the first field of `item` the type does not declare.
  void check(const crawler::item& item) const;

 private:
  std::string name_;
  std::vector<field> fields_;
};

/// Scrapy's re= of add_css, add_xpath and add_value: only what the regex takes from each value
/// is added (parsel's re(): each match whole, or its groups).
///   loader.add_css("price", "p.price::text", crawler::re{R"([\d.]+)"});
struct re {
  std::string_view pattern;
};

class item_loader {
 public:
  /// A loader for `type` over `response`'s page (for add_css and add_xpath). Both must outlive it.
  item_loader(const item_type& type, const response& response);
  /// A loader over one element of a page, as ItemLoader(selector=...): add_css and add_xpath
  /// select under it (an XPath starting with "//" still searches the whole page, as in parsel).
  item_loader(const item_type& type, crawler::selector selector);
  /// A loader without a page: add_value only.
  explicit item_loader(const item_type& type);

  /// Scrapy's loader context: what processors may read, given when the loader is made
  /// (ItemLoader(..., currency="EUR")) or set later. A processor here reads it by capturing the
  /// loader: map_compose({[&loader](const p::value& v) { ... loader.context["currency"] ... }}).
  /// A nested loader starts with a copy of its parent's.
  nlohmann::json context = nlohmann::json::object();
  /// Used for a field with no input / output processor of its own or of its type's.
  processors::processor default_input = processors::identity();
  processors::processor default_output = processors::identity();
  /// Processors for `field` in this loader, over the item type's (Scrapy's <field>_in / _out).
  void field_processors(std::string_view field, crawler::field_processors processors);

  /// Adds `values` (one value, or a list of them) to `field`, through `extra` in order and then
  /// the field's input processor.
  item_loader& add_value(std::string_view field, const processors::value& values,
                         std::initializer_list<processors::processor> extra = {});
  /// Adds the text of every match of the CSS selector `query` (getall()).
  item_loader& add_css(std::string_view field, std::string_view query,
                       std::initializer_list<processors::processor> extra = {});
  /// Adds the text of every match of the XPath expression `query`.
  item_loader& add_xpath(std::string_view field, std::string_view query,
                         std::initializer_list<processors::processor> extra = {});
  /// As add_value, add_css and add_xpath, keeping only what `pattern` takes from each value.
  /// Throws std::invalid_argument naming a regex RE2 cannot take.
  item_loader& add_value(std::string_view field, const processors::value& values, re pattern,
                         std::initializer_list<processors::processor> extra = {});
  item_loader& add_css(std::string_view field, std::string_view query, re pattern,
                       std::initializer_list<processors::processor> extra = {});
  item_loader& add_xpath(std::string_view field, std::string_view query, re pattern,
                         std::initializer_list<processors::processor> extra = {});

  /// A loader over the matches of `query` that adds to this loader's item (Scrapy's nested_css
  /// and nested_xpath): its add_css and add_xpath select under those matches (none: they add
  /// nothing), with this loader's processors. This loader must outlive it.
  item_loader nested_css(std::string_view query);
  item_loader nested_xpath(std::string_view query);

  /// As add_value, add_css, add_xpath, with what the field had collected dropped first.
  item_loader& replace_value(std::string_view field, const processors::value& values,
                             std::initializer_list<processors::processor> extra = {});
  item_loader& replace_css(std::string_view field, std::string_view query,
                           std::initializer_list<processors::processor> extra = {});

  /// What `field` has collected so far, before its output processor.
  processors::value get_collected_values(std::string_view field) const;
  /// `field`'s output processor over what it collected.
  processors::value get_output_value(std::string_view field) const;
  /// The item: each field that collected something, through its output processor.
  crawler::item load_item() const;

 private:
  const processors::processor& input_of(const item_type::field& field) const;
  const processors::processor& output_of(const item_type::field& field) const;
  processors::value texts(const selector_list& matches) const;
  // Where add_css and add_xpath select: under the selector, else in the response.
  selector_list select(std::string_view query, bool xpath, std::string_view caller) const;

  // Where values go: this loader's collected_, or its outermost parent's.
  crawler::item& collected();
  const crawler::item& collected() const;
  item_loader nested(selector_list selection);

  const item_type& type_;
  const response* response_ = nullptr;
  std::optional<crawler::selector> selector_;
  std::optional<selector_list> selection_;  // a nested loader's matches
  item_loader* parent_ = nullptr;           // a nested loader's parent
  std::map<std::string, crawler::field_processors, std::less<>> overrides_;
  // Field name -> its values (a JSON array), in the order fields were first added.
  crawler::item collected_ = crawler::item::object();
};

}  // namespace crawler
