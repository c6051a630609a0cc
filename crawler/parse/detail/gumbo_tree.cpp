// HTML_PARSER=gumbo: Google's HTML5 parser, the tree a browser builds.
#include <gumbo.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "config/ascii.h"
#include "crawler/parse/detail/arena.h"
#include "crawler/parse/detail/tree_builder.h"

namespace crawler::detail {
namespace {

// Gumbo allocates and frees one node, string or vector at a time: a tenth of its time went to
// malloc and free, and as much again to freeing the tree node by node. Its allocations for one
// document come from an arena instead, freed with the document; what Gumbo frees while parsing
// (grown buffers, token scratch) stays until then.
void* gumbo_allocate(void* arena, std::size_t size) {
  return static_cast<detail::arena*>(arena)->allocate(size);
}
void gumbo_free(void*, void*) {}

// Gumbo's names are lower-case except SVG's adjusted ones (viewBox, foreignObject): selectors
// compare lower-case names, as Gumbo's own lookups ignored case.
std::string_view lower_case(std::string_view name, tree_builder& builder) {
  if (std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return name;
  }
  return builder.own(ascii_lower(name));
}

std::string_view element_name(const GumboNode* element, tree_builder& builder) {
  auto tag = element->v.element.tag;
  if (tag != GUMBO_TAG_UNKNOWN) return gumbo_normalized_tagname(tag);
  GumboStringPiece original = element->v.element.original_tag;
  gumbo_tag_from_original_text(&original);
  return builder.own(ascii_lower(std::string_view(original.data, original.length)));
}

const GumboVector* children_of(const GumboNode* node) {
  if (node->type == GUMBO_NODE_DOCUMENT) return &node->v.document.children;
  if (node->type == GUMBO_NODE_ELEMENT || node->type == GUMBO_NODE_TEMPLATE) {
    return &node->v.element.children;
  }
  return nullptr;
}

}  // namespace

void build_with_gumbo(const std::string& utf8, tree_builder& builder) {
  // Most pages are well-formed, and Gumbo spends most of its time on what they do not need.
  if (build_well_formed_html(utf8, builder)) return;
  builder.restart();
  build_with_gumbo_only(utf8, builder);
}

void build_with_gumbo_only(const std::string& utf8, tree_builder& builder) {
  // About eight bytes of tree per byte of markup on catalogue pages.
  auto arena = std::make_shared<detail::arena>(utf8.size() * 8);
  // Parse errors are not reported to users, and recording them is most of Gumbo's time on
  // real pages: stop collecting after none.
  GumboOptions options = kGumboDefaultOptions;
  options.max_errors = 0;
  options.allocator = &gumbo_allocate;
  options.deallocator = &gumbo_free;
  options.userdata = arena.get();
  GumboOutput* output = gumbo_parse_with_options(&options, utf8.data(), utf8.size());
  // Text and names stay in the arena, which lives as long as the document; the arena frees the
  // whole tree at once, so gumbo_destroy_output would only walk it to free nothing.
  builder.keep(arena);

  // Document order, with an explicit stack: a hostile page can nest as deep as it likes.
  std::vector<std::pair<const GumboNode*, html_node*>> stack;  // (node, its parent)
  auto push_children = [&stack](const GumboNode* node, html_node* parent) {
    const auto* children = children_of(node);
    for (unsigned i = children->length; i-- > 0;) {
      stack.emplace_back(static_cast<const GumboNode*>(children->data[i]), parent);
    }
  };
  push_children(output->document, builder.root());
  while (!stack.empty()) {
    auto [node, parent] = stack.back();
    stack.pop_back();
    switch (node->type) {
      case GUMBO_NODE_ELEMENT:
      case GUMBO_NODE_TEMPLATE: {
        auto* element = builder.add_element(parent, element_name(node, builder));
        const auto& attributes = node->v.element.attributes;
        for (unsigned i = 0; i < attributes.length; ++i) {
          const auto* attribute = static_cast<const GumboAttribute*>(attributes.data[i]);
          builder.add_attribute(lower_case(attribute->name, builder), attribute->value);
        }
        push_children(node, element);
        break;
      }
      case GUMBO_NODE_TEXT:
      case GUMBO_NODE_WHITESPACE:
        builder.add_leaf(parent, html_node::kind::text, node->v.text.text);
        break;
      case GUMBO_NODE_CDATA:
        builder.add_leaf(parent, html_node::kind::cdata, node->v.text.text);
        break;
      case GUMBO_NODE_COMMENT:
        builder.add_leaf(parent, html_node::kind::comment, node->v.text.text);
        break;
      case GUMBO_NODE_DOCUMENT:
        break;
    }
  }
}

}  // namespace crawler::detail
