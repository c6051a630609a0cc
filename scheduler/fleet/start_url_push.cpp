#include "scheduler/fleet/start_url_push.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/use_future.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "scheduler/fleet/redis_queue.h"
#include "scheduler/fleet/start_request.h"

namespace crawler {
namespace {

constexpr std::size_t entries_per_round_trip = 1000;

}  // namespace

start_url_push::start_url_push(const settings& settings, std::string_view spider)
    : key_(spider_key(settings.get_string("REDIS_START_URLS_KEY"),
                      key_spider_name(settings, spider))),
      type_(start_urls_type_from(settings)),
      largest_(std::size_t(settings.get_int("SCHEDULER_MAX_ENTRY_SIZE"))),
      signer_(entry_signer::from_environment()) {
  if (signer_) signer_ = signer_->bound_to(key_);
}

void start_url_push::check(std::string& entry, const std::string& where,
                           std::uint64_t number) const {
  try {
    if (signer_ && entry.find_first_not_of(" \t") != std::string::npos) {
      auto text = std::string_view(entry).substr(entry.find_first_not_of(" \t"));
      auto id = fmt::format("{:016d}", number);
      entry = id + '|' +
              signer_->sign(text.starts_with('{') ? std::string(text)
                                                  : nlohmann::json{{"url", text}}.dump(),
                            id);
    }
    // Every worker would set it aside: better refused here, where a person reads why.
    if (entry.size() > largest_) {
      throw std::invalid_argument("an entry of " + std::to_string(entry.size()) +
                                  " bytes, over SCHEDULER_MAX_ENTRY_SIZE (" +
                                  std::to_string(largest_) + ")");
    }
    start_request_from(entry, signer_ ? &*signer_ : nullptr);
  } catch (const std::exception& error) {
    throw std::invalid_argument(where + ": " + error.what());
  }
}

void start_url_push::add(std::string entry, const std::string& where) {
  if (!signer_) check(entry, where, 0);  // signed ones once they have their numbers, in send
  entries_.push_back(std::move(entry));
  places_.push_back(where);
}

std::size_t start_url_push::send(redis::client& client) {
  if (signer_ && !entries_.empty()) {
    // The block's numbers, from <start key>:seq; a push refused below leaves a gap, no harm.
    auto reply = client
                     .async_command({"INCRBY", key_ + ":seq", std::to_string(entries_.size())},
                                    boost::asio::use_future)
                     .get();
    if (reply.is_error() || reply.integer < static_cast<long long>(entries_.size())) {
      throw std::runtime_error("numbering the start URLs from " + key_ + ":seq at " +
                               client.where().address() + " failed: " +
                               (reply.is_error() ? reply.str : reply.describe()));
    }
    auto number = std::uint64_t(reply.integer) - entries_.size() + 1;
    for (std::size_t i = 0; i < entries_.size(); ++i) check(entries_[i], places_[i], number++);
  }
  for (std::size_t start = 0; start < entries_.size(); start += entries_per_round_trip) {
    redis::command command{type_ == "set" ? "SADD" : type_ == "zset" ? "ZADD" : "RPUSH", key_};
    auto end = std::min(entries_.size(), start + entries_per_round_trip);
    for (auto entry = start; entry < end; ++entry) {
      if (type_ == "zset") command.push_back("0");  // equal scores: taken in byte order
      command.push_back(entries_[entry]);
    }
    auto reply = client.async_command(std::move(command), boost::asio::use_future).get();
    if (reply.is_error()) {
      throw std::runtime_error("pushing to " + key_ + " at " + client.where().address() +
                               " failed: " + reply.str);
    }
  }
  return entries_.size();
}

}  // namespace crawler
