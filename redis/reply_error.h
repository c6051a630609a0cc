// A Redis error reply (`-ERR ...`, `-WRONGTYPE ...`) raised as an exception, and what it says
// about trying again.
//
//   if (answer.is_error()) throw redis::reply_error("take from books:requests", answer.str);
//   ...
//   catch (const redis::reply_error& refused) {
//     if (refused.retrying_helps()) back_off_and_retry(); else stop_and_report(refused.what());
//   }
//
// A reply is not an outage: Redis answered. Only a few answers mean "not now" (the server loads
// its data, runs a long script, lost its master, or is a replica mid-failover); those are retried
// like a lost connection. OOM (maxmemory reached under noeviction) is retried too, as memory can
// be freed, but is reported as what it is. Anything else (a script's runtime error, WRONGTYPE,
// an unknown command) fails the same way every time: a worker that retried it would look busy
// while doing nothing.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace crawler::redis {

enum class reply_error_kind {
  outage,         // LOADING, BUSY, MASTERDOWN, TRYAGAIN, READONLY, CLUSTERDOWN: try again later
  out_of_memory,  // OOM: Redis refuses writes until memory is freed or maxmemory raised
  permanent,      // everything else: the same command fails the same way again
};

/// Reads the error code, the first word of Redis's error text.
reply_error_kind classify_reply_error(std::string_view text);

class reply_error : public std::runtime_error {
 public:
  /// `doing` says what the command was for and names its key; `text` is Redis's error reply.
  /// CRAWLER_WRONGTYPE is the answer of the crawler's own scripts when a key they would write
  /// holds another type: they check before their first write, so nothing was written.
  reply_error(const std::string& doing, std::string_view text)
      : std::runtime_error(message(doing, text)), kind_(classify_reply_error(text)) {}

  reply_error_kind kind() const { return kind_; }
  bool retrying_helps() const { return kind_ != reply_error_kind::permanent; }

 private:
  static std::string message(const std::string& doing, std::string_view text);

  reply_error_kind kind_;
};

/// True when `error` is a reply_error of kind outage: Redis answered, and said "not now".
bool tells_to_try_again(const std::exception_ptr& error);

}  // namespace crawler::redis
