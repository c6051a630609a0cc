// The concrete dupefilters, visible only to the factory in dupefilter_factory.cpp.
#pragma once

#include <memory>

#include "dedup/bloom_filter.h"
#include "dedup/dupefilter.h"
#include "redis/client.h"

namespace crawler::dedup::detail {

/// BLOOMFILTER_CAPACITY and BLOOMFILTER_ERRORRATE, checked (capacity > 0, 0 < rate < 1); throws
/// settings_error naming the key. Shared by the bloom and redisbloom backends.
scalable_bloom_filter::params bloom_capacity_from(const crawler::settings& settings);

std::unique_ptr<rfp_dupefilter> make_set_dupefilter(const dupefilter_context& context);
std::unique_ptr<rfp_dupefilter> make_bloom_dupefilter(const dupefilter_context& context);
std::unique_ptr<rfp_dupefilter> make_redis_set_dupefilter(const dupefilter_context& context,
                                                          std::shared_ptr<redis::client> redis);
std::unique_ptr<rfp_dupefilter> make_redis_bitmap_dupefilter(const dupefilter_context& context,
                                                             std::shared_ptr<redis::client> redis);
std::unique_ptr<rfp_dupefilter> make_redisbloom_dupefilter(const dupefilter_context& context,
                                                           std::shared_ptr<redis::client> redis);

}  // namespace crawler::dedup::detail
