#include "crawler/detail/fetcher.h"

#include <boost/asio/post.hpp>

#include "config/log.h"
#include "crawler/components.h"
#include "crawler/detail/host_hold.h"

namespace crawler::detail {
namespace {

namespace asio = boost::asio;

// Marks a component's download with its id, in its meta: the downloader may give it back with
// the other requests it holds, and a close must answer it, not queue it.
constexpr const char* component_download_key = "_component_download";

bool is_component_download(const request& request) {
  return request.meta.contains(component_download_key);
}

download_result failed(request request, std::string type, std::string message) {
  download_result result{std::move(request)};
  result.error_type = std::move(type);
  result.error_message = std::move(message);
  return result;
}

download_result forbidden_by_robots(request request) {
  return failed(std::move(request), "IgnoreRequest", "Forbidden by robots.txt");
}

}  // namespace

fetcher::fetcher(asio::io_context& io, const settings& settings, stats& stats, spider& spider,
                 signal_bus& signals, scheduler& pacer, page_ledger& ledger, html_limits limits,
                 std::function<void()> wake)
    : io_(io),
      stats_(stats),
      spider_(spider),
      signals_(signals),
      pacer_(pacer),
      ledger_(ledger),
      limits_(limits),
      wake_(std::move(wake)),
      logger_(get_logger("engine")),
      downloader_(std::make_unique<downloader>(io.get_executor(), settings, stats)) {
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
  if (pacer_.paces_hosts()) downloader_->leave_delays_to_scheduler(pacer_.paces_addresses());
}

fetcher::~fetcher() = default;

void fetcher::fetch(request request, const page_ledger::ticket& page, answer done) {
  if (!robots_ || !robots_gate::applies_to(request)) {
    return send_page(std::move(request), page, done);
  }
  page.at(page_stage::robots);
  robots_->check(std::move(request),
                 [this, page, done = std::move(done)](crawler::request request, bool allowed) {
                   if (allowed) return send_page(std::move(request), page, done);
                   done({forbidden_by_robots(std::move(request))});
                 });
}

void fetcher::send_page(request request, const page_ledger::ticket& page, const answer& done) {
  send(std::move(request), page,
       [this, done](download_result result) { on_downloaded(std::move(result), done); });
}

void fetcher::send(request request, const page_ledger::ticket& page, downloader::completion done) {
  std::optional<download_result> answered;
  try {
    for (auto& middleware : middlewares_) {
      middleware->process_request(request);
      if (auto response = middleware->answer(request)) {
        answered.emplace(download_result{request, std::move(response)});
        break;
      }
    }
  } catch (const ignore_request& ignored) {
    answered.emplace(failed(std::move(request), "IgnoreRequest", ignored.what()));
  }
  if (!answered) {
    page.at(page_stage::downloading);
    signals_.send(signals::request_reached_downloader{request, spider_});
    // One byte past HTML_MAX_SIZE when the spider reads only the page's document: the parser
    // refuses the page as too large then, as it would the whole body. A component reads its own
    // download whole.
    std::size_t body_limit =
        !is_component_download(request) && spider_.reads_only_the_document(request)
            ? limits_.max_bytes + 1
            : 0;
    return downloader_->fetch(std::move(request), std::move(done), body_limit);
  }
  // Answered on the loop, never inside the caller (the robots gate may be mid-call).
  page.at(page_stage::answering);
  asio::post(io_, [result = std::move(*answered), done = std::move(done)]() mutable {
    done(std::move(result));
  });
}

// Scrapy's engine.download() for the robots.txt gate: through the downloader middlewares,
// retries and redirects included, but past the scheduler and the spider.
void fetcher::fetch_unscheduled(request request, downloader::completion done) {
  send(std::move(request), {}, [this, done = std::move(done)](download_result result) mutable {
    if (stopped_) return;
    if (auto next = process_download(result)) {
      fetch_unscheduled(std::move(*next), std::move(done));
    } else {
      done(std::move(result));
    }
    wake_();  // its transfer's slot in the downloader is free
  });
}

// The downloader middlewares over a download on its way back, in reverse order. Returns the
// request to send instead (a retry, a redirect); an IgnoreRequest turns `result` into that
// failure, keeping its response.
std::optional<request> fetcher::process_download(download_result& result) {
  for (auto it = middlewares_.rbegin(); it != middlewares_.rend(); ++it) {
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

void fetcher::on_downloaded(download_result result, const answer& done) {
  if (stopped_) return;
  report_pace(result);
  fetched out;
  out.instead = process_download(result);
  if (!out.instead && !result.error_type.empty() && !result.response &&
      result.error_type != "IgnoreRequest") {
    logger_->error("Error downloading {}: {}", result.request.describe(), result.error_message);
  }
  out.result = std::move(result);
  done(std::move(out));
}

void fetcher::report_pace(const download_result& result) {
  if (!pacer_.paces_hosts()) return;
  host_pace pace{.delay = downloader_->delay_of(result.request),
                 .address = downloader_->address_of(result.request)};
  if (result.response) {
    pace.hold = hold_asked(result.response->status, result.response->header("Retry-After"));
  }
  pacer_.record_pace(result.request, pace);
}

// Through the robots.txt gate too, as Scrapy's RobotsTxtMiddleware sees engine.download's.
void fetcher::download(request request, std::function<void(download_result)> done) {
  auto id = next_component_download_++;
  request.meta[component_download_key] = id;
  auto ticket = ledger_.enter(request.url, page_stage::downloading);
  component_downloads_.emplace(id, component_download{std::move(done), ticket});
  if (!robots_ || !robots_gate::applies_to(request)) {
    return send_component_download(std::move(request));
  }
  ticket.at(page_stage::robots);
  robots_->check(std::move(request), [this](crawler::request request, bool allowed) {
    if (allowed) {
      send_component_download(std::move(request));
    } else {
      answer_component_download(forbidden_by_robots(std::move(request)));
    }
    wake_();
  });
}

const page_ledger::ticket& fetcher::ticket_of(const request& request) const {
  static const page_ledger::ticket none;
  auto id = request.meta.find(component_download_key);
  if (id == request.meta.end() || !id->is_number_unsigned()) return none;
  auto found = component_downloads_.find(id->get<std::uint64_t>());
  return found == component_downloads_.end() ? none : found->second.ticket;
}

void fetcher::send_component_download(request request) {
  const auto& ticket = ticket_of(request);
  send(std::move(request), ticket,
       [this](download_result result) { on_component_downloaded(std::move(result)); });
}

void fetcher::on_component_downloaded(download_result result) {
  if (stopped_) return;
  if (auto next = process_download(result)) {
    send_component_download(std::move(*next));
  } else {
    answer_component_download(std::move(result));
  }
  wake_();
}

void fetcher::answer_component_download(download_result result) {
  auto id = result.request.meta.find(component_download_key);
  auto found = id == result.request.meta.end() || !id->is_number_unsigned()
                   ? component_downloads_.end()
                   : component_downloads_.find(id->get<std::uint64_t>());
  if (found == component_downloads_.end()) return;
  auto answered = std::move(found->second);
  component_downloads_.erase(found);
  result.request.meta.erase(component_download_key);
  answered.done(std::move(result));
}

// Answered on the loop's next turn (the close that cancels it is mid-call), without the
// downloader middlewares: a retry of it would only be cancelled again.
void fetcher::cancel_component_download(request request) {
  downloads_cancelled_ = true;
  ticket_of(request).at(page_stage::answering);
  asio::post(io_,
             [this, cancelled = failed(std::move(request), "CancelledError",
                                       "the spider closed before the download ended")]() mutable {
               answer_component_download(std::move(cancelled));
               wake_();
             });
}

std::vector<request> fetcher::take_waiting() {
  return scheduled_of(downloader_->take_waiting(), false);
}

std::vector<request> fetcher::abort_all() {
  return scheduled_of(downloader_->abort_all(), true);
}

// What the downloader gave back, with what waits for robots.txt: the scheduled requests among
// them. A robots.txt download belongs to no spider: it is dropped. A component's download was
// never the queue's: a graceful close lets one the downloader held finish (a page's items wait
// on it); one still waiting for robots.txt, whose download the close drops, or any with
// `forced`, is answered as cancelled.
std::vector<request> fetcher::scheduled_of(std::vector<request> taken, bool forced) {
  std::erase_if(taken, robots_gate::is_robots_request);
  auto downloads = std::stable_partition(
      taken.begin(), taken.end(), [](const request& r) { return !is_component_download(r); });
  for (auto it = downloads; it != taken.end(); ++it) {
    if (forced) {
      cancel_component_download(std::move(*it));
    } else {
      downloader_->fetch(std::move(*it), [this](download_result result) {
        on_component_downloaded(std::move(result));
      });
    }
  }
  taken.erase(downloads, taken.end());
  if (robots_) {
    for (auto& request : robots_->take_waiting()) {
      if (is_component_download(request)) {
        cancel_component_download(std::move(request));
      } else {
        taken.push_back(std::move(request));
      }
    }
  }
  return taken;
}

}  // namespace crawler::detail
