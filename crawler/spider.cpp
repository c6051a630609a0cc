#include "crawler/spider.h"

#include <algorithm>
#include <stdexcept>

#include "config/log.h"

namespace crawler {
namespace {

std::map<std::string, spider_entry, std::less<>>& registry() {
  static std::map<std::string, spider_entry, std::less<>> spiders;
  return spiders;
}

}  // namespace

bool output::follow(const response& from, std::string_view link, std::string callback) {
  try {
    request(from.follow(link, std::move(callback)));
    return true;
  } catch (const link_error&) {
    return false;
  }
}

void output::follow_all(const response& from, const selector_list& links, std::string callback) {
  for (const auto& link : links) {
    if (link.is_element()) {
      auto attributes = link.attrib();
      auto href = attributes.find("href");
      if (href != attributes.end()) follow(from, href->second, callback);
    } else {
      follow(from, link.get(), callback);
    }
  }
}

void output::follow_all(const response& from, const std::vector<std::string>& links,
                        std::string callback) {
  for (const auto& link : links) follow(from, link, callback);
}

std::string spider_name_problem(std::string_view name) {
  if (name.empty()) return "must not be empty";
  // Checked first, so that no message below quotes a name of any length.
  if (name.size() > max_spider_name_size) {
    return "is " + std::to_string(name.size()) + " characters long; a spider's name is at most " +
           std::to_string(max_spider_name_size) + " (it names folders, files and Redis keys)";
  }
  if (name.front() == '.') return "\"" + std::string(name) + "\" must not start with a dot";
  for (char c : name) {
    bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '.' || c == '-';
    if (!allowed) {
      return "\"" + std::string(name) +
             "\" may hold only letters, digits, '_', '.' and '-' (it names folders and files)";
    }
  }
  return {};
}

spider::spider(std::string name) : name_(std::move(name)) {}
spider::~spider() = default;

crawler::stats& spider::stats() const {
  if (!crawl_stats_) {
    throw std::logic_error("spider " + name_ +
                           ": stats() is the running crawl's, and no crawl "
                           "runs this spider now");
  }
  return *crawl_stats_;
}

std::shared_ptr<spdlog::logger> spider::logger() const {
  return get_logger(name_);
}

void spider::start_requests(output& out) {
  for (const auto& url : start_urls) {
    crawler::request start{url};
    start.dont_filter = true;
    out.request(std::move(start));
  }
}

void spider::parse(const response& response, output&) {
  get_logger(name_)->error("Spider error processing {}: {} does not define parse()",
                           response.request.describe(), name_);
}

void spider::opened(const crawler::settings&) {}
void spider::closed(std::string_view) {}

void spider::call(std::string_view name, const response& response, output& out) {
  if (name.empty() || name == "parse") return parse(response, out);
  auto found = callbacks_.find(name);
  if (found == callbacks_.end()) {
    throw std::invalid_argument("spider " + name_ + " has no callback \"" + std::string(name) +
                                "\"");
  }
  found->second(response, out);
}

bool spider::has_callback(std::string_view name) const {
  return name.empty() || name == "parse" || callbacks_.contains(name);
}

bool spider::reads_only_the_document(const request&) const {
  return false;
}

std::string spider::check_request(const request&) const {
  return {};
}

bool spider::has_errback(std::string_view name) const {
  return name.empty() || errbacks_.contains(name);
}

bool spider::call_errback(std::string_view name, const failure& failure, output& out) {
  auto found = errbacks_.find(name);
  if (found == errbacks_.end()) return false;
  found->second(failure, out);
  return true;
}

std::string spider::argument(std::string_view key, std::string_view fallback) const {
  auto found = arguments_.find(key);
  return found == arguments_.end() ? std::string(fallback) : found->second;
}

bool register_spider(spider_entry entry) {
  auto name = entry.name;
  registry().insert_or_assign(std::move(name), std::move(entry));
  return true;
}

std::vector<const spider_entry*> registered_spiders() {
  std::vector<const spider_entry*> entries;
  for (const auto& [name, entry] : registry()) entries.push_back(&entry);
  return entries;
}

const spider_entry* find_spider(std::string_view name) {
  auto found = registry().find(name);
  return found == registry().end() ? nullptr : &found->second;
}

}  // namespace crawler
