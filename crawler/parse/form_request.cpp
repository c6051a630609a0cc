#include "crawler/parse/form_request.h"

#include <algorithm>
#include <set>

#include "config/ascii.h"
#include "request/canonical_url.h"
#include "request/python_json.h"

namespace crawler {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return ascii_lower(x) == ascii_lower(y);
         });
}

std::string attribute_or(const html_node& element, std::string_view name, std::string fallback) {
  const auto* value = element.attribute(name);
  return value ? std::string(*value) : fallback;
}

// The node after `node` in document order within `root`'s subtree, or nullptr.
const html_node* next_in(const html_node* node, const html_node* root) {
  if (node->first_child) return node->first_child;
  while (node != root) {
    if (node->next_sibling) return node->next_sibling;
    node = node->parent;
  }
  return nullptr;
}

template <typename Visit>
void for_each_element_under(const html_node& root, Visit visit) {
  for (const html_node* node = next_in(&root, &root); node; node = next_in(node, &root))
    if (node->is_element()) visit(*node);
}

// An element's text as lxml's .text gives it: its text children before its first element.
std::string leading_text(const html_node& element) {
  std::string text;
  for (const html_node* child = element.first_child; child && !child->is_element();
       child = child->next_sibling)
    if (child->is_text()) text += child->text;
  return text;
}

// All the text a <textarea> holds.
std::string all_text(const html_node& element) {
  std::string text;
  for (const html_node* node = next_in(&element, &element); node; node = next_in(node, &element))
    if (node->is_text()) text += node->text;
  return text;
}

std::string trimmed(std::string_view text) {
  return std::string(trim_ascii_space(text));
}

// An <option>'s value: its value attribute, else its text, trimmed.
std::string option_value(const html_node& option) {
  if (const auto* value = option.attribute("value")) return std::string(*value);
  return trimmed(leading_text(option));
}

std::vector<const html_node*> options_of(const html_node& select) {
  std::vector<const html_node*> options;
  for_each_element_under(select, [&](const html_node& e) {
    if (e.name == "option") options.push_back(&e);
  });
  return options;
}

// What a <select> sends: lxml's value, with Scrapy's fallbacks (_select_value).
std::vector<std::string> select_values(const html_node& select) {
  auto options = options_of(select);
  if (select.attribute("multiple")) {
    std::vector<std::string> values;
    for (const auto* option : options) {
      if (!option->attribute("selected")) continue;
      // Scrapy: (o.get("value") or o.text or "").strip(): an empty value falls back to the text.
      auto value = attribute_or(*option, "value", "");
      values.push_back(trimmed(value.empty() ? leading_text(*option) : value));
    }
    return values;
  }
  for (auto it = options.rbegin(); it != options.rend(); ++it)
    if ((*it)->attribute("selected")) return {option_value(**it)};
  for (const auto* option : options)
    if (!option->attribute("disabled")) return {option_value(*option)};
  if (!options.empty()) return {option_value(*options.front())};
  return {};  // a select without options sends nothing
}

bool type_is(const html_node& element, std::initializer_list<std::string_view> types) {
  const auto* type = element.attribute("type");
  if (!type) return false;
  return std::any_of(types.begin(), types.end(),
                     [&](std::string_view t) { return equals_ignoring_case(*type, t); });
}

bool is_clickable(const html_node& e) {
  if (e.name == "input") return type_is(e, {"submit", "image"});
  return e.name == "button" && (!e.attribute("type") || type_is(e, {"submit"}));
}

const html_node* chosen_form(const response& page, const form_options& options) {
  std::vector<const html_node*> forms;
  for_each_element_under(*page.document()->root(), [&](const html_node& e) {
    if (e.name == "form") forms.push_back(&e);
  });
  if (forms.empty()) throw form_error("no <form> element found in " + page.url);
  auto by_attribute = [&](const char* name,
                          const std::optional<std::string>& wanted) -> const html_node* {
    if (!wanted) return nullptr;
    for (const auto* form : forms)
      if (const auto* value = form->attribute(name); value && *value == *wanted) return form;
    return nullptr;
  };
  if (const auto* form = by_attribute("name", options.formname)) return form;
  if (const auto* form = by_attribute("id", options.formid)) return form;
  if (options.formxpath || options.formcss) {
    auto found = options.formxpath ? page.xpath(*options.formxpath) : page.css(*options.formcss);
    for (const html_node* node = found.empty() ? nullptr : found.front().node(); node;
         node = node->parent)
      if (node->is_element() && node->name == "form") return node;
    throw form_error(
        "no <form> element found with " +
        (options.formxpath ? "formxpath " + *options.formxpath : "formcss " + *options.formcss) +
        " in " + page.url);
  }
  if (options.formnumber >= forms.size())
    throw form_error("form number " + std::to_string(options.formnumber) + " not found in " +
                     page.url + " (it has " + std::to_string(forms.size()) + ")");
  return forms[options.formnumber];
}

// The clicked element's name and value, or nullopt when none is clicked or it has no name.
std::optional<std::pair<std::string, std::string>> clicked(const html_node& form,
                                                           const form_options& options) {
  if (options.dont_click) return std::nullopt;
  std::vector<const html_node*> clickables;
  for_each_element_under(form, [&](const html_node& e) {
    if (is_clickable(e)) clickables.push_back(&e);
  });
  if (clickables.empty()) return std::nullopt;
  const html_node* chosen = clickables.front();
  if (options.clickdata) {
    chosen = nullptr;
    const auto& wanted = *options.clickdata;
    if (auto nr = wanted.find("nr"); nr != wanted.end()) {
      // Scrapy counts every field of the form here (lxml's form.inputs), not only buttons.
      std::vector<const html_node*> fields;
      for_each_element_under(form, [&](const html_node& e) {
        if (e.name == "input" || e.name == "select" || e.name == "textarea") fields.push_back(&e);
      });
      std::size_t index = 0;
      try {
        index = std::stoul(nr->second);
      } catch (const std::exception&) {
        throw form_error("clickdata nr \"" + nr->second + "\" is not a number");
      }
      if (index < fields.size()) chosen = fields[index];
    }
    if (!chosen) {
      std::vector<const html_node*> matches;
      for_each_element_under(form, [&](const html_node& e) {
        bool all = std::all_of(wanted.begin(), wanted.end(), [&](const auto& pair) {
          const auto* value = e.attribute(pair.first);
          return value && *value == pair.second;
        });
        if (all) matches.push_back(&e);
      });
      std::string described;
      for (const auto& [name, value] : wanted)
        described += (described.empty() ? "" : ", ") + name + "=\"" + value + "\"";
      if (matches.size() > 1)
        throw form_error(std::to_string(matches.size()) + " elements match the clickdata {" +
                         described + "}");
      if (matches.empty())
        throw form_error("no clickable element matches the clickdata {" + described + "}");
      chosen = matches.front();
    }
  }
  const auto* name = chosen->attribute("name");
  if (!name) return std::nullopt;
  return std::pair{std::string(*name), attribute_or(*chosen, "value", "")};
}

}  // namespace

std::string urlencode(const form_data& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!value) continue;
    if (!out.empty()) out += '&';
    dedup::append_quote_plus(out, name);
    out += '=';
    dedup::append_quote_plus(out, *value);
  }
  return out;
}

form_request::form_request(std::string url_, const form_data& data,
                           std::optional<std::string> method_) {
  url = std::move(url_);
  bool has_data = std::any_of(data.begin(), data.end(), [](const auto& f) { return f.second; });
  method = method_ ? *method_ : has_data ? "POST" : "GET";
  if (has_data) set_form_data(*this, urlencode(data));
}

form_request form_request::from_response(const response& page, const form_options& options) {
  const html_node& form = *chosen_form(page, options);
  std::set<std::string, std::less<>> given;
  for (const auto& [name, value] : options.formdata) given.insert(name);

  form_data fields;
  for_each_element_under(form, [&](const html_node& e) {
    const auto* name = e.attribute("name");
    if (!name || name->empty() || given.contains(*name)) return;
    if (e.name == "textarea") {
      fields.emplace_back(std::string(*name), all_text(e));
    } else if (e.name == "select") {
      for (auto& value : select_values(e))
        fields.emplace_back(std::string(*name), std::move(value));
    } else if (e.name == "input") {
      if (type_is(e, {"submit", "image", "reset"})) return;
      bool checkable = type_is(e, {"checkbox", "radio"});
      if (checkable && !e.attribute("checked")) return;
      auto value = attribute_or(e, "value", "");
      if (checkable && value.empty()) value = "on";
      fields.emplace_back(std::string(*name), std::move(value));
    }
  });
  if (auto button = clicked(form, options); button && !given.contains(button->first))
    fields.emplace_back(std::move(button->first), std::move(button->second));
  for (const auto& field : options.formdata)
    if (field.second) fields.push_back(field);

  std::string target = page.base_url();
  if (options.url) {
    target = urljoin(page.base_url(), *options.url);
  } else if (const auto* action = form.attribute("action")) {
    target = urljoin(page.base_url(), *action);
  }
  std::string method = options.method ? *options.method : attribute_or(form, "method", "GET");
  for (auto& c : method) c = c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c;
  if (method != "GET" && method != "POST") method = "GET";

  form_request submitted(std::move(target), fields, method);
  submitted.callback = options.callback;
  submitted.errback = options.errback;
  submitted.meta = options.meta;
  submitted.cb_kwargs = options.cb_kwargs;
  submitted.priority = options.priority;
  submitted.dont_filter = options.dont_filter;
  for (const auto& given : options.headers) {
    auto name = ascii_lower(given.first);
    auto same =
        std::find_if(submitted.headers.begin(), submitted.headers.end(),
                     [&name](const auto& header) { return ascii_lower(header.first) == name; });
    if (same != submitted.headers.end()) {
      same->second = given.second;
    } else {
      submitted.headers.push_back(given);
    }
  }
  return submitted;
}

request json_request(std::string url, const nlohmann::json& data, std::string method) {
  request sent{std::move(url)};
  sent.method = std::move(method);
  sent.body = python_json_dumps(data);
  sent.headers.emplace_back("Content-Type", "application/json");
  sent.headers.emplace_back("Accept", "application/json, text/javascript, */*; q=0.01");
  return sent;
}

}  // namespace crawler
