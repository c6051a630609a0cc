#include "crawler/parse/item_loader.h"

#include <stdexcept>

#include "crawler/parse/regex.h"

namespace crawler {

namespace {

// itemloaders' arg_to_iter: a list as it is, null as none, any other value as a list of one.
processors::value as_list(const processors::value& values) {
  return processors::identity()(values);
}

}  // namespace

item_type::item_type(std::string name, std::vector<field> fields)
    : name_(std::move(name)), fields_(std::move(fields)) {}

const item_type::field* item_type::find(std::string_view name) const {
  for (const auto& field : fields_) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

const item_type::field& item_type::at(std::string_view name) const {
  if (const auto* field = find(name)) return *field;
  throw std::invalid_argument(name_ + " does not support field: " + std::string(name));
}

void item_type::check(const crawler::item& item) const {
  for (const auto& [name, value] : item.items()) at(name);
}

item_loader::item_loader(const item_type& type, const response& response)
    : type_(type), response_(&response) {}

item_loader::item_loader(const item_type& type, crawler::selector selector)
    : type_(type), selector_(std::move(selector)) {}

item_loader::item_loader(const item_type& type) : type_(type) {}

void item_loader::field_processors(std::string_view field, crawler::field_processors processors) {
  type_.at(field);
  overrides_.insert_or_assign(std::string(field), std::move(processors));
}

const processors::processor& item_loader::input_of(const item_type::field& field) const {
  if (auto found = overrides_.find(field.name); found != overrides_.end() && found->second.input) {
    return found->second.input;
  }
  return field.processors.input ? field.processors.input : default_input;
}

const processors::processor& item_loader::output_of(const item_type::field& field) const {
  if (auto found = overrides_.find(field.name); found != overrides_.end() && found->second.output) {
    return found->second.output;
  }
  return field.processors.output ? field.processors.output : default_output;
}

item_loader& item_loader::add_value(std::string_view name, const processors::value& values,
                                    std::initializer_list<processors::processor> extra) {
  const auto& field = type_.at(name);
  processors::value value = values;
  for (const auto& processor : extra) value = processor(value);
  // As itemloaders: nothing left after the processors adds nothing, not even an empty list.
  auto processed = as_list(input_of(field)(as_list(value)));
  if (processed.empty()) return *this;
  auto& list = collected()[field.name];
  for (auto& each : processed) list.push_back(std::move(each));
  return *this;
}

processors::value item_loader::texts(const selector_list& matches) const {
  processors::value values = processors::value::array();
  for (auto& text : matches.getall()) values.push_back(std::move(text));
  return values;
}

crawler::item& item_loader::collected() {
  return parent_ ? parent_->collected() : collected_;
}

const crawler::item& item_loader::collected() const {
  return parent_ ? parent_->collected() : collected_;
}

selector_list item_loader::select(std::string_view query, bool xpath,
                                  std::string_view caller) const {
  if (selection_) return xpath ? selection_->xpath(query) : selection_->css(query);
  if (selector_) return xpath ? selector_->xpath(query) : selector_->css(query);
  if (response_) return xpath ? response_->xpath(query) : response_->css(query);
  throw std::logic_error("item_loader::" + std::string(caller) +
                         ": the loader has neither a response nor a selector");
}

item_loader& item_loader::add_css(std::string_view field, std::string_view query,
                                  std::initializer_list<processors::processor> extra) {
  return add_value(field, texts(select(query, false, "add_css")), extra);
}

item_loader& item_loader::add_xpath(std::string_view field, std::string_view query,
                                    std::initializer_list<processors::processor> extra) {
  return add_value(field, texts(select(query, true, "add_xpath")), extra);
}

item_loader& item_loader::add_value(std::string_view field, const processors::value& values,
                                    re pattern,
                                    std::initializer_list<processors::processor> extra) {
  auto compiled = compile_regex(pattern.pattern);
  std::vector<std::string> taken;
  for (const auto& value : as_list(values)) {
    if (value.is_string())
      append_regex_matches(*compiled, value.get_ref<const std::string&>(), taken);
  }
  processors::value matches = processors::value::array();
  for (auto& text : taken) matches.push_back(std::move(text));
  return add_value(field, matches, extra);
}

item_loader& item_loader::add_css(std::string_view field, std::string_view query, re pattern,
                                  std::initializer_list<processors::processor> extra) {
  return add_value(field, texts(select(query, false, "add_css")), pattern, extra);
}

item_loader& item_loader::add_xpath(std::string_view field, std::string_view query, re pattern,
                                    std::initializer_list<processors::processor> extra) {
  return add_value(field, texts(select(query, true, "add_xpath")), pattern, extra);
}

item_loader item_loader::nested(selector_list selection) {
  item_loader inner(type_);
  inner.selection_ = std::move(selection);
  inner.parent_ = this;
  inner.context = context;
  inner.default_input = default_input;
  inner.default_output = default_output;
  inner.overrides_ = overrides_;
  return inner;
}

item_loader item_loader::nested_css(std::string_view query) {
  return nested(select(query, false, "nested_css"));
}

item_loader item_loader::nested_xpath(std::string_view query) {
  return nested(select(query, true, "nested_xpath"));
}

item_loader& item_loader::replace_value(std::string_view field, const processors::value& values,
                                        std::initializer_list<processors::processor> extra) {
  collected().erase(std::string(field));
  return add_value(field, values, extra);
}

item_loader& item_loader::replace_css(std::string_view field, std::string_view query,
                                      std::initializer_list<processors::processor> extra) {
  return replace_value(field, texts(select(query, false, "replace_css")), extra);
}

processors::value item_loader::get_collected_values(std::string_view field) const {
  type_.at(field);
  const auto& all = collected();
  auto found = all.find(std::string(field));
  return found == all.end() ? processors::value::array() : *found;
}

processors::value item_loader::get_output_value(std::string_view field) const {
  return output_of(type_.at(field))(get_collected_values(field));
}

crawler::item item_loader::load_item() const {
  crawler::item item = crawler::item::object();
  const auto& all = collected();
  for (const auto& [name, values] : all.items()) {
    auto value = output_of(type_.at(name))(values);
    if (!value.is_null()) item[name] = std::move(value);
  }
  return item;
}

}  // namespace crawler
