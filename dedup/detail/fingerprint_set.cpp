#include "dedup/detail/fingerprint_set.h"

#include <algorithm>

namespace crawler::dedup::detail {

fingerprint_set::fingerprint_set(std::size_t expected)
    : slots_(std::max<std::size_t>(16, expected + expected / 4 + 1)) {}

bool fingerprint_set::insert(const fingerprint& fp) {
  if (is_empty(fp)) {
    bool inserted = !has_zero_;
    has_zero_ = true;
    size_ += inserted;
    return inserted;
  }
  if ((size_ + 1) * 5 > slots_.size() * 4) grow();
  for (std::size_t i = home(fp);; i = (i + 1 == slots_.size() ? 0 : i + 1)) {
    fingerprint& slot = slots_[i];
    if (slot == fp) return false;
    if (is_empty(slot)) {
      slot = fp;
      ++size_;
      return true;
    }
  }
}

bool fingerprint_set::contains(const fingerprint& fp) const {
  if (is_empty(fp)) return has_zero_;
  for (std::size_t i = home(fp);; i = (i + 1 == slots_.size() ? 0 : i + 1)) {
    const fingerprint& slot = slots_[i];
    if (slot == fp) return true;
    if (is_empty(slot)) return false;
  }
}

void fingerprint_set::grow() {
  std::vector<fingerprint> old = std::move(slots_);
  slots_.assign(old.size() + old.size() / 2, fingerprint{});
  std::size_t kept = has_zero_;
  for (const auto& fp : old) {
    if (is_empty(fp)) continue;
    std::size_t i = home(fp);
    while (!is_empty(slots_[i])) i = (i + 1 == slots_.size() ? 0 : i + 1);
    slots_[i] = fp;
    ++kept;
  }
  size_ = kept;
}

}  // namespace crawler::dedup::detail
