#include "crawler/components.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <type_traits>
#include <nlohmann/json.hpp>

namespace crawler {

extension::~extension() = default;

namespace {

// Registrations run from static initializers of the program's own files, in any order, before
// main: the table is built on first use.
template <class Component>
std::map<std::string, component_factory<Component>, std::less<>>& registry() {
  static std::map<std::string, component_factory<Component>, std::less<>> table;
  return table;
}

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Scrapy's build_component_list: the _BASE dict updated with the user's, nulls left out, sorted
// by order (ties by name, so the chain is the same on every run).
std::vector<std::pair<std::int64_t, std::string>> enabled(const settings& settings,
                                                          std::string_view setting,
                                                          std::string_view base) {
  nlohmann::json merged = base.empty() ? nlohmann::json::object() : settings.get(base);
  for (const auto& [name, order] : settings.get(setting).items()) merged[name] = order;
  std::vector<std::pair<std::int64_t, std::string>> out;
  for (const auto& [name, order] : merged.items()) {
    if (order.is_null()) continue;
    if (!order.is_number_integer() && !order.is_number_unsigned()) {
      bool from_base = !settings.get(setting).contains(name);
      throw settings_error(std::string(from_base ? base : setting) + "[\"" + name +
                           "\"]: the order must be an integer (or null to leave it out), not " +
                           order.dump());
    }
    out.emplace_back(order.get<std::int64_t>(), name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

template <class Component>
std::vector<std::string> registered_components();

namespace {

// The error for a name no one registered, naming the ones registered.
template <class Component>
std::string unregistered(const std::string& name) {
  using kind = component_kind<Component>;
  auto setting = kind::setting;
  return std::string(setting) + "[\"" + name + "\"]: no " + std::string(kind::what) +
         " is registered as \"" + name + "\" (registered: " +
         joined(registered_components<Component>()) +
         "); a C++ one is registered with CRAWLER_REGISTER_" +
         std::string(setting.substr(0, setting.size() - 1)) + " (crawler/components.h)";
}

}  // namespace

template <class Component>
bool register_component(std::string name, component_factory<Component> make) {
  std::lock_guard lock(registry_mutex());
  registry<Component>().insert_or_assign(std::move(name), std::move(make));
  return true;
}

template <class Component>
std::vector<std::string> registered_components() {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [name, make] : registry<Component>()) names.push_back(name);
  return names;
}

template <class Component>
std::vector<std::unique_ptr<Component>> build_components(crawl_context& crawl) {
  using kind = component_kind<Component>;
  auto setting = kind::setting;
  std::vector<std::unique_ptr<Component>> built;
  for (const auto& [order, name] :
       enabled(crawl.settings, setting, kind::base)) {
    component_factory<Component> make;
    {
      std::lock_guard lock(registry_mutex());
      auto found = registry<Component>().find(name);
      if (found != registry<Component>().end()) make = found->second;
    }
    if (!make) throw settings_error(unregistered<Component>(name));
    if (auto component = make(crawl)) built.push_back(std::move(component));
  }
  return built;
}

std::vector<std::string> component_problems(const settings& settings) {
  std::vector<std::string> problems;
  auto check = [&]<class Component>(std::type_identity<Component>) {
    using kind = component_kind<Component>;
    try {
      auto known = registered_components<Component>();
      for (const auto& [order, name] : enabled(settings, kind::setting, kind::base)) {
        if (!std::binary_search(known.begin(), known.end(), name)) {
          problems.push_back(unregistered<Component>(name));
        }
      }
    } catch (const settings_error& error) {
      problems.push_back(error.what());
    }
  };
  check(std::type_identity<item_pipeline>{});
  check(std::type_identity<downloader_middleware>{});
  check(std::type_identity<spider_middleware>{});
  check(std::type_identity<extension>{});
  return problems;
}

template bool register_component<item_pipeline>(std::string, component_factory<item_pipeline>);
template bool register_component<downloader_middleware>(std::string,
                                                        component_factory<downloader_middleware>);
template bool register_component<spider_middleware>(std::string,
                                                    component_factory<spider_middleware>);
template bool register_component<extension>(std::string, component_factory<extension>);
template std::vector<std::string> registered_components<item_pipeline>();
template std::vector<std::string> registered_components<downloader_middleware>();
template std::vector<std::string> registered_components<spider_middleware>();
template std::vector<std::string> registered_components<extension>();
template std::vector<std::unique_ptr<item_pipeline>> build_components<item_pipeline>(crawl_context&);
template std::vector<std::unique_ptr<downloader_middleware>> build_components<downloader_middleware>(crawl_context&);
template std::vector<std::unique_ptr<spider_middleware>> build_components<spider_middleware>(crawl_context&);
template std::vector<std::unique_ptr<extension>> build_components<extension>(crawl_context&);

}  // namespace crawler
