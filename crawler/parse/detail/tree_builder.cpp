#include "crawler/parse/detail/tree_builder.h"

namespace crawler::detail {

tree_builder::tree_builder(html_document& document) : document_(document) {
  document.nodes_.push_back({html_node::kind::document});
  root_ = &document.nodes_.back();
}

html_node* tree_builder::append(html_node* parent, html_node node) {
  node.parent = parent;
  node.previous_sibling = parent->last_child;
  auto& added = document_.nodes_.emplace_back(node);
  if (auto* last = const_cast<html_node*>(parent->last_child)) {
    last->next_sibling = &added;
  } else {
    parent->first_child = &added;
  }
  parent->last_child = &added;
  return &added;
}

html_node* tree_builder::add_element(html_node* parent, std::string_view name) {
  auto* element = append(parent, {html_node::kind::element, name});
  first_attribute_.emplace_back(element, document_.attributes_.size());
  return element;
}

void tree_builder::add_attribute(std::string_view name, std::string_view value) {
  document_.attributes_.push_back({name, value});
}

html_node* tree_builder::add_leaf(html_node* parent, html_node::kind type, std::string_view text) {
  html_node leaf{type};
  leaf.text = text;
  return append(parent, leaf);
}

std::string_view tree_builder::own(std::string text) {
  return document_.strings_.emplace_back(std::move(text));
}

void tree_builder::keep(std::shared_ptr<const void> output) {
  document_.parser_output_ = std::move(output);
}

void tree_builder::set_xml_document(void* xml_document) {
  document_.xml_document_ = xml_document;
}

void tree_builder::restart() {
  document_.nodes_.resize(1);  // the root keeps its address: a deque shrinks at its end
  root_->first_child = root_->last_child = nullptr;
  document_.attributes_.clear();
  document_.strings_.clear();
  document_.parser_output_.reset();
  first_attribute_.clear();
}

void tree_builder::finish() {
  const auto* attributes = document_.attributes_.data();
  for (std::size_t i = 0; i < first_attribute_.size(); ++i) {
    auto [element, first] = first_attribute_[i];
    auto end = i + 1 < first_attribute_.size() ? first_attribute_[i + 1].second
                                               : document_.attributes_.size();
    element->attributes = {attributes + first, end - first};
  }
}

}  // namespace crawler::detail
