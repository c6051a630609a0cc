// Middlewares: the hooks between the engine and the downloader, and between the engine and the
// spider, in Scrapy's order.
//
//   class add_token : public crawler::downloader_middleware {
//     void process_request(crawler::request& request) override {
//       crawler::set_header(request.headers, "Authorization", "Bearer ...");
//     }
//   };
//
// Downloader middlewares see requests in order on the way out (process_request) and responses and
// failures in reverse order on the way back, as Scrapy runs them by priority (the built-ins and
// their priorities: builtin_middlewares.h). A process_request that throws ignore_request sends the
// request to its errback as an IgnoreRequest failure.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "crawler/downloader.h"
#include "crawler/spider.h"

namespace crawler {

/// Thrown by a middleware to drop a request with a reason ("max redirections reached"); the
/// request's errback receives it as an "IgnoreRequest" failure.
class ignore_request : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class downloader_middleware {
 public:
  virtual ~downloader_middleware();
  /// Before the download; may change the request.
  virtual void process_request(request& request);
  /// After this middleware's process_request: a response to use instead of downloading (as a
  /// Scrapy process_request returning a Response, e.g. the HTTP cache's). The middlewares after
  /// this one do not see the request; the response comes back through every process_response.
  virtual std::optional<response> answer(const request& request);
  /// After a response; a returned request is scheduled instead of passing the response on
  /// (a retry, a redirect). May throw ignore_request.
  virtual std::optional<request> process_response(const request& request, const response& response);
  /// After a failed download; a returned request is scheduled instead (a retry).
  virtual std::optional<request> process_exception(const request& request,
                                                   const download_result& failure);
};

class spider_middleware {
 public:
  virtual ~spider_middleware();
  /// Before the callback; returning a failure sends it to the errback instead.
  virtual std::optional<failure> process_spider_input(const response& response);
  /// After the callback, over what it yielded: may change or remove requests and items. A
  /// callback on the parse pool (spider::concurrent_callbacks) has its requests given here 4,096
  /// at a time as it yields them, then the rest with its items, as Scrapy's middlewares see a
  /// callback's requests while it goes on; a fleet worker's page (SCHEDULER=redis) comes whole.
  virtual void process_spider_output(const response& response, output& out);
  /// Over the start requests, which have no response.
  virtual void process_start_requests(output& out);
};

/// "500 Internal Server Error": the status with its standard reason phrase, as Scrapy's
/// response_status_message.
std::string status_message(int status);

}  // namespace crawler
