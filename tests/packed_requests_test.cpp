// The memory queue's packed requests: every field comes back as it went in, from either end, and
// the strings they share are kept once, while a queued request names them.
#include "scheduler/packed_requests.h"

#include <gtest/gtest.h>

#include <optional>

#include <random>
#include <string>
#include <vector>

namespace {

using crawler::packed_requests;
using crawler::request;
using crawler::request_packer;

// Everything a request carries through a queue, written out for comparison.
std::string everything(const request& r) {
  auto json = r.to_json();
  json["lease"] = r.lease;
  json["meta_dump"] = r.meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A request of every shape a crawl makes: links with a Referer and a depth, form posts, retries
// with odd meta, shared requests, bytes that are not UTF-8.
request random_request(std::mt19937& random, int priority) {
  auto pick = [&](int n) { return int(random() % unsigned(n)); };
  request r{"http://host" + std::to_string(pick(5)) + ".test/p/" + std::to_string(random())};
  r.priority = priority;
  if (pick(4) == 0) r.method = pick(2) ? "POST" : "PUT";
  if (pick(4) == 0) r.body = std::string("a=1&b=\x80\xff\0z", 11);
  if (pick(3)) r.headers.emplace_back("Referer", "http://host0.test/from/" + std::to_string(pick(3)));
  if (pick(4) == 0) r.headers.emplace_back("X-Token", "secret " + std::to_string(pick(100)));
  if (pick(6) == 0) r.headers.insert(r.headers.begin(), {"Accept", "text/html"});
  if (pick(8) == 0) r.headers.emplace_back("Referer", "a second referer");
  switch (pick(5)) {
    case 0: break;
    case 1: r.meta["depth"] = pick(40); break;
    case 2: r.meta["depth"] = std::uint64_t(pick(40)); break;
    case 3:
      r.meta = {{"depth", -1}, {"retry_times", 2}, {"handle_httpstatus_list", {404, 500}},
                {"ratio", 0.1 + pick(10)}, {"name", std::string("\xe2\x82\xac \xc3", 5)}};
      break;
    case 4: r.meta["download_slot"] = "slot-" + std::to_string(pick(3)); break;
  }
  r.dont_filter = pick(5) == 0;
  if (pick(6) == 0) r.origin = crawler::request_origin::shared;
  if (pick(2)) r.callback = pick(2) ? "parse_item" : "parse_list";
  if (pick(4) == 0) r.errback = "on_error";
  if (pick(3) == 0) r.cb_kwargs = {{"page", pick(9)}, {"tag", std::string("\xff\x00z", 3)}};
  if (pick(4) == 0) r.cookies = {{"session", std::to_string(pick(99))}};
  switch (pick(4)) {
    case 0: break;
    case 1: r.lease = std::to_string(random()); break;
    case 2: r.lease = "007"; break;  // digits with a leading zero stay text
    case 3: r.lease = "L" + std::to_string(pick(1000)); break;
  }
  return r;
}

TEST(packed_requests, every_field_comes_back_from_either_end_in_order) {
  std::mt19937 random(7);
  request_packer packer;
  packed_requests level{packer, 3};
  std::deque<request> expected;
  for (int step = 0; step < 5000; ++step) {
    if (random() % 3 || expected.empty()) {
      auto r = random_request(random, 3);
      level.push_back(r);
      expected.push_back(r);
    } else if (random() % 2) {
      ASSERT_EQ(everything(level.pop_front()), everything(expected.front())) << step;
      expected.pop_front();
    } else {
      ASSERT_EQ(everything(level.pop_back()), everything(expected.back())) << step;
      expected.pop_back();
    }
    ASSERT_EQ(level.size(), expected.size());
  }
  std::vector<std::string> visited;
  level.for_each([&](const request& r) { visited.push_back(everything(r)); });
  ASSERT_EQ(visited.size(), expected.size());
  for (std::size_t i = 0; i < visited.size(); ++i) EXPECT_EQ(visited[i], everything(expected[i]));
  while (!level.empty()) level.pop_front();
  EXPECT_EQ(packer.shared_strings(), 0u);  // nothing queued names them any more
}

TEST(packed_requests, visiting_and_dropping_either_end_keeps_the_rest) {
  std::mt19937 random(11);
  request_packer packer;
  packed_requests level{packer, -2};
  std::vector<request> pushed;
  for (int i = 0; i < 50; ++i) {
    pushed.push_back(random_request(random, -2));
    level.push_back(pushed.back());
  }
  std::vector<std::string> front, back;
  level.visit_front(5, [&](const request& r) { front.push_back(everything(r)); });
  level.visit_back(5, [&](const request& r) { back.push_back(everything(r)); });
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(front[i], everything(pushed[i]));
    EXPECT_EQ(back[i], everything(pushed[45 + i]));  // oldest first
  }
  level.drop_front(5);
  level.drop_back(5);
  EXPECT_EQ(level.size(), 40u);
  EXPECT_EQ(everything(level.pop_front()), everything(pushed[5]));
  EXPECT_EQ(everything(level.pop_back()), everything(pushed[44]));
}

TEST(packed_requests, a_followed_link_takes_its_url_and_a_few_bytes) {
  request_packer packer;
  packed_requests level{packer, 0};
  std::string referer = "https://books.toscrape.com/catalogue/page-2.html";
  for (int i = 0; i < 1000; ++i) {
    request link{"https://books.toscrape.com/catalogue/book-" + std::to_string(10000 + i) +
                 "/index.html"};
    link.headers.emplace_back("Referer", referer);
    link.meta["depth"] = 3;
    link.lease = std::to_string(123456 + i);
    link.callback = "parse_book";
    level.push_back(link);
  }
  // A 58-byte URL: 58 + 1 length, 2 flag bytes, a header count, the Referer's and callback's
  // numbers, the depth, a 3-byte id and the record's two lengths.
  EXPECT_LE(level.bytes() / 1000, 58u + 13);
  EXPECT_EQ(packer.shared_strings(), 2u);
}

// A field a request does not have costs no byte: a bare GET is its URL, two flag bytes and the
// lengths; a callback adds its shared string's number (1 byte), a Referer a header count, the
// shared Referer's mark and its number (3 bytes); each alone, and both together.
TEST(packed_requests, a_field_a_request_lacks_costs_no_byte) {
  const std::string url = "https://books.toscrape.com/a";  // 28 bytes
  auto bytes_of = [&](bool callback, bool referer) {
    request_packer packer;
    packed_requests level{packer, 0};
    request r{url};
    if (callback) r.callback = "parse_book";
    if (referer) r.headers.emplace_back("Referer", "https://books.toscrape.com/");
    level.push_back(r);
    EXPECT_EQ(everything(level.pop_front()), everything(r));
    level.push_back(r);
    return level.bytes();
  };
  auto bare = bytes_of(false, false);
  EXPECT_EQ(bare, 1 + 2 + 1 + url.size() + 1);  // length, flags, URL's length, URL, length
  EXPECT_EQ(bytes_of(true, false), bare + 1);
  EXPECT_EQ(bytes_of(false, true), bare + 3);
  EXPECT_EQ(bytes_of(true, true), bare + 4);
}

// A lease id of digits packs as a number up to 19 of them (any fits 64 bits), the ids a fleet's
// queue gives (16 digits) among them; 20 digits, or a leading zero, stay text. Each comes back
// as it went in.
TEST(packed_requests, a_lease_of_up_to_19_digits_packs_as_a_number_and_comes_back_as_it_was) {
  auto packed_size = [](const std::string& lease) {
    request_packer packer;
    packed_requests level{packer, 0};
    request r{"http://a/"};
    r.lease = lease;
    level.push_back(r);
    std::optional<request> back;
    level.visit_front(1, [&](const request& taken) { back = taken; });
    EXPECT_TRUE(back && back->lease == lease) << lease;
    return level.bytes();
  };
  auto one = packed_size("7");
  auto nineteen = packed_size("9999999999999999999");
  auto twenty = packed_size("10000000000000000000");
  auto leading_zero = packed_size("0999999999999999999");
  EXPECT_LE(nineteen, one + 9) << "a 64-bit number is at most ten bytes as a varint";
  EXPECT_GE(twenty, one + 20) << "text: its twenty digits";
  EXPECT_GE(leading_zero, one + 19);
}

}  // namespace
