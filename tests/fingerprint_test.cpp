#include "request/fingerprint.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "config/settings.h"
#include "request/canonical_url.h"
#include "tree_paths.h"

using namespace crawler::dedup;
using nlohmann::json;

namespace {

json load_table() {
  std::ifstream in(crawler::fixtures::fixtures_dir() / "canonical_urls.json");
  return json::parse(in);
}

std::string unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

}  // namespace

TEST(request_fingerprint, matches_scrapy_test_vectors_for_both_schemes) {
  EXPECT_EQ(request_fingerprint("GET", "http://example.com/").hex(),
            "cebe46deeab7ee5915824a38cf73ee6f7eb0aba5");
  EXPECT_EQ(
      request_fingerprint("GET", "http://example.com/", "", fingerprint_scheme::scrapy_2_6).hex(),
      "628735d3a16b67b1dd5fbfbd10a15f2c28362bbd");
}

TEST(request_fingerprint, upper_cases_the_method_as_scrapy_request_does) {
  EXPECT_EQ(request_fingerprint("get", "http://example.com/"),
            request_fingerprint("GET", "http://example.com/"));
  EXPECT_NE(request_fingerprint("POST", "http://example.com/"),
            request_fingerprint("GET", "http://example.com/"));
}

TEST(request_fingerprint, ignores_the_fragment_and_query_order) {
  EXPECT_EQ(request_fingerprint("GET", "http://example.com/?b=2&a=1#x"),
            request_fingerprint("GET", "http://example.com/?a=1&b=2"));
}

TEST(canonicalize_url, matches_w3lib_on_every_url_of_the_table) {
  json table = load_table();
  ASSERT_GE(table.size(), 60u);
  for (const auto& row : table) {
    const std::string url = row["url"];
    SCOPED_TRACE("url: " + json(url).dump());
    EXPECT_EQ(canonicalize_url(url), row["canonical"].get<std::string>());
  }
}

TEST(request_fingerprint, matches_scrapy_and_scrapy_redis_on_every_url_of_the_table) {
  json table = load_table();
  std::size_t scrapy_redis_rows = 0;
  for (const auto& row : table) {
    const std::string url = row["url"];
    SCOPED_TRACE("url: " + json(url).dump());
    std::string method = row.value("method", "GET");
    std::string body = unhex(row.value("body_hex", ""));
    if (row.contains("fingerprint_2_7")) {
      EXPECT_EQ(request_fingerprint(method, url, body).hex(),
                row["fingerprint_2_7"].get<std::string>());
    }
    if (row.contains("fingerprint_2_7_direct")) {
      EXPECT_EQ(request_fingerprint(method, url, body).hex(),
                row["fingerprint_2_7_direct"].get<std::string>());
    }
    if (row.contains("fingerprint_2_6")) {
      EXPECT_EQ(request_fingerprint(method, url, body, fingerprint_scheme::scrapy_2_6).hex(),
                row["fingerprint_2_6"].get<std::string>());
    }
    if (row.contains("fingerprint_scrapy_redis")) {
      ++scrapy_redis_rows;
      EXPECT_EQ(request_fingerprint(method, url, body, fingerprint_scheme::scrapy_redis_0_8).hex(),
                row["fingerprint_scrapy_redis"].get<std::string>());
    }
  }
  EXPECT_GE(scrapy_redis_rows, 50u);  // the POST with a body among them
}

TEST(canonicalize_url, rejects_an_unbalanced_ipv6_bracket_naming_the_url) {
  try {
    canonicalize_url("http://[::1/path");
    FAIL() << "expected url_error";
  } catch (const url_error& error) {
    EXPECT_NE(std::string(error.what()).find("http://[::1/path"), std::string::npos)
        << error.what();
  }
}

TEST(fingerprint, hex_round_trips_and_rejects_malformed_text) {
  auto fp = request_fingerprint("GET", "http://example.com/");
  EXPECT_EQ(fingerprint::from_hex(fp.hex()), fp);
  EXPECT_EQ(fingerprint::from_hex("CEBE46DEEAB7EE5915824A38CF73EE6F7EB0ABA5"), fp);
  EXPECT_FALSE(fingerprint::from_hex("cebe46"));
  EXPECT_FALSE(fingerprint::from_hex("zebe46deeab7ee5915824a38cf73ee6f7eb0aba5"));
}

TEST(fingerprint_scheme, is_read_from_settings_and_unknown_values_are_refused) {
  crawler::settings settings;
  EXPECT_EQ(fingerprint_scheme_from(settings), fingerprint_scheme::scrapy_2_7);
  settings.set_from_string("REQUEST_FINGERPRINTER_IMPLEMENTATION=2.6");
  EXPECT_EQ(fingerprint_scheme_from(settings), fingerprint_scheme::scrapy_2_6);
  settings.set_from_string("REQUEST_FINGERPRINTER_IMPLEMENTATION=scrapy-redis-0.8");
  EXPECT_EQ(fingerprint_scheme_from(settings), fingerprint_scheme::scrapy_redis_0_8);
  settings.set_from_string("REQUEST_FINGERPRINTER_IMPLEMENTATION=2.8");
  EXPECT_THROW(fingerprint_scheme_from(settings), crawler::settings_error);
  // Set to "" (a crawl file's "REQUEST_FINGERPRINTER_IMPLEMENTATION": ""), a value like any
  // other, refused as Scrapy 2.8's RequestFingerprinter refuses it ("Got an invalid value"), not
  // read as unset.
  settings.set("REQUEST_FINGERPRINTER_IMPLEMENTATION", "");
  try {
    fingerprint_scheme_from(settings);
    ADD_FAILURE() << "an empty REQUEST_FINGERPRINTER_IMPLEMENTATION was read as unset";
  } catch (const crawler::settings_error& refused) {
    EXPECT_TRUE(std::string(refused.what())
                    .starts_with("REQUEST_FINGERPRINTER_IMPLEMENTATION: unknown value ''"))
        << refused.what();
  }
}
