#include "dedup/dupefilter.h"

#include <spdlog/spdlog.h>

#include "config/log.h"
#include "dedup/detail/backends.h"
#include "redis/endpoint.h"

namespace crawler::dedup {
namespace {

struct backend_entry {
  std::string_view name;
  std::string_view python_class;  // the class path a Scrapy settings.py would name
  bool uses_redis;
  std::unique_ptr<rfp_dupefilter> (*make_local)(const dupefilter_context&);
  std::unique_ptr<rfp_dupefilter> (*make_remote)(const dupefilter_context&,
                                                 std::shared_ptr<redis::client>);
};

const backend_entry backends[] = {
    {"set", "scrapy.dupefilters.RFPDupeFilter", false, &detail::make_set_dupefilter, nullptr},
    {"bloom", "", false, &detail::make_bloom_dupefilter, nullptr},
    {"redis_set", "scrapy_redis.dupefilter.RFPDupeFilter", true, nullptr,
     &detail::make_redis_set_dupefilter},
    {"redis_bitmap", "scrapy_redis_bloomfilter.dupefilter.RFPDupeFilter", true, nullptr,
     &detail::make_redis_bitmap_dupefilter},
    {"redisbloom", "scrapy_redis_bf.dupefilter.RFPDupeFilter", true, nullptr,
     &detail::make_redisbloom_dupefilter},
};

}  // namespace

rfp_dupefilter::rfp_dupefilter(const dupefilter_context& context, std::string_view backend,
                               std::string_view stats_prefix)
    : settings_(context.settings),
      stats_(context.stats),
      spider_name_(context.spider_name),
      logger_(crawler::get_logger("dupefilter")),
      backend_(backend),
      stats_prefix_(stats_prefix),
      filtered_key_(std::string(stats_prefix) + "/filtered"),
      debug_(context.settings.get_bool("DUPEFILTER_DEBUG")) {}

rfp_dupefilter::~rfp_dupefilter() = default;

void rfp_dupefilter::log(std::string_view request, std::string_view referer) {
  if (debug_) {
    logger_->debug("Filtered duplicate request: {} (referer: {})", request, referer);
  } else if (log_duplicates_) {
    logger_->debug(
        "Filtered duplicate request: {} - no more duplicates will be shown "
        "(see DUPEFILTER_DEBUG to show all duplicates)",
        request);
    log_duplicates_ = false;
  }
  stats_.inc_value(filtered_key_);
}

void rfp_dupefilter::report_bloom(std::uint64_t capacity, std::uint64_t bits, int hashes,
                                  double estimated_fpr, double configured_rate) {
  stats_.set_value(stats_prefix_ + "/capacity", capacity);
  stats_.set_value(stats_prefix_ + "/bits", bits);
  stats_.set_value(stats_prefix_ + "/hash_number", hashes);
  stats_.set_value(stats_prefix_ + "/estimated_fpr", estimated_fpr);
  if (!warned_fpr_ && estimated_fpr > 2 * configured_rate) {
    warned_fpr_ = true;
    logger_->warn(
        "{} dupefilter: estimated false-positive rate {:.4g} is more than twice the configured "
        "{:.4g}; "
        "new requests are being dropped as duplicates. Raise BLOOMFILTER_CAPACITY (or "
        "BLOOMFILTER_BIT).",
        backend_, estimated_fpr, configured_rate);
  }
}

std::string rfp_dupefilter::redis_key(std::string_view setting) const {
  return spider_key(settings_.get_string(setting), spider_name_);
}

scalable_bloom_filter::params detail::bloom_capacity_from(const crawler::settings& settings) {
  std::int64_t capacity = settings.get_int("BLOOMFILTER_CAPACITY");
  double rate = settings.get_double("BLOOMFILTER_ERRORRATE");
  if (capacity <= 0) {
    throw crawler::settings_error("BLOOMFILTER_CAPACITY: must be larger than 0, got " +
                                  std::to_string(capacity));
  }
  if (!(rate > 0 && rate < 1)) {
    throw crawler::settings_error("BLOOMFILTER_ERRORRATE: must be between 0 and 1, got " +
                                  std::to_string(rate));
  }
  return {static_cast<std::uint64_t>(capacity), rate};
}

std::unique_ptr<rfp_dupefilter> make_dupefilter(const dupefilter_context& context) {
  std::string name = context.settings.get_string("DUPEFILTER_CLASS");
  for (const auto& entry : backends) {
    if (name != entry.name && (entry.python_class.empty() || name != entry.python_class)) continue;
    if (!entry.uses_redis) return entry.make_local(context);
    auto redis = context.redis ? context.redis
                               : redis::client::create(context.executor,
                                                       redis::endpoint_from(context.settings));
    return entry.make_remote(context, std::move(redis));
  }
  std::string choices;
  for (const auto& entry : backends)
    choices += (choices.empty() ? "" : ", ") + std::string(entry.name);
  throw crawler::settings_error("DUPEFILTER_CLASS: unknown dupefilter '" + name +
                                "' (choose one of: " + choices + ")");
}

std::vector<std::string_view> dupefilter_backends() {
  std::vector<std::string_view> names;
  for (const auto& entry : backends) names.push_back(entry.name);
  return names;
}

}  // namespace crawler::dedup
