// The error of a dupefilter that cannot do its job, shared by the backends and the Bloom filter
// under them (dupefilter.h, bloom_filter.h).
#pragma once

#include <stdexcept>

namespace crawler::dedup {

/// A dupefilter that cannot do its job: unreadable JOBDIR, parameters that do not match the stored
/// filter, a Redis key of another type, a missing RedisBloom module. what() says which and where.
class dupefilter_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace crawler::dedup
