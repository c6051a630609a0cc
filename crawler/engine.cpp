#include "crawler/engine.h"

#include <boost/asio/post.hpp>
#include <boost/url/parse.hpp>
#include <chrono>

#include "config/log.h"
#include "crawler/builtin_middlewares.h"
#include "crawler/detail/fetcher.h"
#include "crawler/detail/page_ledger.h"
#include "crawler/detail/scraper.h"
#include "request/http_syntax.h"
#include "scheduler/shared_request.h"

namespace crawler {
namespace {

namespace asio = boost::asio;
using detail::page_stage;

// Before anything is built from it: the name is part of feed paths, the cache folder and keys.
spider& validly_named(spider& spider) {
  if (auto problem = spider_name_problem(spider.name()); !problem.empty()) {
    throw settings_error("spider name: " + problem);
  }
  return spider;
}

}  // namespace

engine::engine(asio::io_context& io, const settings& settings, stats& stats, spider& spider)
    : io_(io),
      settings_(settings),
      stats_(stats),
      spider_(validly_named(spider)),
      logger_(get_logger("engine")),
      scheduler_(scheduler::create({settings, stats, spider.name(), io.get_executor()})),
      ledger_(detail::page_ledger::create()),
      schemes_(settings),
      context_{settings, stats, signals_, spider_, *this, io.get_executor()},
      fetcher_(std::make_unique<detail::fetcher>(
          io, settings, stats, spider_, signals_, *scheduler_, *ledger_,
          html_limits{std::size_t(settings.get_int("HTML_MAX_SIZE")),
                      std::size_t(settings.get_int("HTML_MAX_DEPTH"))},
          [this] { pump(); })),
      idle_timer_(io),
      closespider_timer_(io),
      close_watch_(io),
      scraper_(std::make_unique<detail::scraper>(
          io, settings, stats, spider_, signals_, *scheduler_,
          detail::scraper::hooks{
              .store =
                  [this](page_outcome outcome, detail::page_ticket page,
                         std::function<void(const stored_outcome&)> then) {
                    store(std::move(outcome), std::move(page), std::move(then));
                  },
              .put_back =
                  [this](const request& page) {
                    scheduler_->restore(page);
                    pump();
                  },
              .close = [this](const std::string& reason) { begin_close(reason); },
          })) {
  // Built by name from the settings, built-ins included, in their orders (components.h). The
  // scheme check stays first whatever they say: it keeps pages from leading to local files.
  register_builtin_middlewares();
  spider_.crawl_stats_ = &stats_;
  fetcher_->middlewares() = build_components<downloader_middleware>(context_);
  scraper_->middlewares().push_back(scheme_spider_middleware(settings, stats));
  for (auto& middleware : build_components<spider_middleware>(context_)) {
    scraper_->middlewares().push_back(std::move(middleware));
  }
  for (auto& pipeline : build_components<item_pipeline>(context_)) {
    scraper_->add_pipeline(std::move(pipeline));
  }
  extensions_ = build_components<extension>(context_);
  // A page that leaves the ledger may leave the crawl idle, or a download slot free.
  ledger_->when_left([this] { pump_soon(); });
}

engine::~engine() {
  // Tickets let go from here on (the fetcher's and the scraper's, destroyed below) find no
  // engine to tell.
  ledger_->when_left(nullptr);
  spider_.crawl_stats_ = nullptr;
}

void engine::add_pipeline(std::unique_ptr<item_pipeline> pipeline) {
  scraper_->add_pipeline(std::move(pipeline));
}
void engine::add_downloader_middleware(std::unique_ptr<downloader_middleware> middleware) {
  fetcher_->middlewares().push_back(std::move(middleware));
}
void engine::add_spider_middleware(std::unique_ptr<spider_middleware> middleware) {
  scraper_->middlewares().push_back(std::move(middleware));
}

std::string engine::run() {
  asio::post(io_, [this] { open(); });
  io_.restart();
  io_.run();
  if (startup_error_) std::rethrow_exception(startup_error_);
  return close_reason_;
}

void engine::when_opened(std::function<void()> action) {
  when_opened_.push_back(std::move(action));
}

void engine::fail_startup(std::exception_ptr error) {
  startup_error_ = error;
  phase_ = phase::closed;
  io_.stop();
}

void engine::open() {
  stats_.set_value("start_time", utc_timestamp());
  started_ = crawl_clock::now();
  scheduler_->connect({
      .report_dropped = signals_.connected<signals::request_dropped>(),
      .ready = [this] { pump(); },
      .fatal = [this](const std::string& reason) { begin_close(reason); },
      // A fleet's queue may hold what another spider, or a person, put there: never run a
      // request this spider cannot answer.
      .request_check = [this](const request& request) -> std::string {
        if (!spider_.has_callback(request.callback)) {
          return "spider " + spider_.name() + " has no callback \"" + request.callback + "\"";
        }
        if (!spider_.has_errback(request.errback)) {
          return "spider " + spider_.name() + " has no errback \"" + request.errback + "\"";
        }
        if (auto problem = request_syntax_problem(request); !problem.empty()) return problem;
        return spider_.check_request(request);
      },
  });
  scheduler_->async_open([this](std::exception_ptr error) {
    if (error) return fail_startup(error);
    try {
      spider_.opened(settings_);
      scraper_->open();
    } catch (...) {
      return fail_startup(std::current_exception());
    }
    signals_.send(signals::spider_opened{spider_});
    logger_->info("Spider opened");
    for (auto& action : when_opened_) action();
    if (phase_ == phase::opening) phase_ = phase::running;
    if (auto timeout = settings_.get_double("CLOSESPIDER_TIMEOUT"); timeout > 0) {
      closespider_timer_.expires_after(to_clock_duration(timeout));
      closespider_timer_.async_wait([this](boost::system::error_code error) {
        if (!error) begin_close("closespider_timeout");
      });
    }
    output start;
    // A spider that cannot say where to start (a missing -a argument) cannot start: exit 2 with
    // its reason, not a crawl of nothing that "finished".
    try {
      spider_.start_requests(start);
    } catch (const std::exception& error) {
      return fail_startup(std::make_exception_ptr(std::runtime_error(
          std::string("error while obtaining start requests: ") + error.what())));
    }
    try {
      for (const auto& request : start.requests) check_start_request(request);
    } catch (...) {
      return fail_startup(std::current_exception());
    }
    scraper_->start(std::move(start), ledger_->enter("the start requests", page_stage::parsing));
    pump();
  });
}

// A start URL that is not one is the operator's typo: say so before anything is fetched, rather
// than count a failed download.
void engine::check_start_request(const request& request) const {
  const auto& url = request.url;
  if (auto missing = missing_scheme_problem(url); !missing.empty()) {
    throw std::invalid_argument("start URL \"" + url + "\": " + missing);
  }
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    throw std::invalid_argument("start URL \"" + url +
                                "\" is not an absolute URL such as https://example.org/");
  }
  if (!schemes_.fetches(url)) {
    throw std::invalid_argument("start URL \"" + url + "\": scheme \"" + url_scheme(url) +
                                "\" is not in DOWNLOAD_SCHEMES");
  }
  if (url_scheme(url) != "file" && parsed->host().empty()) {
    throw std::invalid_argument("start URL \"" + url + "\" has no host");
  }
  if (auto refused = scheduler_->start_request_problem(request); !refused.empty()) {
    throw std::invalid_argument("start URL \"" + url + "\": " + refused);
  }
}

void engine::pump() {
  if (pumping_) {
    pump_again_ = true;
    return;
  }
  pumping_ = true;
  do {
    pump_again_ = false;
    while (phase_ == phase::running && !fetcher_->needs_backout(holding_download_slots())) {
      auto next = scheduler_->next_request();
      if (!next) break;
      fetch(std::move(*next));
    }
  } while (pump_again_);
  pumping_ = false;
  check_idle();
}

void engine::pump_soon() {
  if (pump_posted_) return;
  pump_posted_ = true;
  asio::post(io_, [this] {
    pump_posted_ = false;
    pump();
  });
}

void engine::fetch(request request) {
  idle_held_ = false;  // crawling again: the next idle is a new one
  auto page = ledger_->enter(request.url, page_stage::downloading);
  fetcher_->fetch(std::move(request), page, [this, page](detail::fetched fetched) mutable {
    on_fetched(std::move(fetched), std::move(page));
  });
}

void engine::on_fetched(detail::fetched fetched, detail::page_ticket page) {
  if (fetched.instead) {
    auto lease = fetched.result.request.lease;
    store({.lease = std::move(lease), .requests = {std::move(*fetched.instead)}}, std::move(page));
  } else if (fetched.result.error_type.empty()) {
    scraper_->scrape(std::move(*fetched.result.response), std::move(page));
  } else {
    auto& result = fetched.result;
    scraper_->scrape_failure({std::move(result.request), result.error_type, result.error_message,
                              std::move(result.response)},
                             std::move(page));
  }
  pump();
}

void engine::store(page_outcome outcome, detail::page_ticket page,
                   std::function<void(const stored_outcome&)> then) {
  page.at(page_stage::storing);
  // Up to CONCURRENT_REQUESTS pages wait for their store without a download slot.
  pump_soon();
  scheduler_->async_store(
      std::move(outcome),
      [this, page = std::move(page), then = std::move(then)](stored_outcome stored) mutable {
        for (const auto& dropped : stored.dropped) {
          signals_.send(signals::request_dropped{dropped, spider_});
        }
        if (then) then(stored);
        page = {};  // stored: out of the ledger before the engine looks whether it is idle
        pump();
      });
}

// A page holds its download slot while it waits for robots.txt, is parsed and goes through the
// pipelines. Storing its outcome may be a round trip (a fleet worker's settle, a Redis
// dupefilter's check): up to CONCURRENT_REQUESTS pages wait for theirs without a slot, so
// downloads go on meanwhile, as Scrapy's downloader frees a slot once the response is in. Past
// that they hold slots again, so no more than twice CONCURRENT_REQUESTS pages are ever half done
// (fetched again after a crash, held in memory while Redis is away).
std::size_t engine::holding_download_slots() const {
  auto storing = ledger_->at(page_stage::storing);
  return ledger_->at(page_stage::robots) + ledger_->at(page_stage::answering) +
         ledger_->at(page_stage::parsing) + ledger_->at(page_stage::pipelines) + storing -
         std::min(storing, fetcher_->concurrency());
}

std::size_t engine::queued() const {
  return scheduler_->size();
}

std::size_t engine::in_flight() const {
  return ledger_->size();
}

// Idle: no page in the ledger, no transfer in the downloader (a robots.txt download is no
// page's), and the scheduler has nothing more.
void engine::check_idle() {
  if (pumping_ || !ledger_->empty() || fetcher_->transfers() > 0) return;
  if (phase_ == phase::running && !scheduler_->has_pending_requests()) {
    if (!idle_lets_close()) return;
    close_reason_ = "finished";
    finish();
  } else if (phase_ == phase::closing) {
    finish();
  }
}

// Scrapy's _spider_idle: the spider stays open when a handler scheduled requests (they are on
// their way through the dupefilter now) or threw dont_close_spider; then, as Scrapy's heartbeat
// does, spider_idle is sent again in 5 seconds if nothing else woke the engine.
bool engine::idle_lets_close() {
  if (!signals_.connected<signals::spider_idle>()) return true;
  if (idle_held_) return false;  // until the heartbeat, or until something is crawled
  bool close = signals_.send(signals::spider_idle{spider_});
  // A handler may have scheduled requests (stored, perhaps downloading already) or closed the
  // spider itself.
  if (phase_ != phase::running) return false;
  bool still_idle =
      ledger_->empty() && fetcher_->transfers() == 0 && !scheduler_->has_pending_requests();
  if (!still_idle) return false;
  if (close) return true;
  idle_held_ = true;
  idle_timer_.expires_after(std::chrono::seconds(5));
  idle_timer_.async_wait([this](boost::system::error_code error) {
    if (error) return;
    idle_held_ = false;
    check_idle();
  });
  return false;
}

void engine::crawl(request request) {
  if (signals_.connected<signals::request_scheduled>()) {
    signals_.send(signals::request_scheduled{request, spider_});
  }
  auto held = ledger_->enter(request.url, page_stage::storing);
  store({.requests = {std::move(request)}}, std::move(held));
}

// Through the robots.txt gate and the downloader middlewares, past the scheduler and the spider.
void engine::download(request request, std::function<void(download_result)> done) {
  fetcher_->download(std::move(request), std::move(done));
}

void engine::close_spider(std::string reason) {
  begin_close(reason);
}

void engine::close(std::string reason) {
  asio::post(io_, [this, reason = std::move(reason)] { begin_close(reason); });
}

// On the loop: takes effect before the next pump, so a limit stops the crawl where it is reached.
void engine::begin_close(const std::string& reason) {
  if (phase_ == phase::closing || phase_ == phase::closed) return;
  logger_->info("Closing spider ({})", reason);
  close_reason_ = reason;
  phase_ = phase::closing;
  // Downloads under way finish; requests still waiting for their slot's delay go back to the
  // queue (and to JOBDIR), so a long DOWNLOAD_DELAY cannot hold the close.
  restore_unsent(fetcher_->take_waiting(), "waiting for a download slot");
  scheduler_->begin_close();  // outcomes waiting through an outage get their last try now
  watch_close();
  check_idle();
}

// Every five seconds of the crawl's clock while the close waits: what holds it, so that a close
// that never ends says why without a debugger.
void engine::watch_close() {
  closing_since_ = crawl_clock::now();
  say_what_holds_the_close();
}

void engine::say_what_holds_the_close() {
  close_watch_.expires_after(std::chrono::seconds(5));
  close_watch_.async_wait([this](boost::system::error_code error) {
    if (error || phase_ != phase::closing) return;
    logger_->info("Closing spider ({}): waited {:.0f} s for {}", close_reason_,
                  seconds_since(closing_since_), close_holders());
    say_what_holds_the_close();
  });
}

std::string engine::close_holders() const {
  auto held = ledger_->holders();
  if (pumping_) {
    held += (held.empty() ? "" : " and ") + std::string(
                                                "the engine taking requests from the "
                                                "scheduler");
  }
  return held.empty() ? "nothing (the close is about to end)" : held;
}

void engine::restore_unsent(std::vector<request> requests, std::string_view were) {
  if (fetcher_->cancelled_downloads()) scraper_->downloads_were_cancelled();
  for (auto& request : requests) scheduler_->restore(std::move(request));
  if (!requests.empty()) {
    logger_->info("Put {} requests {} back in the queue", requests.size(), were);
  }
}

void engine::force_close(std::string reason) {
  asio::post(io_, [this, reason = std::move(reason)] {
    if (phase_ == phase::closed) return;
    restore_unsent(fetcher_->abort_all(), "in flight");
    if (phase_ != phase::closing) {
      close_reason_ = reason;
      phase_ = phase::closing;
      watch_close();
    }
    scheduler_->begin_close();
    check_idle();
  });
}

void engine::finish() {
  phase_ = phase::closed;
  fetcher_->stop();
  closespider_timer_.cancel();
  idle_timer_.cancel();
  close_watch_.cancel();
  scheduler_->async_close([this](std::exception_ptr error) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        logger_->error("Error closing the scheduler: {}", e.what());
      }
    }
    // Items that could not be stored make the crawl a failure, whatever else ended it.
    if (!scraper_->close()) close_reason_ = "feed_write_failed";
    try {
      spider_.closed(close_reason_);
    } catch (const std::exception& e) {
      logger_->error("Error in {}.closed(): {}", spider_.name(), e.what());
    }
    signals_.send(signals::spider_closed{spider_, close_reason_});
    stats_.set_value("finish_reason", close_reason_);
    stats_.set_value("finish_time", utc_timestamp());
    stats_.set_value("elapsed_time_seconds", seconds_since(started_));
    io_.stop();
  });
}

}  // namespace crawler
