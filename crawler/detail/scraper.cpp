#include "crawler/detail/scraper.h"

#include <cxxabi.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <thread>
#include <typeinfo>
#include <utility>

#include "config/log.h"
#include "request/http_syntax.h"

namespace crawler::detail {
namespace {

namespace asio = boost::asio;

// How many requests a callback on the parse pool yields before they go on to the scheduler:
// a few megabytes of requests, handed over a few hundred times for a page of a million links.
constexpr std::size_t links_per_hand_over = 4096;

// HTML_PARSER, checked when the crawl starts rather than on its first page.
html_parser parser_named_in(const settings& settings) {
  try {
    return html_parser_named(settings.get_string("HTML_PARSER"));
  } catch (const std::invalid_argument& error) {
    throw settings_error(std::string("HTML_PARSER: ") + error.what());
  }
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

// What the spider's callbacks would parse: HTML, XML, or a body that does not say.
bool is_markup(const response& response) {
  auto type = response.header("Content-Type");
  return type.empty() || type.find("html") != std::string_view::npos ||
         type.find("xml") != std::string_view::npos;
}

std::string item_text(const crawler::item& item) {
  return item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

// The response is a copy: the callback's is gone by the time the last item is through.
struct scraper::page_items {
  std::shared_ptr<const response> from;
  std::optional<request> page;  // none for the start requests' items
  page_outcome outcome;
  bool export_now = true;
  std::vector<std::optional<crawler::item>> items;
  std::size_t waiting = 0;
  page_ledger::ticket ticket;
};

scraper::scraper(asio::io_context& io, const settings& settings, stats& stats, spider& spider,
                 signal_bus& signals, const scheduler& queue, hooks hooks)
    : io_(io),
      stats_(stats),
      spider_(spider),
      signals_(signals),
      queue_(queue),
      hooks_(std::move(hooks)),
      logger_(get_logger("engine")),
      html_limits_{std::size_t(settings.get_int("HTML_MAX_SIZE")),
                   std::size_t(settings.get_int("HTML_MAX_DEPTH"))},
      html_parser_(parser_named_in(settings)),
      feeds_(
          std::make_unique<feed_exporter>(settings, stats, feed_exporter::parameters_for(spider))),
      flush_feeds_per_page_(settings.has("JOBDIR")),
      item_limit_(settings.get_int("CLOSESPIDER_ITEMCOUNT")),
      page_limit_(settings.get_int("CLOSESPIDER_PAGECOUNT")),
      error_limit_(settings.get_int("CLOSESPIDER_ERRORCOUNT")) {
  if (spider.parses_html || spider.concurrent_callbacks) {
    parsers_ =
        std::make_unique<asio::thread_pool>(std::max(1u, std::thread::hardware_concurrency()));
  }
}

scraper::~scraper() {
  {
    std::lock_guard lock(hand_over_mutex_);
    abandoned_ = true;
  }
  handed_over_.notify_all();
  parsers_.reset();
}

void scraper::add_pipeline(std::unique_ptr<item_pipeline> pipeline) {
  pipelines_wait_ = pipelines_wait_ || pipeline->waits();
  pipelines_.push_back(std::move(pipeline));
}

void scraper::open() {
  for (auto& pipeline : pipelines_) pipeline->open(spider_);
}

void scraper::start(output start, page_ledger::ticket page) {
  for (auto& middleware : middlewares_) middleware->process_start_requests(start);
  if (pipelines_wait_ && !start.items.empty()) {
    process_items_later(std::move(start.items), nullptr, nullptr, {}, true, page);
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
  store({.requests = std::move(start.requests)}, std::move(page));
}

void scraper::scrape(response response, page_ledger::ticket page) {
  page.at(page_stage::parsing);
  response.parse_limits = html_limits_;
  response.parser = html_parser_;
  if (!parsers_ || response.status < 200 || response.status >= 300 || !is_markup(response)) {
    return deliver(std::move(response), std::move(page));
  }
  if (spider_.concurrent_callbacks) {
    // The callback runs on the pool with the parse: the loop only downloads and schedules.
    if (!admit(response, page)) return;
    return call_concurrently(std::move(response), std::move(page));
  }
  asio::post(*parsers_, [this, response = std::move(response), page = std::move(page)]() mutable {
    try {
      response.document();  // Gumbo, off the loop; the callback finds the tree ready
    } catch (const page_too_complex&) {
      // Measured again, cheaply, when the callback asks for the tree, and skipped there.
    }
    asio::post(io_, [this, response = std::move(response), page = std::move(page)]() mutable {
      deliver(std::move(response), std::move(page));
    });
  });
}

void scraper::call_concurrently(response response, page_ledger::ticket page) {
  asio::post(*parsers_, [this, response = std::move(response), page = std::move(page)]() mutable {
    output out;
    // A page's outcome is stored in one step where the scheduler asks for it (a fleet's settle);
    // elsewhere its links go on as they are yielded, a batch at a time.
    if (!queue_.items_wait_for_store()) {
      out.hand_over_every(links_per_hand_over, [this, &response](std::vector<request>& yielded) {
        hand_over(yielded, response);
      });
    }
    auto outcome = call_spider(spider_, response, out);
    // Ended with the callback: a spider middleware adding requests to `out` on the loop would
    // hand them to the loop it runs on, and wait for itself.
    out.hand_over_every(0, {});
    // What the scheduler will need of the page's links, worked out here, where the parse ran.
    for (auto& request : out.requests) queue_.prepare(request);
    asio::post(io_, [this, response = std::move(response), out = std::move(out),
                     outcome = std::move(outcome), page = std::move(page)]() mutable {
      settle_callback(outcome, response, out, std::move(page));
      count_page();
    });
  });
}

void scraper::hand_over(std::vector<request>& yielded, const response& from) {
  auto batch = std::exchange(yielded, {});
  for (auto& request : batch) queue_.prepare(request);
  auto taken = std::make_shared<bool>(false);  // under hand_over_mutex_
  asio::post(io_, [this, batch = std::move(batch), &from, taken]() mutable {
    store_yielded(std::move(batch), from);
    {
      std::lock_guard lock(hand_over_mutex_);
      *taken = true;
    }
    handed_over_.notify_all();
  });
  std::unique_lock lock(hand_over_mutex_);
  handed_over_.wait(lock, [&] { return *taken || abandoned_; });
}

// Requests a callback yielded before it returned: through the spider middlewares' output side
// and stored as the outcome of no page (the page's own outcome, stored when the callback is done,
// settles it), as Scrapy's middlewares see each request while the callback goes on.
void scraper::store_yielded(std::vector<request> requests, const response& from) {
  output part;
  part.requests = std::move(requests);
  auto page = from.request;
  page.lease.clear();
  process_output(part, &from, page, {});
}

void scraper::deliver(response response, page_ledger::ticket page) {
  if (!admit(response, page)) return;
  output out;
  auto outcome = call_spider(spider_, response, out);
  settle_callback(outcome, response, out, std::move(page));
  count_page();
}

// Counts and logs the response and passes it through the spider middlewares' input side; false
// when one turned it away (then its failure is handled and the page counted).
bool scraper::admit(response& response, page_ledger::ticket& page) {
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
  for (auto& middleware : middlewares_) {
    if (auto rejected = middleware->process_spider_input(response)) {
      scrape_failure(std::move(*rejected), std::move(page));
      count_page();
      return false;
    }
  }
  return true;
}

// CLOSESPIDER_PAGECOUNT counts every response, those the spider middlewares turn away (a 404 to
// HttpError) too, as Scrapy's CloseSpider counts response_received.
void scraper::count_page() {
  ++pages_;
  if (page_limit_ > 0 && pages_ == page_limit_) hooks_.close("closespider_pagecount");
}

void scraper::count_error() {
  ++errors_;
  if (error_limit_ > 0 && errors_ == error_limit_) hooks_.close("closespider_errorcount");
}

scraper::callback_outcome scraper::call_spider(spider& spider, const response& response,
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

void scraper::settle_callback(const callback_outcome& outcome, const response& response,
                              output& out, page_ledger::ticket page) {
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
  process_output(out, &response, response.request, std::move(page));
}

void scraper::scrape_failure(failure failure, page_ledger::ticket page) {
  page.at(page_stage::parsing);
  if (failure.request.errback.empty()) {
    return store({.lease = failure.request.lease}, std::move(page));
  }
  output out;
  try {
    if (!spider_.call_errback(failure.request.errback, failure, out)) {
      logger_->error("Spider {} has no errback \"{}\" for {}", spider_.name(),
                     failure.request.errback, failure.request.describe());
      // Settled all the same: a fleet or JOBDIR must not retry it.
      return store({.lease = failure.request.lease}, std::move(page));
    }
  } catch (const std::exception& error) {
    logger_->error("Spider error processing the failure of {}\n{}: {}", failure.request.describe(),
                   type_name(error), error.what());
    stats_.inc_value("spider_exceptions/" + type_name(error));
    count_error();
  }
  process_output(out, failure.response ? &*failure.response : nullptr, failure.request,
                 std::move(page));
}

// What a callback yielded goes through the spider middlewares from the last to the first, as
// Scrapy runs process_spider_output by decreasing order.
void scraper::process_output(output& out, const response* from, const request& page,
                             page_ledger::ticket ticket) {
  for (auto it = middlewares_.rbegin(); it != middlewares_.rend(); ++it) {
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
    return process_items_later(std::move(out.items), from, &page, std::move(outcome), export_now,
                               std::move(ticket));
  }
  for (auto& item : out.items) {
    auto processed = process_item(std::move(item), from);
    if (!processed) continue;
    if (export_now) export_item(*processed, from);
    outcome.items.push_back(std::move(*processed));
  }
  finish_page(std::move(outcome), page, !out.items.empty(), std::move(ticket));
}

void scraper::finish_page(page_outcome outcome, const request& page, bool had_items,
                          page_ledger::ticket ticket) {
  // With JOBDIR the page is marked done in the journal next: its items must be in the feeds
  // first, or a crash in between would lose them for good.
  if (flush_feeds_per_page_ && had_items && !feeds_->flush()) {
    // Its items did not all reach the feed, so the page is not done: it goes back to the queue,
    // which JOBDIR saves for the resume to crawl it again.
    feed_failed();
    responses_to_store_.erase(page.lease);  // counted when it is crawled again
    ticket = {};                            // out of the ledger as it goes back to the queue
    return hooks_.put_back(page);
  }
  store(std::move(outcome), std::move(ticket),
        flush_feeds_per_page_ && had_items ? feeds_->flushes() : 0);
}

// Only a crawled page's items can wait (the start's are exported as they come), and only when the
// scheduler says a page's lease can be lost before its outcome is stored.
bool scraper::items_wait_for_store(const std::string& lease) const {
  return !lease.empty() && queue_.items_wait_for_store();
}

void scraper::store(page_outcome outcome, page_ledger::ticket page, std::uint64_t flushed) {
  if (outcome.requests.empty() && outcome.lease.empty() && outcome.items.empty()) return;
  bool export_when_stored = items_wait_for_store(outcome.lease);
  if (export_when_stored) {
    if (auto found = responses_to_store_.find(outcome.lease); found != responses_to_store_.end()) {
      outcome.responses = found->second;
      responses_to_store_.erase(found);
    }
  }
  hooks_.store(std::move(outcome), std::move(page),
               [this, export_when_stored, flushed](const stored_outcome& stored) {
                 // With JOBDIR the page's items went to the feeds before its outcome was stored
                 // (flush number `flushed`): they stay only if JOBDIR recorded the page as done.
                 if (!stored.recorded) {
                   feeds_hold_unrecorded_ = true;
                 } else if (flushed) {
                   feeds_->recorded(flushed);
                 }
                 if (export_when_stored && stored.settled) {
                   for (const auto& item : stored.items) export_item(item, nullptr, true);
                   // Written through now: after a kill -9 the feed holds the items of the pages
                   // whose outcome this worker stored, not fewer.
                   if (!stored.items.empty() && !feeds_->flush()) feed_failed();
                 } else if (export_when_stored && !stored.items.empty()) {
                   stats_.inc_value("item_not_exported_count", std::int64_t(stored.items.size()));
                 }
               });
}

std::optional<crawler::item> scraper::process_item(crawler::item item, const response* from) {
  for (auto& pipeline : pipelines_) {
    if (!passes(*pipeline, item, from)) return std::nullopt;
  }
  log_scraped(item, from);
  return item;
}

bool scraper::passes(item_pipeline& pipeline, crawler::item& item, const response* from) {
  try {
    pipeline.process_item(item, spider_);
    return true;
  } catch (...) {
    report_stopped(item, from, std::current_exception());
    return false;
  }
}

void scraper::report_stopped(const crawler::item& item, const response* from,
                             std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const drop_item& dropped) {
    stats_.inc_value("item_dropped_count");
    stats_.inc_value("item_dropped_reasons_count/DropItem");
    logger_->warn("Dropped: {}\n{}", dropped.what(), item_text(item));
    signals_.send(signals::item_dropped{item, from, dropped.what(), spider_});
  } catch (const std::exception& failed) {
    logger_->error("Error processing {}\n{}: {}", item_text(item), type_name(failed),
                   failed.what());
    signals_.send(signals::item_error{item, from, failed.what(), spider_});
  } catch (...) {
    logger_->error("Error processing {}\nan exception that is not a std::exception",
                   item_text(item));
    signals_.send(signals::item_error{item, from, "unknown exception", spider_});
  }
}

void scraper::log_scraped(const crawler::item& item, const response* from) const {
  if (logger_->should_log(spdlog::level::debug)) {
    logger_->debug("Scraped from {}\n{}",
                   from ? "<" + std::to_string(from->status) + " " + from->url + ">" : "start",
                   item_text(item));
  }
}

void scraper::process_items_later(std::vector<crawler::item> items, const response* from,
                                  const request* page, page_outcome outcome, bool export_now,
                                  page_ledger::ticket ticket) {
  auto held = std::make_shared<page_items>();
  if (from) held->from = std::make_shared<const response>(*from);
  if (page) held->page = *page;
  held->outcome = std::move(outcome);
  held->export_now = export_now;
  held->items.resize(items.size());
  held->waiting = items.size();
  ticket.at(page_stage::pipelines);
  held->ticket = std::move(ticket);
  for (std::size_t slot = 0; slot < items.size(); ++slot) {
    run_pipelines(std::move(items[slot]), slot, 0, held);
  }
}

// From pipeline `next` on: plain pipelines in turn, until one that waits takes the item.
void scraper::run_pipelines(crawler::item item, std::size_t slot, std::size_t next,
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

void scraper::item_through(const std::shared_ptr<page_items>& held, std::size_t slot,
                           std::optional<crawler::item> item) {
  held->items[slot] = std::move(item);
  if (--held->waiting > 0) return;
  // The last item is through: the page leaves the ledger with this ticket, or goes on with it.
  auto ticket = std::move(held->ticket);
  const response* from = held->from.get();
  if (downloads_cancelled_ && held->page && !held->page->lease.empty()) {
    // The close cancelled downloads the pipelines waited for (files), perhaps this page's: the
    // page is not done, and goes back to the queue with its lease, to be crawled again on resume;
    // its items are not exported, so none is exported twice.
    logger_->info("Put {} back in the queue: its items were still in the item pipelines",
                  held->page->describe());
    responses_to_store_.erase(held->page->lease);  // counted when it is crawled again
    ticket = {};
    return hooks_.put_back(*held->page);
  }
  for (auto& through : held->items) {
    if (!through) continue;
    if (held->export_now) export_item(*through, from);
    held->outcome.items.push_back(std::move(*through));
  }
  if (held->page) {
    finish_page(std::move(held->outcome), *held->page, !held->items.empty(), std::move(ticket));
  } else {
    store(std::move(held->outcome), std::move(ticket));
  }
}

void scraper::export_item(const crawler::item& item, const response* from, bool counted) {
  if (!feeds_->export_item(item)) feed_failed();
  if (!counted) stats_.inc_value("item_scraped_count");
  signals_.send(signals::item_scraped{item, from, spider_});
  ++items_;
  if (item_limit_ > 0 && items_ == item_limit_) hooks_.close("closespider_itemcount");
}

// A feed that cannot be written (full disk) stops the crawl: crawling on would scrape items only
// to lose them. What was written stays.
void scraper::feed_failed() {
  hooks_.close("feed_write_failed");
}

bool scraper::close() {
  for (auto& pipeline : pipelines_) {
    try {
      pipeline->close(spider_);
    } catch (const std::exception& e) {
      logger_->error("Error closing an item pipeline: {}", e.what());
    }
  }
  // The resume crawls again the pages JOBDIR could not record as done: their items go.
  if (feeds_hold_unrecorded_) feeds_->take_back_unrecorded();
  return feeds_->close();
}

}  // namespace crawler::detail
