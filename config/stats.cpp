#include "config/stats.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <stdexcept>

namespace crawler {

namespace {

// The number stored under `key`, for `operation` to work on. A key that set_value gave something
// else is a bug of whoever wrote it: say which key and what it holds (Scrapy raises a TypeError).
std::int64_t stored_number(const nlohmann::json& value, std::string_view key,
                           const char* operation) {
  if (value.is_number()) return value.get<std::int64_t>();
  auto held = value.dump();
  if (held.size() > 60) held = held.substr(0, 57) + "...";
  throw std::invalid_argument("stats: " + std::string(operation) + " on \"" + std::string(key) +
                              "\", which holds " + held + ", not a number");
}

}  // namespace

void stats::inc_value(std::string_view key, std::int64_t count) {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  if (it == values_.end()) {
    values_.emplace(std::string(key), count);
    counter_keys_.emplace(key);
  } else {
    it->second = stored_number(it->second, key, "inc_value") + count;
  }
}

std::map<std::string, std::int64_t> stats::counters() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::int64_t> out;
  for (const auto& key : counter_keys_) {
    auto it = values_.find(key);
    if (it != values_.end() && it->second.is_number_integer()) {
      out.emplace(key, it->second.get<std::int64_t>());
    }
  }
  return out;
}

void stats::set_value(std::string_view key, nlohmann::json value) {
  std::lock_guard lock(mutex_);
  values_.insert_or_assign(std::string(key), std::move(value));
}

namespace {

// `value` stored under `key` unless the stored one is `better` already. Found before inserted: a
// key of more than 15 characters made into a std::string costs an allocation, and max_value runs
// for every page a crawl stores.
template <typename Better>
void keep_better(std::map<std::string, nlohmann::json, std::less<>>& values, std::string_view key,
                 std::int64_t value, Better better, const char* operation) {
  auto it = values.find(key);
  if (it == values.end()) {
    values.emplace(std::string(key), value);
  } else if (better(value, stored_number(it->second, key, operation))) {
    it->second = value;
  }
}

}  // namespace

void stats::max_value(std::string_view key, std::int64_t value) {
  std::lock_guard lock(mutex_);
  keep_better(values_, key, value, std::greater<>(), "max_value");
}

void stats::min_value(std::string_view key, std::int64_t value) {
  std::lock_guard lock(mutex_);
  keep_better(values_, key, value, std::less<>(), "min_value");
}

std::optional<nlohmann::json> stats::get_value(std::string_view key) const {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::int64_t stats::get_int(std::string_view key, std::int64_t fallback) const {
  auto value = get_value(key);
  return value && value->is_number_integer() ? value->get<std::int64_t>() : fallback;
}

nlohmann::json stats::to_json() const {
  std::lock_guard lock(mutex_);
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : values_) out[key] = value;
  return out;
}

void stats::clear() {
  std::lock_guard lock(mutex_);
  values_.clear();
  counter_keys_.clear();
}

std::string utc_timestamp() {
  auto now = std::chrono::system_clock::now();
  auto seconds = std::chrono::system_clock::to_time_t(now);
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()) % 1000000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  auto length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + length, sizeof text - length, ".%06lld", (long long)micros.count());
  return text;
}

}  // namespace crawler
