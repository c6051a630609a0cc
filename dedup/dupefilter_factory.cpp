// make_dupefilter, the factory: the registry of backends, and the one file that knows them all
// (a backend is a file in detail/ and a line here), so the interface in dupefilter.cpp knows none.
#include <spdlog/spdlog.h>

#include "dedup/detail/backends.h"
#include "dedup/dupefilter.h"
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

// Both in range: the settings refuse a capacity under 1 and a rate outside (0, 1) when set.
scalable_bloom_filter::params detail::bloom_capacity_from(const crawler::settings& settings) {
  return {static_cast<std::uint64_t>(settings.get_int("BLOOMFILTER_CAPACITY")),
          settings.get_double("BLOOMFILTER_ERRORRATE")};
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
