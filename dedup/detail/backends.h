// The concrete dupefilters, visible only to the factory in dupefilter.cpp.
#pragma once

#include <memory>

#include "dedup/dupefilter.h"
#include "redis/client.h"

namespace crawler::dedup::detail {

std::unique_ptr<rfp_dupefilter> make_set_dupefilter(const dupefilter_context& context);
std::unique_ptr<rfp_dupefilter> make_bloom_dupefilter(const dupefilter_context& context);
std::unique_ptr<rfp_dupefilter> make_redis_set_dupefilter(const dupefilter_context& context,
                                                          std::shared_ptr<redis::client> redis);
std::unique_ptr<rfp_dupefilter> make_redis_bitmap_dupefilter(const dupefilter_context& context,
                                                             std::shared_ptr<redis::client> redis);
std::unique_ptr<rfp_dupefilter> make_redisbloom_dupefilter(const dupefilter_context& context,
                                                           std::shared_ptr<redis::client> redis);

}  // namespace crawler::dedup::detail
