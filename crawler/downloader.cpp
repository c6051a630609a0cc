#include "crawler/downloader.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <chrono>
#include <deque>
#include <random>

#include "config/crawl_clock.h"
#include "config/log.h"
#include "crawler/detail/curl_transfers.h"
#include "crawler/scheme_policy.h"

namespace crawler {
namespace {

namespace asio = boost::asio;
using clock = crawl_clock;

constexpr auto idle_slot_lifetime = std::chrono::seconds(60);  // as Scrapy's slot GC

// Scrapy's downloader middlewares whose work is the downloader's here: turned off by their own
// setting, or by null in DOWNLOADER_MIDDLEWARES as in Scrapy; those nothing here can do without
// are refused there.
bool switched_on(const settings& settings, const char* setting, const char* middleware) {
  return settings.get_bool(setting) &&
         !removes_component(settings, "DOWNLOADER_MIDDLEWARES",
                            std::string("scrapy.downloadermiddlewares.") + middleware);
}

void refuse_removing(const settings& settings, const char* middleware, const char* why) {
  auto name = std::string("scrapy.downloadermiddlewares.") + middleware;
  if (removes_component(settings, "DOWNLOADER_MIDDLEWARES", name)) {
    throw settings_error("DOWNLOADER_MIDDLEWARES[\"" + name + "\"]: null cannot turn it off here: " +
                         why);
  }
}

}  // namespace

struct downloader::slot {
  explicit slot(const asio::any_io_executor& executor) : timer(executor) {}

  std::deque<waiting> queue;
  std::size_t transferring = 0;
  double delay = 0;
  double least_delay = 0;  // the host's robots.txt Crawl-delay
  // None before the slot's first download: a new slot owes no delay, whatever the clock says
  // (its epoch is the machine's boot, which may be a second ago).
  std::optional<clock::time_point> last_start;
  clock::time_point last_used = clock::now();
  bool timer_armed = false;
  crawl_timer timer;
};

downloader::downloader(asio::any_io_executor executor, const settings& settings, stats& stats)
    : executor_(executor),
      stats_(stats),
      total_concurrency_(std::size_t(settings.get_int("CONCURRENT_REQUESTS"))),
      per_slot_concurrency_(std::size_t(settings.get_int(
          settings.get_int("CONCURRENT_REQUESTS_PER_IP") > 0 ? "CONCURRENT_REQUESTS_PER_IP"
                                                             : "CONCURRENT_REQUESTS_PER_DOMAIN"))),
      delay_(settings.get_double("DOWNLOAD_DELAY")),
      randomize_delay_(settings.get_bool("RANDOMIZE_DOWNLOAD_DELAY")),
      autothrottle_(settings.get_bool("AUTOTHROTTLE_ENABLED")),
      autothrottle_start_delay_(settings.get_double("AUTOTHROTTLE_START_DELAY")),
      autothrottle_max_delay_(settings.get_double("AUTOTHROTTLE_MAX_DELAY")),
      autothrottle_target_(settings.get_double("AUTOTHROTTLE_TARGET_CONCURRENCY")),
      autothrottle_debug_(settings.get_bool("AUTOTHROTTLE_DEBUG")),
      options_(std::make_unique<detail::transfer_options>()),
      transfers_(std::make_unique<detail::curl_transfers>(
          executor, stats, switched_on(settings, "COOKIES_ENABLED", "cookies.CookiesMiddleware"),
          std::size_t(settings.get_int("COOKIES_MAX_JARS")),
          // As many as curl keeps itself while CONCURRENT_REQUESTS transfers run.
          4 * std::max<std::size_t>(1, std::size_t(settings.get_int("CONCURRENT_REQUESTS"))))),
      logger_(get_logger("downloader")) {
  options_->timeout_seconds = settings.get_double("DOWNLOAD_TIMEOUT");
  options_->connect_timeout_seconds = settings.get_double("DNS_TIMEOUT");
  options_->maxsize = std::size_t(settings.get_int("DOWNLOAD_MAXSIZE"));
  options_->warnsize = std::size_t(settings.get_int("DOWNLOAD_WARNSIZE"));
  options_->compression =
      switched_on(settings, "COMPRESSION_ENABLED", "httpcompression.HttpCompressionMiddleware");
  options_->proxy_enabled =
      switched_on(settings, "HTTPPROXY_ENABLED", "httpproxy.HttpProxyMiddleware");
  refuse_removing(settings, "downloadtimeout.DownloadTimeoutMiddleware",
                  "every download has DOWNLOAD_TIMEOUT (meta download_timeout)");
  refuse_removing(settings, "stats.DownloaderStats", "the downloader/ stats are always kept");
  options_->protocols = scheme_policy(settings).curl_protocols();
  if (settings.get_int("CONCURRENT_REQUESTS_PER_IP") > 0) {
    slots_per_ip_ = true;
    resolver_ = std::make_unique<asio::ip::tcp::resolver>(executor);
  }
}

downloader::~downloader() = default;

std::string downloader::slot_key(const request& request) const {
  if (auto slot = request.meta.find("download_slot");
      slot != request.meta.end() && slot->is_string()) {
    return slot->get<std::string>();
  }
  auto url = boost::urls::parse_uri(request.url);
  return url ? std::string(url->host()) : std::string();
}

void downloader::fetch(request request, completion done, std::size_t body_limit) {
  ++active_;
  auto key = slot_key(request);
  if (slots_per_ip_ && !request.meta.contains("download_slot")) {
    // Scrapy keys the slot by its DNS cache's address, which misses a host's first requests;
    // here they wait for the address, so even those keep to the server's limit.
    if (auto address = addresses_.find(key); address != addresses_.end()) {
      key = address->second;
    } else if (boost::system::error_code not_ip; asio::ip::make_address(key, not_ip), not_ip) {
      auto& waiting = resolving_[key];
      waiting.push_back({std::move(request), std::move(done), body_limit});
      if (waiting.size() == 1) resolve(key);
      return;
    }
  }
  enter_slot(key, {std::move(request), std::move(done), body_limit});
}

void downloader::resolve(const std::string& host) {
  resolver_->async_resolve(
      host, "",
      [this, host](boost::system::error_code error, asio::ip::tcp::resolver::results_type found) {
        if (error == asio::error::operation_aborted) return;  // closing: the requests were taken
        // An address that cannot be found keys the slot by the host name: the transfer then
        // fails with DNSLookupError as any other would.
        addresses_[host] =
            error || found.empty() ? host : found.begin()->endpoint().address().to_string();
        auto waiting = std::move(resolving_[host]);
        resolving_.erase(host);
        for (auto& next : waiting) enter_slot(addresses_[host], std::move(next));
      });
}

void downloader::enter_slot(const std::string& key, waiting next) {
  auto& entry = slots_[key];
  if (!entry) {
    entry = std::make_unique<slot>(executor_);
    entry->delay = autothrottle_ ? std::max(delay_, autothrottle_start_delay_) : delay_;
    auto host = slot_key(next.request);  // a Crawl-delay is the host's, whatever the key
    if (auto crawl_delay = crawl_delays_.find(host); crawl_delay != crawl_delays_.end()) {
      entry->least_delay = crawl_delay->second;
      entry->delay = std::max(entry->delay, entry->least_delay);
    }
  }
  entry->queue.push_back(std::move(next));
  process_queue(key, *entry);
  if (!sweep_timer_) {
    sweep_timer_ = std::make_unique<crawl_timer>(executor_);
    sweep_idle_slots();
  }
}

void downloader::set_crawl_delay(const std::string& host, double seconds) {
  crawl_delays_[host] = seconds;
  auto address = addresses_.find(host);
  if (auto found = slots_.find(address == addresses_.end() ? host : address->second);
      found != slots_.end()) {
    found->second->least_delay = seconds;
    found->second->delay = std::max(found->second->delay, seconds);
  }
}

std::string downloader::address_of(const request& request) const {
  if (!slots_per_ip_ || request.meta.contains("download_slot")) return {};
  auto host = slot_key(request);
  auto address = addresses_.find(host);
  if (address != addresses_.end()) return address->second == host ? "" : address->second;
  // An address written as the host is its own, and never looked up.
  boost::system::error_code not_ip;
  asio::ip::make_address(host, not_ip);
  return not_ip ? "" : host;
}

std::optional<double> downloader::delay_of(const request& request) const {
  auto key = slot_key(request);
  double delay = delay_;
  if (auto crawl_delay = crawl_delays_.find(key); crawl_delay != crawl_delays_.end()) {
    delay = std::max(delay, crawl_delay->second);
  }
  if (slots_per_ip_ && !request.meta.contains("download_slot")) {
    if (auto address = addresses_.find(key); address != addresses_.end()) key = address->second;
  }
  if (auto found = slots_.find(key); found != slots_.end()) delay = found->second->delay;
  if (delay == delay_) return std::nullopt;
  return delay;
}

// Scrapy's Downloader._process_queue: with a delay, one request per delay period per slot.
void downloader::process_queue(const std::string& key, slot& slot) {
  if (slot.timer_armed) return;
  double delay = scheduler_paces_ ? 0 : slot.delay;
  if (delay > 0 && randomize_delay_) {
    static thread_local std::mt19937_64 random{std::random_device{}()};
    delay = std::uniform_real_distribution<double>(0.5 * delay, 1.5 * delay)(random);
  }
  if (delay > 0 && !slot.queue.empty() && slot.last_start) {
    double penalty = delay - seconds_since(*slot.last_start);
    if (penalty > 0) {
      slot.timer_armed = true;
      slot.timer.expires_after(to_clock_duration(penalty));
      slot.timer.async_wait([this, key](boost::system::error_code error) {
        if (error) return;  // cancelled: the slot may be gone
        auto& waiting = *slots_.at(key);
        waiting.timer_armed = false;
        process_queue(key, waiting);
      });
      return;
    }
  }
  while (!slot.queue.empty() && slot.transferring < per_slot_concurrency_) {
    start_transfer(key, slot);
    if (delay > 0) {
      process_queue(key, slot);  // arms the timer for the next one
      break;
    }
  }
}

void downloader::start_transfer(const std::string& key, slot& slot) {
  auto next = std::move(slot.queue.front());
  slot.queue.pop_front();
  ++slot.transferring;
  slot.last_start = clock::now();
  auto options = *options_;
  if (auto timeout = next.request.meta.find("download_timeout");
      timeout != next.request.meta.end() && timeout->is_number()) {
    options.timeout_seconds = timeout->get<double>();
  }
  if (auto maxsize = next.request.meta.find("download_maxsize");
      maxsize != next.request.meta.end() && maxsize->is_number_integer()) {
    options.maxsize = std::size_t(std::max<std::int64_t>(0, maxsize->get<std::int64_t>()));
  }
  options.body_limit = next.body_limit;
  stats_.inc_value("downloader/request_count");
  stats_.inc_value("downloader/request_method_count/" + next.request.method);
  transfers_->start(
      std::move(next.request), options,
      [this, key, done = std::move(next.done)](download_result result, double latency) {
        auto& slot = *slots_.at(key);
        --slot.transferring;
        slot.last_used = clock::now();
        --active_;
        stats_.inc_value("downloader/request_bytes", std::int64_t(result.request_bytes));
        if (result.response) {
          stats_.inc_value("downloader/response_count");
          stats_.inc_value("downloader/response_status_count/" +
                           std::to_string(result.response->status));
          stats_.inc_value("downloader/response_bytes", std::int64_t(result.response_bytes));
        } else {
          stats_.inc_value("downloader/exception_count");
          stats_.inc_value("downloader/exception_type_count/" + result.error_type);
        }
        if (autothrottle_) adjust_throttle(slot, result, latency);
        process_queue(key, slot);
        done(std::move(result));
      });
}

// Scrapy's AutoThrottle._adjust_delay: move halfway toward latency / target concurrency, never
// below that target nor below DOWNLOAD_DELAY (nor a Crawl-delay); errors and non-200 answers never
// shorten the delay.
void downloader::adjust_throttle(slot& slot, const download_result& result, double latency) {
  if (!result.response) return;
  double target = latency / autothrottle_target_;
  double next = std::max(target, (slot.delay + target) / 2.0);
  next = std::max(std::min(std::max(delay_, next), autothrottle_max_delay_), slot.least_delay);
  if (result.response->status != 200 && next <= slot.delay) return;
  if (autothrottle_debug_) {
    logger_->info("slot: {} | conc:{:2d} | delay:{:5.0f} ms ({:+.0f}) | latency:{:5.0f} ms",
                  slot_key(result.request), slot.transferring, next * 1000,
                  (next - slot.delay) * 1000, latency * 1000);
  }
  slot.delay = next;
}

void downloader::sweep_idle_slots() {
  std::erase_if(slots_, [](const auto& entry) {
    const auto& slot = *entry.second;
    return slot.queue.empty() && slot.transferring == 0 && !slot.timer_armed &&
           clock::now() - slot.last_used > idle_slot_lifetime;
  });
  sweep_timer_->expires_after(idle_slot_lifetime);
  sweep_timer_->async_wait([this](boost::system::error_code error) {
    if (!error) sweep_idle_slots();
  });
}

std::vector<request> downloader::take_waiting() {
  std::vector<request> requests;
  if (resolver_) resolver_->cancel();
  for (auto& [host, waiting] : resolving_) {
    for (auto& next : waiting) requests.push_back(std::move(next.request));
    active_ -= waiting.size();
  }
  resolving_.clear();
  for (auto& [key, slot] : slots_) {
    slot->timer.cancel();
    slot->timer_armed = false;
    for (auto& waiting : slot->queue) requests.push_back(std::move(waiting.request));
    active_ -= slot->queue.size();
    slot->queue.clear();
  }
  return requests;
}

std::vector<request> downloader::abort_all() {
  auto requests = transfers_->abort_all();
  for (auto& request : take_waiting()) requests.push_back(std::move(request));
  for (auto& [key, slot] : slots_) slot->transferring = 0;
  if (sweep_timer_) sweep_timer_->cancel();
  active_ = 0;
  return requests;
}

}  // namespace crawler
