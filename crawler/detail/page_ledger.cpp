#include "crawler/detail/page_ledger.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace crawler::detail {
namespace {

struct stage_words {
  std::string_view one, many;
};

// In the order a page passes them, as the close's log line lists them.
constexpr std::array<stage_words, page_stages> words{{
    {"request waiting for robots.txt", "requests waiting for robots.txt"},
    {"answer on its way to a callback", "answers on their way to callbacks"},
    {"download", "downloads"},
    {"page being parsed", "pages being parsed"},
    {"page's items in the item pipelines", "pages' items in the item pipelines"},
    {"page's outcome being stored by the scheduler",
     "pages' outcomes being stored by the scheduler"},
}};
constexpr std::size_t pages_named_per_stage = 5;

}  // namespace

void page_ticket::at(page_stage stage) const {
  if (!entry_ || entry_->stage == stage) return;
  auto& counts = entry_->ledger->counts_;
  --counts[std::size_t(entry_->stage)];
  ++counts[std::size_t(stage)];
  entry_->stage = stage;
}

page_ledger::ticket page_ledger::enter(std::string what, page_stage stage) {
  auto made = std::make_shared<page_ticket::entry>(shared_from_this(), std::move(what), stage,
                                                    entered_++);
  entries_.insert(made.get());
  ++counts_[std::size_t(stage)];
  return ticket(std::move(made));
}

page_ticket::entry::~entry() {
  ledger->entries_.erase(this);
  --ledger->counts_[std::size_t(stage)];
  if (ledger->left_) ledger->left_();
}

std::string page_ledger::holders() const {
  // Listed only when a close has waited: sorting here costs a page nothing on its walk.
  std::array<std::vector<const page_ticket::entry*>, page_stages> named;
  for (const auto* held : entries_) named[std::size_t(held->stage)].push_back(held);
  for (auto& pages : named) {
    auto shown = std::min(pages.size(), pages_named_per_stage);
    std::partial_sort(pages.begin(), pages.begin() + std::ptrdiff_t(shown), pages.end(),
                      [](const auto* a, const auto* b) { return a->order < b->order; });
    pages.resize(shown);
  }
  std::vector<std::string> stages;
  for (std::size_t stage = 0; stage < page_stages; ++stage) {
    auto count = counts_[stage];
    if (count == 0) continue;
    std::string said = std::to_string(count) + " ";
    said += count == 1 ? words[stage].one : words[stage].many;
    said += " (";
    for (std::size_t i = 0; i < named[stage].size(); ++i) {
      said += (i == 0 ? "" : ", ") + named[stage][i]->what;
    }
    said += count > named[stage].size() ? ", ...)" : ")";
    stages.push_back(std::move(said));
  }
  std::string out;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == stages.size() ? " and " : ", ") + stages[i];
  }
  return out;
}

}  // namespace crawler::detail
