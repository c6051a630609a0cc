// Memory for one document's parse, taken from a few large blocks and given back all at once with
// the document: a parser's nodes, names and text are many small pieces that die together, and
// malloc and free one piece at a time cost as much as the parse itself (Gumbo's allocator, the
// libxml2 builder's strings).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace crawler::detail {

class arena {
 public:
  /// `expected`: about how much the document will take, the size of the first block.
  explicit arena(std::size_t expected) : block_size_(std::max<std::size_t>(expected, 16 * 1024)) {}

  /// `size` bytes aligned to `alignment` (a power of two), not zeroed.
  void* allocate(std::size_t size, std::size_t alignment = alignof(std::max_align_t)) {
    auto padding = (alignment - reinterpret_cast<std::uintptr_t>(next_) % alignment) % alignment;
    if (size + padding > left_) {
      // Doubling blocks: a large page takes a handful of them.
      auto bytes = std::max(size + alignment, block_size_);
      block_size_ *= 2;
      blocks_.emplace_back(new std::byte[bytes]);
      next_ = blocks_.back().get();
      left_ = bytes;
      padding = (alignment - reinterpret_cast<std::uintptr_t>(next_) % alignment) % alignment;
    }
    void* result = next_ + padding;
    next_ += padding + size;
    left_ -= padding + size;
    return result;
  }

  /// A copy of `text` that lives as long as the arena.
  std::string_view copy(std::string_view text) {
    if (text.empty()) return {};
    auto* copied = static_cast<char*>(allocate(text.size(), 1));
    std::memcpy(copied, text.data(), text.size());
    return {copied, text.size()};
  }

 private:
  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::byte* next_ = nullptr;
  std::size_t left_ = 0;
  std::size_t block_size_;
};

}  // namespace crawler::detail
