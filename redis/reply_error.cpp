#include "redis/reply_error.h"

#include <array>

namespace crawler::redis {

reply_error_kind classify_reply_error(std::string_view text) {
  auto code = text.substr(0, text.find(' '));
  static constexpr std::array<std::string_view, 6> not_now{
      "LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "READONLY", "CLUSTERDOWN"};
  for (auto transient : not_now) {
    if (code == transient) return reply_error_kind::outage;
  }
  if (code == "OOM") return reply_error_kind::out_of_memory;
  return reply_error_kind::permanent;
}

bool tells_to_try_again(const std::exception_ptr& error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const reply_error& refused) {
    return refused.kind() == reply_error_kind::outage;
  } catch (...) {
  }
  return false;
}

std::string reply_error::message(const std::string& doing, std::string_view text) {
  constexpr std::string_view wrong_type = "CRAWLER_WRONGTYPE ";
  if (text.starts_with(wrong_type)) {
    return doing + ": " + std::string(text.substr(wrong_type.size())) +
           " (another program's key, or another SCHEDULER_QUEUE_CLASS or DUPEFILTER_CLASS?); "
           "nothing was written. Delete it or choose other key names";
  }
  return doing + ": " + std::string(text);
}

}  // namespace crawler::redis
