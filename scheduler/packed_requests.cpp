#include "scheduler/packed_requests.h"

#include <stdexcept>

namespace crawler {
namespace {

// What a record's first byte says is there (besides the URL, always).
enum field : std::uint8_t {
  method_not_get = 1 << 0,
  has_body = 1 << 1,
  dont_filter_set = 1 << 2,
  from_shared = 1 << 3,
  has_headers = 1 << 4,
  has_callback = 1 << 5,
  has_errback = 1 << 6,
  has_lease = 1 << 7,
};
// The second byte: the lease's form and the meta's.
enum form : std::uint8_t {
  lease_is_number = 1 << 0,  // decimal digits without a leading zero: a varint
  meta_depth_int = 1 << 1,   // {"depth": N} and nothing else, N >= 0 an integer
  meta_depth_unsigned = 1 << 2,
  meta_packed = 1 << 3,      // any other non-empty meta, as MessagePack
  has_cb_kwargs = 1 << 4,    // as MessagePack
  has_cookies = 1 << 5,      // as MessagePack
};

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out += char(0x80 | (value & 0x7f));
    value >>= 7;
  }
  out += char(value);
}

void put_text(std::string& out, std::string_view text) {
  put_varint(out, text.size());
  out.append(text);
}

// JSON of any bytes (MessagePack keeps strings as they are; JSON text would need valid UTF-8).
void put_msgpack(std::string& out, const nlohmann::json& value) {
  std::vector<std::uint8_t> packed;
  nlohmann::json::to_msgpack(value, packed);
  put_text(out, std::string_view(reinterpret_cast<const char*>(packed.data()), packed.size()));
}

// Reads a record's fields in the order pack wrote them; a record is this queue's own bytes, so
// running past its end is a bug, not input: it throws std::logic_error.
struct reader {
  std::string_view rest;

  std::uint8_t byte() {
    if (rest.empty()) throw std::logic_error("packed request: record cut short");
    auto value = std::uint8_t(rest.front());
    rest.remove_prefix(1);
    return value;
  }
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
      auto next = byte();
      value |= std::uint64_t(next & 0x7f) << shift;
      if (!(next & 0x80)) return value;
    }
  }
  std::string_view text() {
    auto size = varint();
    if (size > rest.size()) throw std::logic_error("packed request: record cut short");
    auto value = rest.substr(0, size);
    rest.remove_prefix(size);
    return value;
  }
};

bool is_plain_number(std::string_view text) {
  return !text.empty() && text.size() <= 19 && (text == "0" || text.front() != '0') &&
         text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

std::uint32_t request_packer::hold(std::string_view text) {
  if (auto found = ids_.find(text); found != ids_.end()) {
    ++strings_[found->second].holders;
    return found->second;
  }
  std::uint32_t id;
  if (free_ids_.empty()) {
    id = std::uint32_t(strings_.size());
    strings_.emplace_back();
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
  }
  strings_[id] = {std::string(text), 1};
  ids_.emplace(strings_[id].text, id);
  return id;
}

void request_packer::let_go(std::uint32_t id) {
  auto& entry = strings_[id];
  if (--entry.holders > 0) return;
  ids_.erase(entry.text);
  entry.text = std::string();
  free_ids_.push_back(id);
}

// Layout: flags, forms, URL, then each field its flag announces: method, body, headers (a count,
// then name and value each, the first Referer as an empty name and a shared string's number),
// callback and errback (numbers), lease, meta.
void request_packer::pack(const request& request, std::string& out) {
  std::uint8_t flags = 0, forms = 0;
  if (request.method != "GET") flags |= method_not_get;
  if (!request.body.empty()) flags |= has_body;
  if (request.dont_filter) flags |= dont_filter_set;
  if (request.origin == request_origin::shared) flags |= from_shared;
  if (!request.headers.empty()) flags |= has_headers;
  if (!request.callback.empty()) flags |= has_callback;
  if (!request.errback.empty()) flags |= has_errback;
  if (!request.lease.empty()) flags |= has_lease;
  if (is_plain_number(request.lease)) forms |= lease_is_number;
  const auto& meta = request.meta;
  if (meta.is_object() && meta.empty()) {
    // nothing to write
  } else if (auto depth = meta.find("depth"); meta.is_object() && meta.size() == 1 &&
                                              depth != meta.end() &&
                                              depth->is_number_integer() && *depth >= 0) {
    forms |= depth->is_number_unsigned() ? meta_depth_unsigned : meta_depth_int;
  } else {
    forms |= meta_packed;
  }
  if (!request.cb_kwargs.is_object() || !request.cb_kwargs.empty()) forms |= has_cb_kwargs;
  if (!request.cookies.empty()) forms |= has_cookies;
  out += char(flags);
  out += char(forms);
  put_text(out, request.url);
  if (flags & method_not_get) put_text(out, request.method);
  if (flags & has_body) put_text(out, request.body);
  if (flags & has_headers) {
    put_varint(out, request.headers.size());
    bool referer_shared = false;
    for (const auto& [name, value] : request.headers) {
      if (!referer_shared && name == "Referer") {
        referer_shared = true;
        put_varint(out, 0);  // no header name is empty: this one is the shared Referer
        put_varint(out, hold(value));
        continue;
      }
      put_text(out, name);
      put_text(out, value);
    }
  }
  if (flags & has_callback) put_varint(out, hold(request.callback));
  if (flags & has_errback) put_varint(out, hold(request.errback));
  if (forms & lease_is_number) {
    put_varint(out, std::stoull(request.lease));
  } else if (flags & has_lease) {
    put_text(out, request.lease);
  }
  if (forms & (meta_depth_int | meta_depth_unsigned)) {
    put_varint(out, meta.at("depth").get<std::uint64_t>());
  } else if (forms & meta_packed) {
    put_msgpack(out, meta);
  }
  if (forms & has_cb_kwargs) put_msgpack(out, request.cb_kwargs);
  if (forms & has_cookies) put_msgpack(out, request.cookies);
}

request request_packer::unpack(std::string_view record, int priority, bool release) {
  reader in{record};
  request out;
  out.priority = priority;
  auto flags = in.byte();
  auto forms = in.byte();
  out.url = in.text();
  if (flags & method_not_get) out.method = in.text();
  if (flags & has_body) out.body = in.text();
  out.dont_filter = flags & dont_filter_set;
  if (flags & from_shared) out.origin = request_origin::shared;
  auto shared_text = [&](std::uint64_t id) -> std::string {
    std::string value = text(std::uint32_t(id));
    if (release) let_go(std::uint32_t(id));
    return value;
  };
  if (flags & has_headers) {
    auto count = in.varint();
    out.headers.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      auto name = in.text();
      if (name.empty()) {
        out.headers.emplace_back("Referer", shared_text(in.varint()));
      } else {
        out.headers.emplace_back(std::string(name), std::string(in.text()));
      }
    }
  }
  if (flags & has_callback) out.callback = shared_text(in.varint());
  if (flags & has_errback) out.errback = shared_text(in.varint());
  if (forms & lease_is_number) {
    out.lease = std::to_string(in.varint());
  } else if (flags & has_lease) {
    out.lease = in.text();
  }
  if (forms & meta_depth_int) {
    out.meta["depth"] = std::int64_t(in.varint());
  } else if (forms & meta_depth_unsigned) {
    out.meta["depth"] = std::uint64_t(in.varint());
  } else if (forms & meta_packed) {
    auto packed = in.text();
    out.meta = nlohmann::json::from_msgpack(packed.begin(), packed.end());
  }
  if (forms & has_cb_kwargs) {
    auto packed = in.text();
    out.cb_kwargs = nlohmann::json::from_msgpack(packed.begin(), packed.end());
  }
  if (forms & has_cookies) {
    auto packed = in.text();
    out.cookies = nlohmann::json::from_msgpack(packed.begin(), packed.end());
  }
  return out;
}

void request_packer::release(std::string_view record) {
  unpack(record, 0, true);
}

void packed_requests::push_back(const request& request) {
  std::string record;
  packer_->pack(request, record);
  std::string length;
  put_varint(length, record.size());
  bytes_.insert(bytes_.end(), length.begin(), length.end());
  bytes_.insert(bytes_.end(), record.begin(), record.end());
  bytes_.insert(bytes_.end(), length.rbegin(), length.rend());
  ++count_;
}

// The record that starts at `offset`; returns the offset just past it.
std::size_t packed_requests::record_at_front(std::size_t offset, std::string& record) const {
  std::size_t size = 0, length_bytes = 0;
  for (int shift = 0;; shift += 7) {
    auto next = std::uint8_t(bytes_[offset + length_bytes++]);
    size |= std::size_t(next & 0x7f) << shift;
    if (!(next & 0x80)) break;
  }
  auto start = bytes_.begin() + std::ptrdiff_t(offset + length_bytes);
  record.assign(start, start + std::ptrdiff_t(size));
  return offset + 2 * length_bytes + size;
}

// The record that ends at `end`; returns the offset where it starts.
std::size_t packed_requests::record_at_back(std::size_t end, std::string& record) const {
  std::size_t size = 0, length_bytes = 0;
  for (int shift = 0;; shift += 7) {
    auto next = std::uint8_t(bytes_[end - 1 - length_bytes++]);
    size |= std::size_t(next & 0x7f) << shift;
    if (!(next & 0x80)) break;
  }
  auto stop = bytes_.begin() + std::ptrdiff_t(end - length_bytes);
  record.assign(stop - std::ptrdiff_t(size), stop);
  return end - 2 * length_bytes - size;
}

request packed_requests::pop_front() {
  std::string record;
  auto next = record_at_front(0, record);
  bytes_.erase(bytes_.begin(), bytes_.begin() + std::ptrdiff_t(next));
  --count_;
  return packer_->unpack(record, priority_, true);
}

request packed_requests::pop_back() {
  std::string record;
  auto start = record_at_back(bytes_.size(), record);
  bytes_.erase(bytes_.begin() + std::ptrdiff_t(start), bytes_.end());
  --count_;
  return packer_->unpack(record, priority_, true);
}

void packed_requests::visit_front(std::size_t count,
                                  const std::function<void(const request&)>& visit) const {
  std::string record;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < count && i < count_; ++i) {
    offset = record_at_front(offset, record);
    visit(packer_->unpack(record, priority_, false));
  }
}

void packed_requests::visit_back(std::size_t count,
                                 const std::function<void(const request&)>& visit) const {
  // Found from the back, visited oldest first.
  count = std::min(count, count_);
  std::string record;
  std::size_t start = bytes_.size();
  for (std::size_t i = 0; i < count; ++i) start = record_at_back(start, record);
  for (std::size_t i = 0; i < count; ++i) {
    start = record_at_front(start, record);
    visit(packer_->unpack(record, priority_, false));
  }
}

void packed_requests::drop_front(std::size_t count) {
  std::string record;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < count && count_ > 0; ++i, --count_) {
    offset = record_at_front(offset, record);
    packer_->release(record);
  }
  bytes_.erase(bytes_.begin(), bytes_.begin() + std::ptrdiff_t(offset));
}

void packed_requests::drop_back(std::size_t count) {
  std::string record;
  std::size_t start = bytes_.size();
  for (std::size_t i = 0; i < count && count_ > 0; ++i, --count_) {
    start = record_at_back(start, record);
    packer_->release(record);
  }
  bytes_.erase(bytes_.begin() + std::ptrdiff_t(start), bytes_.end());
}

}  // namespace crawler
