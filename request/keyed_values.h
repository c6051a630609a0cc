// What a callback reads its request's meta and cb_kwargs through: a read-only view of a JSON
// object whose [] fails for a key it lacks, as a Python dict raises KeyError.
//
//   response.meta()["depth"]          // throws crawler::missing_key naming "depth" and the keys
//   response.meta().value("depth", 0) // a default instead
//   response.cb_kwargs().contains("page")
//
// nlohmann's const operator[] has undefined behaviour for a missing key (an abort in a debug
// build, garbage in a release one); this view checks first, so the mistake fails the callback
// that made it (spider_exceptions/crawler::missing_key) and the crawl goes on. It converts to the
// const nlohmann::json& it views for everything else.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace crawler {

/// A key a callback read that its meta or cb_kwargs does not hold.
class missing_key : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

class keyed_values {
 public:
  /// `what` names the object in errors: "meta" or "cb_kwargs".
  keyed_values(const nlohmann::json& values, std::string_view what)
      : values_(values), what_(what) {}

  /// The value under `key`; throws missing_key when there is none.
  const nlohmann::json& operator[](std::string_view key) const;
  bool contains(std::string_view key) const { return values_.contains(key); }
  /// The value under `key`, or `fallback` (nlohmann's value()).
  template <class Fallback>
  auto value(std::string_view key, Fallback&& fallback) const {
    return values_.value(std::string(key), std::forward<Fallback>(fallback));
  }
  bool empty() const { return values_.empty(); }
  std::size_t size() const { return values_.size(); }
  auto items() const { return values_.items(); }
  std::string dump(int indent = -1) const { return values_.dump(indent); }

  const nlohmann::json& json() const { return values_; }
  operator const nlohmann::json&() const { return values_; }
  friend bool operator==(const keyed_values& a, const nlohmann::json& b) { return a.values_ == b; }

 private:
  const nlohmann::json& values_;
  std::string_view what_;
};

}  // namespace crawler
