#include "crawler/engine.h"

#include <cxxabi.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/url/parse.hpp>
#include <chrono>
#include <thread>
#include <typeinfo>

#include "config/log.h"
#include "crawler/builtin_middlewares.h"
#include "crawler/detail/host_hold.h"
#include "request/http_syntax.h"
#include "scheduler/shared_request.h"

namespace crawler {
namespace {

// HTML_PARSER, checked when the crawl starts rather than on its first page.
html_parser parser_named_in(const settings& settings) {
  try {
    return html_parser_named(settings.get_string("HTML_PARSER"));
  } catch (const std::invalid_argument& error) {
    throw settings_error(std::string("HTML_PARSER: ") + error.what());
  }
}

namespace asio = boost::asio;

// Before anything is built from it: the name is part of feed paths, the cache folder and keys.
spider& validly_named(spider& spider) {
  if (auto problem = spider_name_problem(spider.name()); !problem.empty()) {
    throw settings_error("spider name: " + problem);
  }
  return spider;
}

std::string type_name(const std::exception& error) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(error).name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : typeid(error).name();
  std::free(demangled);
  return name;
}

std::string referer_of(const request& request) {
  auto referer = find_header(request.headers, "Referer");
  return referer.empty() ? "None" : std::string(referer);
}

// Marks a component's download (engine::download) with its id, in its meta: the downloader may
// give it back with the other requests it holds, and a close must answer it, not queue it.
constexpr const char* component_download_key = "_component_download";

bool is_component_download(const request& request) {
  return request.meta.contains(component_download_key);
}

// What the spider's callbacks would parse: HTML, XML, or a body that does not say.
bool is_markup(const response& response) {
  auto type = response.header("Content-Type");
  return type.empty() || type.find("html") != std::string_view::npos ||
         type.find("xml") != std::string_view::npos;
}

}  // namespace

engine::engine(asio::io_context& io, const settings& settings, stats& stats, spider& spider)
    : io_(io),
      settings_(settings),
      stats_(stats),
      spider_(validly_named(spider)),
      logger_(get_logger("engine")),
      scheduler_(scheduler::create({settings, stats, spider.name(), io.get_executor()})),
      downloader_(std::make_unique<downloader>(io.get_executor(), settings, stats)),
      schemes_(settings),
      html_limits_{std::size_t(settings.get_int("HTML_MAX_SIZE")),
                   std::size_t(settings.get_int("HTML_MAX_DEPTH"))},
      html_parser_(parser_named_in(settings)),
      feeds_(
          std::make_unique<feed_exporter>(settings, stats, feed_exporter::parameters_for(spider))),
      context_{settings, stats, signals_, spider_, *this, io.get_executor()},
      idle_timer_(io),
      closespider_timer_(io),
      close_watch_(io),
      item_limit_(settings.get_int("CLOSESPIDER_ITEMCOUNT")),
      page_limit_(settings.get_int("CLOSESPIDER_PAGECOUNT")),
      error_limit_(settings.get_int("CLOSESPIDER_ERRORCOUNT")),
      flush_feeds_per_page_(settings.has("JOBDIR")) {
  // Built by name from the settings, built-ins included, in their orders (components.h). The
  // scheme check stays first whatever they say: it keeps pages from leading to local files.
  register_builtin_middlewares();
  spider_.crawl_stats_ = &stats_;
  downloader_middlewares_ = build_components<downloader_middleware>(context_);
  spider_middlewares_.push_back(scheme_spider_middleware(settings, stats));
  for (auto& middleware : build_components<spider_middleware>(context_)) {
    spider_middlewares_.push_back(std::move(middleware));
  }
  pipelines_ = build_components<item_pipeline>(context_);
  pipelines_wait_ = std::any_of(pipelines_.begin(), pipelines_.end(),
                                [](const auto& pipeline) { return pipeline->waits(); });
  extensions_ = build_components<extension>(context_);
  if (settings.get_bool("ROBOTSTXT_OBEY") &&
      !removes_component(settings, "DOWNLOADER_MIDDLEWARES",
                         "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware")) {
    robots_ = std::make_unique<robots_gate>(
        settings, stats,
        [this](request request, downloader::completion done) {
          fetch_unscheduled(std::move(request), std::move(done));
        },
        [this](const std::string& host, double seconds) {
          downloader_->set_crawl_delay(host, seconds);
        });
  }
  if (scheduler_->paces_hosts()) {
    downloader_->leave_delays_to_scheduler(scheduler_->paces_addresses());
  }
  scheduler_->on_ready([this] { pump(); });
  scheduler_->on_fatal([this](const std::string& reason) { begin_close(reason); });
  // A fleet's queue may hold what another spider, or a person, put there: never run a request
  // this spider cannot answer.
  scheduler_->set_request_check([this](const request& request) -> std::string {
    if (!spider_.has_callback(request.callback)) {
      return "spider " + spider_.name() + " has no callback \"" + request.callback + "\"";
    }
    if (!spider_.has_errback(request.errback)) {
      return "spider " + spider_.name() + " has no errback \"" + request.errback + "\"";
    }
    if (auto problem = request_syntax_problem(request); !problem.empty()) return problem;
    return spider_.check_request(request);
  });
  if (spider.parses_html || spider.concurrent_callbacks) {
    parsers_ =
        std::make_unique<asio::thread_pool>(std::max(1u, std::thread::hardware_concurrency()));
  }
}

engine::~engine() {
  spider_.crawl_stats_ = nullptr;
}

void engine::add_pipeline(std::unique_ptr<item_pipeline> pipeline) {
  pipelines_wait_ = pipelines_wait_ || pipeline->waits();
  pipelines_.push_back(std::move(pipeline));
}
void engine::add_downloader_middleware(std::unique_ptr<downloader_middleware> middleware) {
  downloader_middlewares_.push_back(std::move(middleware));
}
void engine::add_spider_middleware(std::unique_ptr<spider_middleware> middleware) {
  spider_middlewares_.push_back(std::move(middleware));
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
  started_ = std::chrono::steady_clock::now();
  if (signals_.connected<signals::request_dropped>()) scheduler_->report_dropped_requests();
  scheduler_->async_open([this](std::exception_ptr error) {
    if (error) return fail_startup(error);
    try {
      spider_.opened(settings_);
      for (auto& pipeline : pipelines_) pipeline->open(spider_);
    } catch (...) {
      return fail_startup(std::current_exception());
    }
    signals_.send(signals::spider_opened{spider_});
    logger_->info("Spider opened");
    for (auto& action : when_opened_) action();
    if (phase_ == phase::opening) phase_ = phase::running;
    if (auto timeout = settings_.get_double("CLOSESPIDER_TIMEOUT"); timeout > 0) {
      closespider_timer_.expires_after(
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(timeout)));
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
    for (auto& middleware : spider_middlewares_) middleware->process_start_requests(start);
    if (pipelines_wait_ && !start.items.empty()) {
      process_items_later(std::move(start.items), nullptr, nullptr, {}, true);
    } else {
      for (auto& item : start.items) {
        if (auto processed = process_item(std::move(item), nullptr)) export_item(*processed);
      }
    }
    if (signals_.connected<signals::request_scheduled>()) {
      for (const auto& request : start.requests) {
        signals_.send(signals::request_scheduled{request, spider_});
      }
    }
    store({.requests = std::move(start.requests)});
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

// Only a crawled page's items can wait (the start's are exported as they come), and only when the
// scheduler says a page's lease can be lost before its outcome is stored.
bool engine::items_wait_for_store(const std::string& lease) const {
  return !lease.empty() && scheduler_->items_wait_for_store();
}

void engine::store(page_outcome outcome, std::uint64_t flushed) {
  if (outcome.requests.empty() && outcome.lease.empty() && outcome.items.empty()) return;
  bool export_when_stored = items_wait_for_store(outcome.lease);
  if (export_when_stored) {
    if (auto found = responses_to_store_.find(outcome.lease); found != responses_to_store_.end()) {
      outcome.responses = found->second;
      responses_to_store_.erase(found);
    }
  }
  ++pending_stores_;
  scheduler_->async_store(std::move(outcome), [this, export_when_stored,
                                               flushed](stored_outcome stored) {
    for (const auto& dropped : stored.dropped) {
      signals_.send(signals::request_dropped{dropped, spider_});
    }
    // With JOBDIR the page's items went to the feeds before its outcome was stored (flush
    // number `flushed`): they stay only if JOBDIR recorded the page as done.
    if (!stored.recorded) {
      feeds_hold_unrecorded_ = true;
    } else if (flushed) {
      feeds_->recorded(flushed);
    }
    if (export_when_stored && stored.settled) {
      for (const auto& item : stored.items) export_item(item, nullptr, true);
      // Written through now: after a kill -9 the feed holds the items of the pages whose
      // outcome this worker stored, not fewer.
      if (!stored.items.empty() && !feeds_->flush()) feed_failed();
    } else if (export_when_stored && !stored.items.empty()) {
      stats_.inc_value("item_not_exported_count", std::int64_t(stored.items.size()));
    }
    --pending_stores_;
    pump();
  });
}

void engine::pump() {
  if (pumping_) {
    pump_again_ = true;
    return;
  }
  pumping_ = true;
  do {
    pump_again_ = false;
    while (phase_ == phase::running && !downloader_->needs_backout(holding_download_slots())) {
      auto next = scheduler_->next_request();
      if (!next) break;
      download(std::move(*next));
    }
  } while (pump_again_);
  pumping_ = false;
  check_idle();
}

void engine::download(request request) {
  idle_held_ = false;  // crawling again: the next idle is a new one
  auto downloaded = [this](download_result result) { on_downloaded(std::move(result)); };
  if (!robots_ || !robots_gate::applies_to(request)) return send(std::move(request), downloaded);
  robots_->check(std::move(request), [this, downloaded](crawler::request request, bool allowed) {
    if (allowed) {
      send(std::move(request), downloaded);
    } else {
      handle_failure(
          {std::move(request), "IgnoreRequest", "Forbidden by robots.txt", std::nullopt});
    }
    pump();
  });
}

void engine::send(request request, downloader::completion done) {
  std::optional<download_result> answered;
  try {
    for (auto& middleware : downloader_middlewares_) {
      middleware->process_request(request);
      if (auto response = middleware->answer(request)) {
        answered.emplace(download_result{request, std::move(response)});
        break;
      }
    }
  } catch (const ignore_request& ignored) {
    answered.emplace(download_result{std::move(request)});
    answered->error_type = "IgnoreRequest";
    answered->error_message = ignored.what();
  }
  if (!answered) {
    signals_.send(signals::request_reached_downloader{request, spider_});
    // One byte past HTML_MAX_SIZE when the spider reads only the page's document: the parser
    // refuses the page as too large then, as it would the whole body. A component reads its own
    // download whole.
    std::size_t body_limit = !is_component_download(request) &&
                                     spider_.reads_only_the_document(request)
                                 ? html_limits_.max_bytes + 1
                                 : 0;
    return downloader_->fetch(std::move(request), std::move(done), body_limit);
  }
  // Completed on the loop, never inside the caller (the robots gate may be mid-call); counted
  // as held until then so the spider cannot go idle with the callback or errback still to run.
  ++answered_here_;
  asio::post(io_, [this, result = std::move(*answered), done = std::move(done)]() mutable {
    --answered_here_;
    done(std::move(result));
  });
}

// Scrapy's engine.download(): through the downloader middlewares, retries and redirects
// included, but past the scheduler and the spider.
void engine::fetch_unscheduled(request request, downloader::completion done) {
  send(std::move(request), [this, done = std::move(done)](download_result result) mutable {
    if (phase_ == phase::closed) return;
    if (auto next = process_download(result)) {
      fetch_unscheduled(std::move(*next), std::move(done));
    } else {
      done(std::move(result));
    }
    pump();
  });
}

// The downloader middlewares over a download on its way back, in reverse order. Returns the
// request to send instead (a retry, a redirect); an IgnoreRequest turns `result` into that
// failure, keeping its response.
std::optional<request> engine::process_download(download_result& result) {
  for (auto it = downloader_middlewares_.rbegin(); it != downloader_middlewares_.rend(); ++it) {
    if (!result.response) {
      if (auto next = (*it)->process_exception(result.request, result)) return next;
      continue;
    }
    try {
      if (auto next = (*it)->process_response(result.request, *result.response)) return next;
    } catch (const ignore_request& ignored) {
      result.error_type = "IgnoreRequest";
      result.error_message = ignored.what();
      return std::nullopt;
    }
  }
  return std::nullopt;
}

void engine::on_downloaded(download_result result) {
  if (phase_ == phase::closed) return;
  if (scheduler_->paces_hosts()) {
    host_pace pace{.delay = downloader_->delay_of(result.request),
                   .address = downloader_->address_of(result.request)};
    if (result.response) {
      pace.hold =
          detail::hold_asked(result.response->status, result.response->header("Retry-After"));
    }
    scheduler_->record_pace(result.request, pace);
  }
  if (auto next = process_download(result)) {
    auto lease = result.request.lease;
    store({.lease = std::move(lease), .requests = {std::move(*next)}});
  } else if (result.error_type.empty()) {
    handle_response(std::move(*result.response));
  } else {
    if (!result.response && result.error_type != "IgnoreRequest") {
      logger_->error("Error downloading {}: {}", result.request.describe(), result.error_message);
    }
    handle_failure({std::move(result.request), result.error_type, result.error_message,
                    std::move(result.response)});
  }
  pump();
}

std::size_t engine::held_outside_downloader() const {
  return (robots_ ? robots_->waiting() : 0) + parsing_ + answered_here_ + pending_stores_ +
         pages_in_pipelines_;
}

// A page holds its download slot while it waits for robots.txt, is parsed and goes through the
// pipelines. Storing its outcome may be a round trip (a fleet worker's settle, a Redis
// dupefilter's check): up to CONCURRENT_REQUESTS pages wait for theirs without a slot, so
// downloads go on meanwhile, as Scrapy's downloader frees a slot once the response is in. Past
// that they hold slots again, so no more than twice CONCURRENT_REQUESTS pages are ever half done
// (fetched again after a crash, held in memory while Redis is away).
std::size_t engine::holding_download_slots() const {
  auto storing_with_slots = pending_stores_ - std::min(pending_stores_, downloader_->concurrency());
  return held_outside_downloader() - pending_stores_ + storing_with_slots;
}

std::size_t engine::queued() const {
  return scheduler_->size();
}

std::size_t engine::in_flight() const {
  return downloader_->active() + held_outside_downloader();
}

void engine::handle_response(response response) {
  response.parse_limits = html_limits_;
  response.parser = html_parser_;
  if (!parsers_ || response.status < 200 || response.status >= 300 || !is_markup(response)) {
    return deliver(std::move(response));
  }
  if (spider_.concurrent_callbacks) {
    // The callback runs on the pool with the parse: the loop only downloads and schedules.
    if (!admit(response)) return;
    ++parsing_;
    asio::post(*parsers_, [this, response = std::move(response)]() mutable {
      output out;
      auto outcome = call_spider(spider_, response, out);
      // Canonicalizing and hashing the page's links here, where the parse ran, leaves the crawl
      // thread only the dupefilter's lookup.
      for (auto& request : out.requests) {
        if (!request.dont_filter) remember_fingerprint(request, scheduler_->fingerprint_scheme());
      }
      asio::post(io_, [this, response = std::move(response), out = std::move(out),
                       outcome = std::move(outcome)]() mutable {
        --parsing_;
        settle_callback(outcome, response, out);
        count_page();
        pump();
      });
    });
    return;
  }
  ++parsing_;
  asio::post(*parsers_, [this, response = std::move(response)]() mutable {
    try {
      response.document();  // Gumbo, off the loop; the callback finds the tree ready
    } catch (const page_too_complex&) {
      // Measured again, cheaply, when the callback asks for the tree, and skipped there.
    }
    asio::post(io_, [this, response = std::move(response)]() mutable {
      --parsing_;
      deliver(std::move(response));
      pump();
    });
  });
}

void engine::deliver(response response) {
  if (!admit(response)) return;
  run_callback(response);
  count_page();
}

// Counts and logs the response and passes it through the spider middlewares' input side; false
// when one turned it away (then its failure is handled and the page counted).
bool engine::admit(response& response) {
  if (items_wait_for_store(response.request.lease)) {
    ++responses_to_store_[response.request.lease];
  } else {
    stats_.inc_value("response_received_count");
  }
  signals_.send(signals::response_received{response, response.request, spider_});
  if (logger_->should_log(spdlog::level::debug)) {
    // Scrapy's form: flags as a Python list after the referer, " ['cached']".
    std::string flags;
    for (const auto& flag : response.flags) flags += (flags.empty() ? " ['" : ", '") + flag + "'";
    if (!flags.empty()) flags += ']';
    logger_->debug("Crawled ({}) {} (referer: {}){}", response.status, response.request.describe(),
                   referer_of(response.request), flags);
  }
  for (auto& middleware : spider_middlewares_) {
    if (auto rejected = middleware->process_spider_input(response)) {
      handle_failure(std::move(*rejected));
      count_page();
      return false;
    }
  }
  return true;
}

// CLOSESPIDER_PAGECOUNT counts every response, those the spider middlewares turn away (a 404 to
// HttpError) too, as Scrapy's CloseSpider counts response_received.
void engine::count_page() {
  ++pages_;
  if (page_limit_ > 0 && pages_ == page_limit_) begin_close("closespider_pagecount");
}

void engine::run_callback(const response& response) {
  output out;
  auto outcome = call_spider(spider_, response, out);
  settle_callback(outcome, response, out);
}

engine::callback_outcome engine::call_spider(spider& spider, const response& response,
                                             output& out) {
  try {
    spider.call(response.request.callback, response, out);
    return {};
  } catch (const page_too_complex& skipped) {
    return {callback_outcome::kind::skipped, {}, skipped.reason(), skipped.what()};
  } catch (const std::exception& error) {
    return {callback_outcome::kind::failed, type_name(error), {}, error.what()};
  }
}

void engine::settle_callback(const callback_outcome& outcome, const response& response,
                             output& out) {
  if (outcome.kind == callback_outcome::kind::skipped) {
    // A hostile or broken page is the site's doing, not a spider error: skipped and counted.
    // Said once per reason at WARNING (a site of ten thousand deep pages would flood the log),
    // every page at DEBUG.
    bool first = skip_reasons_said_.insert(outcome.reason).second;
    logger_->log(first ? spdlog::level::warn : spdlog::level::debug, "Skipped {}: {}{}",
                 response.request.describe(), outcome.message,
                 first ? "; further pages skipped for this reason are logged at DEBUG, and "
                         "html/skipped_reason_count/" +
                             outcome.reason + " counts them all"
                       : std::string());
    stats_.inc_value("html/skipped_count");
    stats_.inc_value("html/skipped_reason_count/" + outcome.reason);
  } else if (outcome.kind == callback_outcome::kind::failed) {
    logger_->error("Spider error processing {} (referer: {})\n{}: {}", response.request.describe(),
                   referer_of(response.request), outcome.type, outcome.message);
    stats_.inc_value("spider_exceptions/" + outcome.type);
    signals_.send(signals::spider_error{outcome.type, outcome.message, response, spider_});
    count_error();
  }
  process_output(out, &response, response.request);
}

void engine::handle_failure(failure failure) {
  if (failure.request.errback.empty()) return store({.lease = failure.request.lease});
  output out;
  try {
    if (!spider_.call_errback(failure.request.errback, failure, out)) {
      logger_->error("Spider {} has no errback \"{}\" for {}", spider_.name(),
                     failure.request.errback, failure.request.describe());
      // Settled all the same: a fleet or JOBDIR must not retry it.
      return store({.lease = failure.request.lease});
    }
  } catch (const std::exception& error) {
    logger_->error("Spider error processing the failure of {}\n{}: {}", failure.request.describe(),
                   type_name(error), error.what());
    stats_.inc_value("spider_exceptions/" + type_name(error));
    count_error();
  }
  process_output(out, failure.response ? &*failure.response : nullptr, failure.request);
}

// What a callback yielded goes through the spider middlewares from the last to the first, as
// Scrapy runs process_spider_output by decreasing order.
void engine::process_output(output& out, const response* from, const request& page) {
  for (auto it = spider_middlewares_.rbegin(); it != spider_middlewares_.rend(); ++it) {
    if (from) {
      (*it)->process_spider_output(*from, out);
    } else {
      (*it)->process_start_requests(out);
    }
  }
  if (signals_.connected<signals::request_scheduled>()) {
    for (const auto& request : out.requests) {
      signals_.send(signals::request_scheduled{request, spider_});
    }
  }
  // A fleet worker exports a page's items once its outcome is stored: if it stalled past its
  // lease, the page is another worker's, whose items they are (and whose feed has them).
  bool export_now = !items_wait_for_store(page.lease);
  page_outcome outcome{.lease = page.lease, .requests = std::move(out.requests)};
  if (pipelines_wait_ && !out.items.empty()) {
    return process_items_later(std::move(out.items), from, &page, std::move(outcome), export_now);
  }
  for (auto& item : out.items) {
    auto processed = process_item(std::move(item), from);
    if (!processed) continue;
    if (export_now) export_item(*processed, from);
    outcome.items.push_back(std::move(*processed));
  }
  finish_page(std::move(outcome), page, !out.items.empty());
}

void engine::finish_page(page_outcome outcome, const request& page, bool had_items) {
  // With JOBDIR the page is marked done in the journal next: its items must be in the feeds
  // first, or a crash in between would lose them for good.
  if (flush_feeds_per_page_ && had_items && !feeds_->flush()) {
    // Its items did not all reach the feed, so the page is not done: it goes back to the queue,
    // which JOBDIR saves for the resume to crawl it again.
    feed_failed();
    responses_to_store_.erase(page.lease);  // counted when it is crawled again
    return scheduler_->restore(page);
  }
  store(std::move(outcome), flush_feeds_per_page_ && had_items ? feeds_->flushes() : 0);
}

std::optional<crawler::item> engine::process_item(crawler::item item, const response* from) {
  for (auto& pipeline : pipelines_) {
    if (!passes(*pipeline, item, from)) return std::nullopt;
  }
  log_scraped(item, from);
  return item;
}

bool engine::passes(item_pipeline& pipeline, crawler::item& item, const response* from) {
  try {
    pipeline.process_item(item, spider_);
    return true;
  } catch (...) {
    report_stopped(item, from, std::current_exception());
    return false;
  }
}

void engine::report_stopped(const crawler::item& item, const response* from,
                            std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const drop_item& dropped) {
    stats_.inc_value("item_dropped_count");
    stats_.inc_value("item_dropped_reasons_count/DropItem");
    logger_->warn("Dropped: {}\n{}", dropped.what(),
                  item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    signals_.send(signals::item_dropped{item, from, dropped.what(), spider_});
  } catch (const std::exception& failed) {
    logger_->error("Error processing {}\n{}: {}",
                   item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                   type_name(failed), failed.what());
    signals_.send(signals::item_error{item, from, failed.what(), spider_});
  } catch (...) {
    logger_->error("Error processing {}\nan exception that is not a std::exception",
                   item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    signals_.send(signals::item_error{item, from, "unknown exception", spider_});
  }
}

void engine::log_scraped(const crawler::item& item, const response* from) const {
  if (logger_->should_log(spdlog::level::debug)) {
    logger_->debug("Scraped from {}\n{}",
                   from ? "<" + std::to_string(from->status) + " " + from->url + ">" : "start",
                   item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

// A page's items, each in its slot, while a pipeline that waits holds some of them. The response
// is a copy: the callback's is gone by the time the last item is through.
struct engine::page_items {
  std::shared_ptr<const response> from;
  std::optional<request> page;  // none for the start requests' items
  page_outcome outcome;
  bool export_now = true;
  std::vector<std::optional<crawler::item>> items;
  std::size_t waiting = 0;
};

void engine::process_items_later(std::vector<crawler::item> items, const response* from,
                                 const request* page, page_outcome outcome, bool export_now) {
  auto held = std::make_shared<page_items>();
  if (from) held->from = std::make_shared<const response>(*from);
  if (page) held->page = *page;
  held->outcome = std::move(outcome);
  held->export_now = export_now;
  held->items.resize(items.size());
  held->waiting = items.size();
  ++pages_in_pipelines_;
  pipeline_pages_.insert(held.get());
  for (std::size_t slot = 0; slot < items.size(); ++slot) {
    run_pipelines(std::move(items[slot]), slot, 0, held);
  }
}

// From pipeline `next` on: plain pipelines in turn, until one that waits takes the item.
void engine::run_pipelines(crawler::item item, std::size_t slot, std::size_t next,
                           const std::shared_ptr<page_items>& held) {
  const response* from = held->from.get();
  for (; next < pipelines_.size(); ++next) {
    auto& pipeline = *pipelines_[next];
    if (!pipeline.waits()) {
      if (!passes(pipeline, item, from)) return item_through(held, slot, std::nullopt);
      continue;
    }
    pipeline.process_item_async(
        std::move(item), spider_,
        [this, held, slot, next](crawler::item item, std::exception_ptr error) {
          if (error) {
            report_stopped(item, held->from.get(), error);
            return item_through(held, slot, std::nullopt);
          }
          run_pipelines(std::move(item), slot, next + 1, held);
        });
    return;
  }
  log_scraped(item, from);
  item_through(held, slot, std::move(item));
}

void engine::item_through(const std::shared_ptr<page_items>& held, std::size_t slot,
                          std::optional<crawler::item> item) {
  held->items[slot] = std::move(item);
  if (--held->waiting > 0) return;
  --pages_in_pipelines_;
  pipeline_pages_.erase(held.get());
  const response* from = held->from.get();
  if (downloads_cancelled_ && held->page && !held->page->lease.empty()) {
    // The close cancelled downloads the pipelines waited for (files), perhaps this page's: the
    // page is not done, and goes back to the queue with its lease, to be crawled again on resume;
    // its items are not exported, so none is exported twice.
    logger_->info("Put {} back in the queue: its items were still in the item pipelines",
                  held->page->describe());
    responses_to_store_.erase(held->page->lease);  // counted when it is crawled again
    scheduler_->restore(*held->page);
    return pump();
  }
  for (auto& through : held->items) {
    if (!through) continue;
    if (held->export_now) export_item(*through, from);
    held->outcome.items.push_back(std::move(*through));
  }
  if (held->page) {
    finish_page(std::move(held->outcome), *held->page, !held->items.empty());
  } else {
    store(std::move(held->outcome));
  }
  pump();
}

// Through the robots.txt gate too, as Scrapy's RobotsTxtMiddleware sees engine.download's.
void engine::download(request request, std::function<void(download_result)> done) {
  auto id = next_component_download_++;
  request.meta[component_download_key] = id;
  component_downloads_.emplace(id, std::move(done));
  if (!robots_ || !robots_gate::applies_to(request)) {
    return send_component_download(std::move(request));
  }
  robots_->check(std::move(request), [this](crawler::request request, bool allowed) {
    if (allowed) {
      send_component_download(std::move(request));
    } else {
      download_result forbidden{std::move(request)};
      forbidden.error_type = "IgnoreRequest";
      forbidden.error_message = "Forbidden by robots.txt";
      answer_component_download(std::move(forbidden));
    }
    pump();
  });
}

void engine::send_component_download(request request) {
  send(std::move(request),
       [this](download_result result) { on_component_downloaded(std::move(result)); });
}

void engine::on_component_downloaded(download_result result) {
  if (phase_ == phase::closed) return;
  if (auto next = process_download(result)) {
    send_component_download(std::move(*next));
  } else {
    answer_component_download(std::move(result));
  }
  pump();
}

void engine::answer_component_download(download_result result) {
  auto id = result.request.meta.find(component_download_key);
  auto found = id == result.request.meta.end() || !id->is_number_unsigned()
                   ? component_downloads_.end()
                   : component_downloads_.find(id->get<std::uint64_t>());
  if (found == component_downloads_.end()) return;
  auto done = std::move(found->second);
  component_downloads_.erase(found);
  result.request.meta.erase(component_download_key);
  done(std::move(result));
}

// Answered on the loop's next turn (the close that cancels it is mid-call), without the
// downloader middlewares: a retry of it would only be cancelled again.
void engine::cancel_component_download(request request) {
  downloads_cancelled_ = true;
  download_result cancelled{std::move(request)};
  cancelled.error_type = "CancelledError";
  cancelled.error_message = "the spider closed before the download ended";
  ++answered_here_;
  asio::post(io_, [this, cancelled = std::move(cancelled)]() mutable {
    --answered_here_;
    answer_component_download(std::move(cancelled));
    pump();
  });
}

void engine::export_item(const crawler::item& item, const response* from, bool counted) {
  if (!feeds_->export_item(item)) feed_failed();
  if (!counted) stats_.inc_value("item_scraped_count");
  signals_.send(signals::item_scraped{item, from, spider_});
  ++items_;
  if (item_limit_ > 0 && items_ == item_limit_) begin_close("closespider_itemcount");
}

// A feed that cannot be written (full disk) stops the crawl: crawling on would scrape items only
// to lose them. What was written stays.
void engine::feed_failed() {
  if (phase_ == phase::running || phase_ == phase::opening) begin_close("feed_write_failed");
}

void engine::count_error() {
  ++errors_;
  if (error_limit_ > 0 && errors_ == error_limit_) begin_close("closespider_errorcount");
}

void engine::check_idle() {
  if (pumping_ || pending_stores_ > 0 || downloader_->active() > 0) return;
  if (held_outside_downloader() > 0) return;
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
  bool still_idle = pending_stores_ == 0 && downloader_->active() == 0 &&
                    held_outside_downloader() == 0 && !scheduler_->has_pending_requests();
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
  store({.requests = {std::move(request)}});
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
  restore_unsent(downloader_->take_waiting(), "waiting for a download slot");
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
  std::vector<std::string> held;
  auto stage = [&held](std::size_t count, std::string_view one, std::string_view many) {
    if (count) held.push_back(std::to_string(count) + " " + std::string(count == 1 ? one : many));
  };
  stage(downloader_->active(), "download", "downloads");
  stage(robots_ ? robots_->waiting() : 0, "request waiting for robots.txt",
        "requests waiting for robots.txt");
  stage(parsing_, "page being parsed", "pages being parsed");
  stage(answered_here_, "answer on its way to a callback", "answers on their way to callbacks");
  if (pages_in_pipelines_) {
    std::string urls;
    std::size_t listed = 0;
    for (const auto* held : pipeline_pages_) {
      if (listed++ == 5) {
        urls += ", ...";
        break;
      }
      urls += (urls.empty() ? "" : ", ") + (held->from   ? held->from->url
                                            : held->page ? held->page->url
                                                         : "(a start request's items)");
    }
    stage(pages_in_pipelines_, "page's items in the item pipelines (" + urls + ")",
          "pages' items in the item pipelines (" + urls + ")");
  }
  stage(pending_stores_, "page's outcome being stored by the scheduler",
        "pages' outcomes being stored by the scheduler");
  if (pumping_) held.push_back("the engine taking requests from the scheduler");
  if (held.empty()) return "nothing (the close is about to end)";
  std::string out;
  for (std::size_t i = 0; i < held.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == held.size() ? " and " : ", ") + held[i];
  }
  return out;
}

// What the downloader gave back goes to the queue, with what waits for a robots.txt download.
// A robots.txt download itself belongs to no spider: it is dropped.
void engine::restore_unsent(std::vector<request> requests, std::string_view were, bool forced) {
  std::erase_if(requests, robots_gate::is_robots_request);
  // A component's download was never the queue's: a close lets one the downloader held finish (a
  // page's items wait on it); one still waiting for robots.txt, whose download the close drops,
  // or any with force_close, is answered as cancelled.
  auto downloads = std::stable_partition(
      requests.begin(), requests.end(), [](const request& r) { return !is_component_download(r); });
  for (auto it = downloads; it != requests.end(); ++it) {
    if (forced) {
      cancel_component_download(std::move(*it));
    } else {
      downloader_->fetch(std::move(*it), [this](download_result result) {
        on_component_downloaded(std::move(result));
      });
    }
  }
  requests.erase(downloads, requests.end());
  if (robots_) {
    for (auto& request : robots_->take_waiting()) {
      if (is_component_download(request)) {
        cancel_component_download(std::move(request));
      } else {
        requests.push_back(std::move(request));
      }
    }
  }
  for (auto& request : requests) scheduler_->restore(std::move(request));
  if (!requests.empty()) {
    logger_->info("Put {} requests {} back in the queue", requests.size(), were);
  }
}

void engine::force_close(std::string reason) {
  asio::post(io_, [this, reason = std::move(reason)] {
    if (phase_ == phase::closed) return;
    restore_unsent(downloader_->abort_all(), "in flight", true);
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
    for (auto& pipeline : pipelines_) {
      try {
        pipeline->close(spider_);
      } catch (const std::exception& e) {
        logger_->error("Error closing an item pipeline: {}", e.what());
      }
    }
    // The resume crawls again the pages JOBDIR could not record as done: their items go.
    if (feeds_hold_unrecorded_) feeds_->take_back_unrecorded();
    // Items that could not be stored make the crawl a failure, whatever else ended it.
    if (!feeds_->close()) close_reason_ = "feed_write_failed";
    try {
      spider_.closed(close_reason_);
    } catch (const std::exception& e) {
      logger_->error("Error in {}.closed(): {}", spider_.name(), e.what());
    }
    signals_.send(signals::spider_closed{spider_, close_reason_});
    stats_.set_value("finish_reason", close_reason_);
    stats_.set_value("finish_time", utc_timestamp());
    stats_.set_value(
        "elapsed_time_seconds",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    io_.stop();
  });
}

}  // namespace crawler
