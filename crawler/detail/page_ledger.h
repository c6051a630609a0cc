// The ledger of pages in flight: every request from the moment the engine takes it from the
// scheduler to the moment its outcome is stored, with the stage it is at, and the work that is no
// page's but holds the crawl open all the same (the start requests' items in the pipelines, a
// component's download, requests a component scheduled on their way through the dupefilter).
//
//   auto page = ledger.enter(request.url, page_stage::downloading);
//   page.at(page_stage::parsing);   // the fetcher and the scraper mark the stages it passes
//   // ... the last copy of `page` let go: the page is out of the ledger
//
// A ticket is a shared handle: the page stays in the ledger while any copy of it lives, so a
// request that a close takes back from the downloader (its completion, which held the ticket,
// dropped) leaves the ledger with it. The crawl is idle when the ledger is empty, and a close that
// waits says what holds it by reading the ledger, stage by stage and page by page.
//
// On the engine's loop only: a job on the parse pool carries its ticket there and back, and lets
// it go on the loop.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>

namespace crawler::detail {

enum class page_stage {
  robots,       // waiting for its origin's robots.txt
  answering,    // a downloader middleware answered it: on its way back to the engine
  downloading,  // in the downloader: waiting for its slot, or transferring
  parsing,      // on the parse pool: its document built, or its callback run there
  pipelines,    // its items in the item pipelines, some waiting for one that answers later
  storing,      // its outcome on its way through the scheduler (dupefilter, JOBDIR, the fleet)
};
inline constexpr std::size_t page_stages = 6;

class page_ledger;

/// A page's place in the ledger (see above). A default-constructed ticket holds no page, and at()
/// on it does nothing: the work it stands for is held elsewhere.
class page_ticket {
 public:
  page_ticket() = default;
  /// The page has reached `stage`.
  void at(page_stage stage) const;
  explicit operator bool() const { return entry_ != nullptr; }

 private:
  friend class page_ledger;
  struct entry;
  explicit page_ticket(std::shared_ptr<entry> entry) : entry_(std::move(entry)) {}
  std::shared_ptr<entry> entry_;
};

class page_ledger : public std::enable_shared_from_this<page_ledger> {
 public:
  using ticket = page_ticket;

  /// Made shared: a ticket keeps its ledger alive, so one let go late (a handler the loop never
  /// ran, destroyed with it) finds its ledger still there.
  static std::shared_ptr<page_ledger> create() {
    return std::shared_ptr<page_ledger>(new page_ledger());
  }

  /// Puts `what` (a URL, or a few words for work that is no page's) in the ledger at `stage`.
  ticket enter(std::string what, page_stage stage);

  /// Called each time an entry leaves, from where its last ticket is let go (perhaps a
  /// destructor mid-call): the engine posts itself a look at whether the crawl is idle.
  void when_left(std::function<void()> left) { left_ = std::move(left); }

  bool empty() const { return entries_.empty(); }
  /// How many it holds, at every stage.
  std::size_t size() const { return entries_.size(); }
  /// How many are at `stage` now.
  std::size_t at(page_stage stage) const { return counts_[std::size_t(stage)]; }

  /// What the ledger holds, stage by stage, each with up to five of its pages, those that entered
  /// first:
  /// "1 download (https://a/), 2 pages being parsed (https://b/, https://c/) and ...".
  /// "" when it is empty.
  std::string holders() const;

 private:
  friend class page_ticket;
  friend struct page_ticket::entry;
  page_ledger() = default;

  std::unordered_set<const page_ticket::entry*> entries_;
  std::array<std::size_t, page_stages> counts_{};
  std::uint64_t entered_ = 0;
  std::function<void()> left_;
};

struct page_ticket::entry {
  entry(std::shared_ptr<page_ledger> ledger, std::string what, page_stage stage,
        std::uint64_t order)
      : ledger(std::move(ledger)), what(std::move(what)), stage(stage), order(order) {}
  entry(const entry&) = delete;
  entry& operator=(const entry&) = delete;
  ~entry();
  std::shared_ptr<page_ledger> ledger;
  std::string what;
  page_stage stage;
  std::uint64_t order;  // when it entered: holders() names the oldest first
};

}  // namespace crawler::detail
