#include "dedup/dupefilter.h"

#include <spdlog/spdlog.h>

#include "config/log.h"
#include "redis/cluster_slots.h"

namespace crawler::dedup {

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
  auto key = spider_key(settings_.get_string(setting), key_spider_name(settings_, spider_name_));
  if (!settings_.get("REDIS_CLUSTER_NODES").empty() && !redis::hash_tag(key)) {
    throw settings_error("settings." + std::string(setting) + ": \"" + key +
                         "\" has no hash tag, and on a Redis Cluster the keys written beside it "
                         "(" + key + ":bad, its parameters) must lie in its slot: put %(spider)s "
                         "(written {" + spider_name_ + "} there) or a {tag} in it");
  }
  return key;
}

}  // namespace crawler::dedup
