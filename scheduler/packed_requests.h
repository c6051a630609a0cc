// Queued requests as bytes: what memory_queue keeps of each request in memory, at a fifth of a
// request's size.
//
//   crawler::request_packer packer;                 // one per queue: its shared strings
//   crawler::packed_requests level{packer, 0};    // the requests of priority 0
//   level.push_back(request);                       // packed
//   auto next = level.pop_front();                  // unpacked: equal to what was pushed
//
// A request object costs 256 bytes before its strings, and a followed link's strings repeat: its
// Referer is the page it was found on, as for every other link of that page, and its callback is
// one of the spider's few. Packed, a request is one record in a byte deque: a few flag bytes, its
// URL, and its other fields only when they are not the defaults, with the Referer, callback and
// errback as numbers into the packer's table of shared strings (each kept once, while a queued
// request names it). A link found by a crawl (a URL, a Referer, meta {"depth": N}, a JOBDIR
// id) takes its URL's length plus about 10 bytes. Every field comes back as it went in, but the
// fingerprint worked out ahead (request::remembered_fingerprint), which the scheduler has used
// by then.
// Not thread-safe: the queue's owner, the engine's loop, is the only user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "request/request.h"

namespace crawler {

/// The shared strings of one queue's packed requests, each with how many queued requests name it.
class request_packer {
 public:
  /// Appends `request`'s record (without its priority, which its level keeps) to `out`.
  void pack(const request& request, std::string& out);
  /// The request a record stands for, with `priority`. `release` drops its hold on shared
  /// strings (it leaves the queue); without it, the record stays queued (a visit).
  request unpack(std::string_view record, int priority, bool release);
  /// Drops a record's hold on shared strings without unpacking it.
  void release(std::string_view record);
  /// Shared strings held now.
  std::size_t shared_strings() const { return ids_.size(); }

 private:
  std::uint32_t hold(std::string_view text);
  const std::string& text(std::uint32_t id) const { return strings_[id].text; }
  void let_go(std::uint32_t id);

  struct shared {
    std::string text;
    std::uint32_t holders = 0;
  };
  std::unordered_map<std::string_view, std::uint32_t> ids_;  // views into strings_[id].text
  std::deque<shared> strings_;  // a deque: growing it moves no string the map views
  std::vector<std::uint32_t> free_ids_;
};

/// A deque of packed requests of one priority.
class packed_requests {
 public:
  packed_requests(request_packer& packer, int priority) : packer_(&packer), priority_(priority) {}

  void push_back(const request& request);
  request pop_front();
  request pop_back();
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  /// Bytes held (records and their lengths).
  std::size_t bytes() const { return bytes_.size(); }

  /// Visits the first (or last) `count` requests, oldest first, unpacked one at a time.
  void visit_front(std::size_t count, const std::function<void(const request&)>& visit) const;
  void visit_back(std::size_t count, const std::function<void(const request&)>& visit) const;
  /// Visits them all, oldest first.
  void for_each(const std::function<void(const request&)>& visit) const {
    visit_front(count_, visit);
  }
  /// Removes the first (or last) `count` requests.
  void drop_front(std::size_t count);
  void drop_back(std::size_t count);

 private:
  // A record is: its length (varint), the packed request, its length again (varint, written
  // backwards) so that the deque can be read from either end.
  std::size_t record_at_front(std::size_t offset, std::string& record) const;
  std::size_t record_at_back(std::size_t end, std::string& record) const;

  request_packer* packer_;
  int priority_;
  std::deque<char> bytes_;
  std::size_t count_ = 0;
};

}  // namespace crawler
