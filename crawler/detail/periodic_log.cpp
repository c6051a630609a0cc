#include "crawler/detail/periodic_log.h"

#include <boost/asio/post.hpp>

namespace crawler::detail {

periodic_log::periodic_log(boost::asio::io_context& io, const settings& settings, stats& stats)
    : timer_(io),
      stats_(stats),
      interval_(settings.get_double("LOGSTATS_INTERVAL")),
      stats_filter_(read_filter(settings, "PERIODIC_LOG_STATS")),
      delta_filter_(read_filter(settings, "PERIODIC_LOG_DELTA")),
      timing_(settings.get_bool("PERIODIC_LOG_TIMING_ENABLED")),
      started_(std::chrono::steady_clock::now()),
      last_(started_),
      logger_(get_logger("periodic_log")) {
  if (interval_ <= 0 || !(stats_filter_ || delta_filter_ || timing_)) {
    interval_ = 0;  // not configured, as Scrapy's NotConfigured: close() logs nothing either
    return;
  }
  // The first line once the crawl runs, as Scrapy's comes on spider_opened: posted from the loop,
  // it runs after engine::run's own first handler, which sets start_time.
  boost::asio::post(io, [this, &io] {
    boost::asio::post(io, [this] {
      if (!closed_) tick();
    });
  });
}

// true, or an object with "include" and "exclude" lists of strings; an empty object is off, as an
// empty dict is falsy in Scrapy.
std::optional<periodic_log::filter> periodic_log::read_filter(const settings& settings,
                                                              const char* key) {
  const auto& value = settings.get(key);
  if (value.is_boolean()) return value.get<bool>() ? std::optional<filter>(filter{}) : std::nullopt;
  if (!value.is_object() || value.empty()) return std::nullopt;
  filter chosen;
  for (auto [member, list] :
       {std::pair{"include", &chosen.include}, {"exclude", &chosen.exclude}}) {
    auto found = value.find(member);
    if (found == value.end()) continue;
    auto where = std::string(key) + "." + member;
    if (!found->is_array()) {
      throw settings_error(where + ": expected a list of strings, got " + found->dump());
    }
    for (const auto& word : *found) {
      if (!word.is_string()) {
        throw settings_error(where + ": expected a list of strings, got " + word.dump() + " in it");
      }
      list->push_back(word.get<std::string>());
    }
  }
  return chosen;
}

bool periodic_log::filter::allows(const std::string& name) const {
  auto contains = [&](const std::string& part) { return name.find(part) != std::string::npos; };
  for (const auto& part : exclude) {
    if (contains(part)) return false;
  }
  if (include.empty()) return true;
  for (const auto& part : include) {
    if (contains(part)) return true;
  }
  return false;
}

void periodic_log::log() {
  auto now = std::chrono::steady_clock::now();
  auto all = stats_.to_json();
  nlohmann::json line = nlohmann::json::object();
  if (timing_) {
    line["time"] = {
        {"log_interval", interval_},
        {"start_time", all.value("start_time", nlohmann::json())},
        {"utcnow", utc_timestamp()},
        {"log_interval_real", std::chrono::duration<double>(now - last_).count()},
        {"elapsed", std::chrono::duration<double>(now - started_).count()},
    };
    last_ = now;
  }
  if (delta_filter_) {
    std::map<std::string, nlohmann::json> current;
    auto& delta = line["delta"] = nlohmann::json::object();
    for (const auto& [name, value] : all.items()) {
      if (!value.is_number() || !delta_filter_->allows(name)) continue;
      auto before = previous_.find(name);
      if (before == previous_.end()) {
        delta[name] = value;
      } else if (value.is_number_integer() && before->second.is_number_integer()) {
        delta[name] = value.get<std::int64_t>() - before->second.get<std::int64_t>();
      } else {
        delta[name] = value.get<double>() - before->second.get<double>();
      }
      current.emplace(name, value);
    }
    previous_ = std::move(current);
  }
  if (stats_filter_) {
    auto& kept = line["stats"] = nlohmann::json::object();
    for (const auto& [name, value] : all.items()) {
      if (stats_filter_->allows(name)) kept[name] = value;
    }
  }
  logger_->info("{}", line.dump(4, ' ', false, nlohmann::json::error_handler_t::replace));
}

void periodic_log::tick() {
  log();
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(interval_)));
  timer_.async_wait([this](boost::system::error_code error) {
    if (!error && !closed_) tick();
  });
}

void periodic_log::close() {
  if (interval_ <= 0 || closed_) return;
  closed_ = true;
  timer_.cancel();
  log();
}

}  // namespace crawler::detail
