// The host frontier's vocabulary (SCHEDULER_QUEUE_CLASS = "host"): which host a request is paced
// under, and what a download told about its host's pace.
//
//   auto host = crawler::pacing_host(request);   // "books.toscrape.com", or meta download_slot
//   scheduler->record_pace(request, {.delay = 2.0, .hold = 30});  // Crawl-delay, Retry-After
//
// A scheduler that paces hosts hands out a host's requests no faster than its delay and no more
// at once than CONCURRENT_REQUESTS_PER_DOMAIN, for the whole fleet when the queue is shared; the
// downloader then keeps no delay of its own (it would only add to the scheduler's).
#pragma once

#include <optional>
#include <string>

#include "request/request.h"

namespace crawler {

/// The host `request` is paced under: its meta "download_slot" when it is a string (as the
/// downloader's slot), else its URL's host name, lowercased; "" for a URL without one. A '|'
/// becomes "%7C", so the name fits in the fleet's lease records.
std::string pacing_host(const request& request);

/// What a download said about its host's pace.
struct host_pace {
  /// The least delay between fetches the downloader keeps for the host now, in seconds, when it
  /// is not DOWNLOAD_DELAY: a robots.txt Crawl-delay, AutoThrottle's delay. nullopt:
  /// DOWNLOAD_DELAY.
  std::optional<double> delay;
  /// How long the host asked to be left alone, in seconds: a 429 or 503 answer's Retry-After
  /// (1 s without one). 0: it did not ask.
  double hold = 0;
  /// The server address the downloader's slot holds the host under, with
  /// CONCURRENT_REQUESTS_PER_IP; "" without it, or before the address is known.
  std::string address;
};

}  // namespace crawler
