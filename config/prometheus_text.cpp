#include "config/prometheus_text.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <string_view>

namespace crawler {
namespace {

using json = nlohmann::json;

// snake_case: lower case, every other character an underscore, never two in a row.
std::string snake_case(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    char next = std::isalnum(c) ? char(std::tolower(c)) : '_';
    if (next == '_' && (out.empty() || out.back() == '_')) continue;
    out += next;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::string label_value(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// A whole number as one ("7", not "7.0"), any other as JSON writes it; not finite: Go's spelling.
std::string sample_text(const json& value) {
  if (!value.is_number_float()) return value.dump();
  double x = value.get<double>();
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  if (x == std::floor(x) && std::fabs(x) < 9007199254740992.0) {
    return std::to_string(static_cast<std::int64_t>(x));
  }
  return value.dump();
}

bool is_gauge(std::string_view key) {
  return key.starts_with("memusage/") || key.ends_with("_max") || key == "elapsed_time_seconds";
}

struct family {
  std::string type;
  std::string help;
  std::vector<std::string> samples;  // labels and value: {spider="x"} 3
};

}  // namespace

std::string prometheus_text(const json& stats, const std::string& spider,
                            const std::vector<prometheus_gauge>& gauges) {
  std::map<std::string, family> families;
  const std::string spider_label = "spider=\"" + label_value(spider) + "\"";
  for (const auto& [key, value] : stats.items()) {
    if (!value.is_number()) continue;
    std::string_view name = key;
    std::string label_name, label;
    // "downloader/response_status_count/200": one family, the status a label.
    if (auto slash = name.rfind('/'); slash != std::string_view::npos) {
      auto parent = name.substr(0, slash);
      auto parent_last =
          parent.substr(parent.rfind('/') == std::string_view::npos ? 0 : parent.rfind('/') + 1);
      if (parent_last.ends_with("_count") && parent_last.size() > 6) {
        label_name = snake_case(parent_last.substr(0, parent_last.size() - 6));
        label = "," + label_name + "=\"" + label_value(name.substr(slash + 1)) + "\"";
        name = parent;
      }
    }
    bool gauge = is_gauge(key);
    std::string metric = "crawler_" + snake_case(name) + (gauge ? "" : "_total");
    auto& entry = families[metric];
    entry.type = gauge ? "gauge" : "counter";
    entry.help =
        "Scrapy stat " + std::string(name) + (label.empty() ? "" : "/<" + label_name + ">");
    entry.samples.push_back("{" + spider_label + label + "} " + sample_text(value));
  }
  for (const auto& gauge : gauges) {
    auto& entry = families["crawler_" + snake_case(gauge.name)];
    entry.type = "gauge";
    entry.help = gauge.help;
    entry.samples.push_back("{" + spider_label + "} " + sample_text(json(gauge.value)));
  }
  std::string text;
  for (const auto& [metric, entry] : families) {
    text += "# HELP " + metric + " " + entry.help + "\n";
    text += "# TYPE " + metric + " " + entry.type + "\n";
    for (const auto& sample : entry.samples) text += metric + sample + "\n";
  }
  return text;
}

}  // namespace crawler
