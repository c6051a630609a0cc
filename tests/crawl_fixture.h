// What the engine-level suites share: a spider that records what the crawl brought back, and a
// crawl run in-process with test-friendly settings, against a real loopback HTTP server.
#pragma once

#include <hiredis/hiredis.h>

#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "crawler/parse/href_scanner.h"
#include "crawler/run_crawl.h"
#include "http_server.h"

namespace crawler::fixtures {

// A spider that requests what the test gives it and records what comes back.
class recording_spider : public crawler::spider {
 public:
  explicit recording_spider(std::vector<crawler::request> start)
      : spider("recording"), start_(std::move(start)) {
    errback("record_failure", &recording_spider::record_failure);
  }

  void start_requests(crawler::output& out) override {
    for (auto request : start_) {
      request.errback = "record_failure";
      out.request(std::move(request));
    }
  }
  void parse(const crawler::response& response, crawler::output& out) override {
    callback_threads.insert(std::this_thread::get_id());
    responses.push_back(response);
    if (follow_links) {
      crawler::for_each_href(response.text(), [&](std::string_view href) {
        if (!href.starts_with("#")) {
          auto request = response.follow(href);
          request.errback = "record_failure";
          out.request(std::move(request));
        }
      });
      out.item({{"url", response.url}});
    }
  }
  void record_failure(const crawler::failure& failure, crawler::output&) {
    failures.push_back(failure);
  }

  bool follow_links = false;
  std::set<std::thread::id> callback_threads;
  std::vector<crawler::response> responses;
  std::vector<crawler::failure> failures;

 private:
  std::vector<crawler::request> start_;
};

inline crawler::request get(const std::string& url) {
  return crawler::request{url};
}

inline crawler::crawl_result crawl(crawler::spider& spider,
                                   std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(), {"LOG_LEVEL=WARNING", "LOGSTATS_INTERVAL=0"});
  auto settings = crawler::settings_for(spider, overrides);
  crawler::crawl_options options;
  options.handle_signals = false;
  return crawler::run_crawl(spider, settings, std::move(options));
}

inline std::int64_t stat(const crawler::crawl_result& result, const std::string& key) {
  return result.stats.value(key, std::int64_t{0});
}

// The recording spider that also parses every page, keeping its <title>.
struct selecting : recording_spider {
  using recording_spider::recording_spider;
  void parse(const crawler::response& response, crawler::output& out) override {
    titles.push_back(response.css("title::text").get(""));
    recording_spider::parse(response, out);
  }
  std::vector<std::string> titles;
};

// The recording spider that follows every link of every page.
struct following : recording_spider {
  explicit following(std::vector<crawler::request> start) : recording_spider(std::move(start)) {
    follow_links = true;
  }
};

// Search pages of the test site, one request a word: /s?wd=WORD.
inline std::vector<crawler::request> searches(const http_server& server,
                                              std::initializer_list<const char*> words) {
  std::vector<crawler::request> requests;
  for (const char* word : words) requests.push_back(get(server.url(std::string("/s?wd=") + word)));
  return requests;
}

// Whether the test's redis-server on `port` holds `key`.
inline bool redis_has_key(int port, const char* key) {
  auto* context = redisConnect("127.0.0.1", port);
  if (!context || context->err) throw std::runtime_error("cannot reach the test's redis-server");
  auto* reply = static_cast<redisReply*>(redisCommand(context, "EXISTS %s", key));
  bool exists = reply && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
  freeReplyObject(reply);
  redisFree(context);
  return exists;
}

}  // namespace crawler::fixtures
