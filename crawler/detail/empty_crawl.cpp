#include "crawler/detail/empty_crawl.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace crawler::detail {
namespace {

using json = nlohmann::json;

std::int64_t count(const json& stats, std::string_view key) {
  auto found = stats.find(key);
  return found != stats.end() && found->is_number_integer() ? found->get<std::int64_t>() : 0;
}

// "SSLError: 3, TimeoutError: 1": the counts under `prefix`, by what follows it.
std::string counts_under(const json& stats, std::string_view prefix) {
  std::string text;
  for (const auto& [key, value] : stats.items()) {
    if (!key.starts_with(prefix) || !value.is_number_integer()) continue;
    if (!text.empty()) text += ", ";
    text += key.substr(prefix.size()) + ": " + value.dump();
  }
  return text;
}

std::string requests(std::int64_t n) {
  return std::to_string(n) + (n == 1 ? " request" : " requests");
}

}  // namespace

std::string why_no_items(const json& stats) {
  if (count(stats, "item_scraped_count") > 0) return "";
  std::vector<std::string> reasons;
  if (auto forbidden = count(stats, "robotstxt/forbidden"); forbidden > 0) {
    std::string reason = "robots.txt forbade " + requests(forbidden);
    if (auto unreachable = count(stats, "robotstxt/forbidden/unreachable"); unreachable > 0) {
      auto failures = counts_under(stats, "robotstxt/exception_count/");
      for (const auto& [key, value] : stats.items()) {
        if (key.starts_with("robotstxt/response_status_count/5")) {
          failures +=
              (failures.empty() ? "" : ", ") + key.substr(key.rfind('/') + 1) + ": " + value.dump();
        }
      }
      reason += ", " + std::to_string(unreachable) +
                " of them on hosts whose robots.txt could not be fetched (" + failures +
                ") and RFC 9309 allows nothing until it is fetched again (ROBOTSTXT_OBEY=false "
                "skips robots.txt; check the start URL's scheme)";
    }
    reasons.push_back(std::move(reason));
  }
  if (auto offsite = count(stats, "offsite/filtered"); offsite > 0) {
    reasons.push_back(requests(offsite) + " went off allowed_domains");
  }
  if (auto ignored = count(stats, "httperror/response_ignored_count"); ignored > 0) {
    reasons.push_back(std::to_string(ignored) + " responses were ignored for their status (" +
                      counts_under(stats, "httperror/response_ignored_status_count/") +
                      "; HTTPERROR_ALLOWED_CODES lets a status through)");
  }
  auto pages = count(stats, "response_received_count") - count(stats, "robotstxt/response_count");
  if (pages <= 0 && reasons.empty()) {
    auto failures = counts_under(stats, "downloader/exception_type_count/");
    reasons.push_back(failures.empty() ? "no page was downloaded"
                                       : "no page was downloaded (" + failures + ")");
  }
  // Pages over the parser's budgets never reach a callback that parses them.
  auto skipped = count(stats, "html/skipped_count");
  if (skipped > 0) {
    reasons.push_back(std::to_string(skipped) + (skipped == 1 ? " page was" : " pages were") +
                      " skipped unparsed (" + counts_under(stats, "html/skipped_reason_count/") +
                      "; HTML_MAX_SIZE and HTML_MAX_DEPTH are the budgets)");
  }
  if (auto parsed = pages - skipped; parsed > 0 && reasons.size() == (skipped > 0 ? 1u : 0u)) {
    reasons.push_back(std::to_string(parsed) + (parsed == 1 ? " page was" : " pages were") +
                      " crawled and the callbacks yielded no item from them (try the "
                      "selectors on one with `crawler shell URL`)");
  }
  std::string sentence = "No item was scraped: ";
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    sentence += (i ? "; " : "") + reasons[i];
  }
  return sentence;
}

}  // namespace crawler::detail
