// The fetcher: Scrapy's Downloader as the engine sees it. A request on its way to the downloader
// passes the robots.txt gate (ROBOTSTXT_OBEY) and the downloader middlewares, each of which may
// answer it or turn it away; its response or error comes back through the middlewares in
// reverse order, which may send a request instead (a retry, a redirect).
//
//   fetcher.fetch(std::move(request), page, [](detail::fetched fetched) { ... });
//
// It also downloads for components (engine::download: the Files pipeline, robots.txt itself),
// through the same gate and middlewares but past the scheduler and the spider, and reports what
// each download said of its host's pace to a scheduler that paces hosts. Every request it holds
// is in the page ledger at its stage: waiting for robots.txt, answered by a middleware, or in
// the downloader.
//
// On the engine's loop only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "crawler/detail/page_ledger.h"
#include "crawler/download_result.h"
#include "crawler/downloader.h"
#include "crawler/middleware.h"
#include "crawler/parse/html.h"
#include "crawler/robots_gate.h"
#include "crawler/signals.h"
#include "crawler/spider.h"
#include "scheduler/scheduler.h"

namespace crawler::detail {

/// What became of a request the engine scheduled.
struct fetched {
  /// Its response, or the error that ended it (with the response, when a middleware turned one
  /// away: an IgnoreRequest).
  download_result result;
  /// A downloader middleware's request to schedule instead (a retry, a redirect): `result` is
  /// then the download it replaces.
  std::optional<request> instead;
};

class fetcher {
 public:
  using answer = std::function<void(fetched)>;

  /// `pacer`: the scheduler, told each download's pace when it paces hosts. `wake`: called when
  /// a component's download is answered (a slot in the downloader is free again).
  fetcher(boost::asio::io_context& io, const settings& settings, stats& stats, spider& spider,
          signal_bus& signals, scheduler& pacer, page_ledger& ledger, html_limits limits,
          std::function<void()> wake);
  ~fetcher();
  fetcher(const fetcher&) = delete;
  fetcher& operator=(const fetcher&) = delete;

  /// The downloader middlewares, in their order (components.h builds them).
  std::vector<std::unique_ptr<downloader_middleware>>& middlewares() { return middlewares_; }

  /// Fetches a scheduled request, `page` marked at each stage; `done` runs once, on the loop.
  void fetch(request request, const page_ledger::ticket& page, answer done);
  /// Downloads `request` for a component: `done` gets the download as the middlewares leave it.
  void download(request request, std::function<void(download_result)> done);

  /// Whether the engine should hand over no more requests now: CONCURRENT_REQUESTS reached,
  /// counting `held_elsewhere` pages that hold a download slot outside the downloader.
  bool needs_backout(std::size_t held_elsewhere) const {
    return downloader_->needs_backout(held_elsewhere);
  }
  /// CONCURRENT_REQUESTS.
  std::size_t concurrency() const { return downloader_->concurrency(); }
  /// Transfers in the downloader, robots.txt downloads included (no page holds those).
  std::size_t transfers() const { return downloader_->active(); }

  /// A graceful close: the scheduled requests still waiting for their download slot or for
  /// robots.txt, to go back to the queue. A component's download waiting for its slot stays (a
  /// page's items wait on it); one waiting for robots.txt is answered as cancelled.
  std::vector<request> take_waiting();
  /// A forced close: every scheduled request not yet answered, to go back to the queue; every
  /// component's download is answered as cancelled.
  std::vector<request> abort_all();
  /// Whether a close cancelled a component's download (whose page's items may be incomplete).
  bool cancelled_downloads() const { return downloads_cancelled_; }
  /// The crawl is over: downloads that still end are let go unanswered.
  void stop() { stopped_ = true; }

 private:
  struct component_download {
    std::function<void(download_result)> done;
    page_ledger::ticket ticket;  // holds the ledger from download() to its answer
  };

  void send_page(request request, const page_ledger::ticket& page, const answer& done);
  void send(request request, const page_ledger::ticket& page, downloader::completion done);
  void fetch_unscheduled(request request, downloader::completion done);
  std::optional<request> process_download(download_result& result);
  void on_downloaded(download_result result, const answer& done);
  void report_pace(const download_result& result);
  void send_component_download(request request);
  void on_component_downloaded(download_result result);
  void answer_component_download(download_result result);
  void cancel_component_download(request request);
  const page_ledger::ticket& ticket_of(const request& request) const;
  std::vector<request> scheduled_of(std::vector<request> taken, bool forced);

  boost::asio::io_context& io_;
  stats& stats_;
  spider& spider_;
  signal_bus& signals_;
  scheduler& pacer_;
  page_ledger& ledger_;
  html_limits limits_;
  std::function<void()> wake_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<downloader> downloader_;
  std::vector<std::unique_ptr<downloader_middleware>> middlewares_;
  std::unique_ptr<robots_gate> robots_;  // with ROBOTSTXT_OBEY
  // What components asked download() for, by the id their request's meta carries.
  std::map<std::uint64_t, component_download> component_downloads_;
  std::uint64_t next_component_download_ = 0;
  bool downloads_cancelled_ = false;
  bool stopped_ = false;
};

}  // namespace crawler::detail
