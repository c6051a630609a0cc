// The differential suite for spiders written in C++, with Scrapy 2.8 as the oracle: each spider
// here has its twin in tests/fixtures/scrapy_shop_spiders.py, and both crawl the same shop on
// loopback (shop_server.py): a login form with a CSRF token, two users each in a cookie jar of
// their own, a redirect after the login, an order that answers 503 before it answers (a retry),
// orders that fail to an errback (404, 403, and a 500 that retries give up on), an RSS feed for
// an XMLFeedSpider and a CSV feed for a CSVFeedSpider. Their feeds (JSON lines, JSON, CSV, XML)
// are compared item by item, field by field and record by record (compare_feeds.py); every
// difference must be one docs/scrapy-differences.md lists.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "crawl_fixture.h"
#include "crawler/csv_feed_spider.h"
#include "crawler/parse/form_request.h"
#include "crawler/parse/item_loader.h"
#include "crawler/xml_feed_spider.h"
#include "redis_server.h"
#include "scrapy_oracle.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::python_server;

nlohmann::json or_null(const std::optional<std::string>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

// Python's str.strip() of ASCII text.
std::string strip(const std::string& text) {
  auto first = text.find_first_not_of(" \t\n\r\f\v");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n\r\f\v") - first + 1);
}

namespace p = crawler::processors;

// scrapy_shop_spiders.py's OrderLoader: its fields' processors.
const crawler::item_type order_type(
    "Order", {{"heading"},
              {"line_items",
               {.input = p::map_compose({p::remove_tags, p::strip}), .output = p::join(" | ")}},
              {"amount", {.input = p::map_compose({p::strip})}}});

// scrapy_shop_spiders.py's Shop, written as a Scrapy user ports it.
class shop_spider : public crawler::spider {
 public:
  explicit shop_spider(std::string base) : spider("shop"), base_(std::move(base)) {
    callback("parse_login", &shop_spider::parse_login);
    callback("parse_account", &shop_spider::parse_account);
    callback("parse_order", &shop_spider::parse_order);
    errback("order_failed", &shop_spider::order_failed);
  }

  void start_requests(crawler::output& out) override {
    for (std::string user : {"alice", "bob"}) {
      crawler::request login{base_ + "/login"};
      login.callback = "parse_login";
      login.meta["cookiejar"] = user;
      login.cb_kwargs["user"] = user;
      login.dont_filter = true;
      out.request(std::move(login));
    }
  }

  void parse_login(const crawler::response& response, crawler::output& out) {
    auto user = response.cb_kwargs()["user"].get<std::string>();
    out.request(crawler::form_request::from_response(
        response, {.formname = "login",
                   .formdata = {{"username", user}, {"password", passwords.at(user)}},
                   .callback = "parse_account",
                   .meta = {{"cookiejar", response.meta()["cookiejar"]}},
                   .cb_kwargs = {{"user", user}},
                   .dont_filter = true}));
  }

  void parse_account(const crawler::response& response, crawler::output& out) {
    for (const auto& href : response.css("a.order::attr(href)").getall()) {
      crawler::request order{response.urljoin(href)};
      order.callback = "parse_order";
      order.errback = "order_failed";
      order.meta["cookiejar"] = response.meta()["cookiejar"];
      order.cb_kwargs["user"] = response.cb_kwargs()["user"];
      out.request(std::move(order));
    }
  }

  void parse_order(const crawler::response& response, crawler::output& out) {
    crawler::item_loader loader(order_type, response);
    loader.default_output = p::take_first();
    loader.add_css("heading", "h1::text");
    loader.add_css("line_items", "li.line");
    loader.add_css("amount", "td.total::text", crawler::re{R"([\d.]+)"});
    auto item = loader.load_item();
    nlohmann::json lines = nlohmann::json::array();
    for (const auto& line : response.css("li.line::text").getall()) lines.push_back(strip(line));
    crawler::item selected{
        {"url", response.url},
        {"user", response.cb_kwargs()["user"]},
        {"jar", response.meta()["cookiejar"]},
        {"order", or_null(response.css("h1::text").get())},
        {"total", or_null(response.css("td.total::text").re_first(R"([\d.]+)"))},
        {"lines", lines},
        {"note", or_null(response.xpath("normalize-space(//p[@class='note'])").get())},
        {"title", or_null(response.xpath("//title/text()").get())}};
    // After the loader's fields, as Python's dict.update() puts them.
    for (auto& [field, value] : selected.items()) item[field] = value;
    out.item(std::move(item));
  }

  void order_failed(const crawler::failure& failure, crawler::output& out) {
    crawler::item item{{"url", failure.request.url},
                       {"user", failure.request.cb_kwargs["user"]},
                       {"error", failure.type}};
    if (failure.response) item["status"] = failure.response->status;
    out.item(std::move(item));
  }

 private:
  const std::map<std::string, std::string> passwords{{"alice", "wonder land"}, {"bob", "b&b=1"}};
  std::string base_;
};

class xml_feed : public crawler::xml_feed_spider {
 public:
  explicit xml_feed(std::string url) : xml_feed_spider("xml_feed") {
    start_urls = {std::move(url)};
    itertag = "item";
  }
  void parse_node(const crawler::response&, const crawler::selector& node,
                  crawler::output& out) override {
    out.item({{"url", or_null(node.xpath("link/text()").get())},
              {"title", or_null(node.xpath("title/text()").get())},
              {"categories", node.xpath("category/text()").getall()},
              {"permalink", or_null(node.xpath("guid/@isPermaLink").get())},
              {"guid", or_null(node.xpath("string(guid)").get())}});
  }
};

class csv_feed : public crawler::csv_feed_spider {
 public:
  explicit csv_feed(std::string url) : csv_feed_spider("csv_feed") {
    start_urls = {std::move(url)};
  }
  void parse_row(const crawler::response& response, const crawler::item& row,
                 crawler::output& out) override {
    auto item = row;
    item["source"] = response.url;
    out.item(std::move(item));
  }
};

// Crawls with `spider` here and with its twin in Scrapy, each writing the four feed formats,
// each with a user agent of its own (the shop's 503 is once per client), and compares them.
crawler::fixtures::compared crawl_both(crawler::spider& spider, const std::string& twin,
                                       const python_server& shop,
                                       const std::vector<std::string>& csv_fields = {}) {
  crawler::fixtures::temp_dir dir;
  nlohmann::json feeds = nlohmann::json::object();
  std::vector<std::string> theirs{crawler::fixtures::debian_python.string(),
                                  (crawler::fixtures::fixtures_dir() / "scrapy_shop_spiders.py")
                                      .string(),
                                  twin, shop.url(), "Scrapy's twin"};
  for (const char* format : {"jsonl", "json", "csv", "xml"}) {
    std::map<std::string, std::string> named{
        {"jsonl", "jsonlines"}, {"json", "json"}, {"csv", "csv"}, {"xml", "xml"}};
    auto& feed = feeds[(dir.path() / "ours.").string() + format];
    feed = {{"format", named[format]}, {"overwrite", true}};
    if (format == std::string("csv") && !csv_fields.empty()) feed["fields"] = csv_fields;
    theirs.push_back((dir.path() / "theirs.").string() + format);
  }
  if (!csv_fields.empty()) {
    std::string joined;
    for (const auto& field : csv_fields) joined += (joined.empty() ? "" : ",") + field;
    theirs.push_back("--csv-fields=" + joined);
  }
  child_process scrapy(theirs);
  auto result = crawler::fixtures::crawl(
      spider, {"FEEDS=" + feeds.dump(), "USER_AGENT=ours", "DOWNLOAD_TIMEOUT=30"});
  EXPECT_EQ(result.finish_reason, "finished");
  EXPECT_EQ(scrapy.wait(240s), 0) << scrapy.stderr_text();
  return crawler::fixtures::compare_feeds(dir.path() / "ours", dir.path() / "theirs");
}

// Two users log in through the second form of the page (the CSRF token copied, the checkbox and
// the clicked button sent), each in a cookie jar of its own, and scrape their orders: a shared
// jar would show one user's orders to the other. The order that answers 503 first is retried;
// the ones that fail (404, 403, 500 after two retries) reach the errback with their status.
TEST(scrapy_differential_spiders, a_login_two_cookie_jars_retries_and_errbacks_as_scrapy_runs_them) {
  python_server shop({(crawler::fixtures::fixtures_dir() / "shop_server.py").string()});
  shop_spider spider(shop.url());
  // The CSV feed's columns, as its `fields` option gives them: the first item (an order or a
  // failure) would choose them otherwise, and the two crawls need not take the same first.
  auto found = crawl_both(spider, "shop", shop,
                          {"url", "user", "error", "status", "heading", "line_items", "amount",
                           "jar", "order", "total", "lines", "note", "title"});
  EXPECT_EQ(found.items, 25u) << "12 and 8 orders, and 5 that failed";
  crawler::fixtures::expect_only_the_listed_differences("shop", found);
}

// XMLFeedSpider over RSS items (entities, CDATA, attributes, repeated elements).
TEST(scrapy_differential_spiders, an_xml_feed_spider_as_scrapy_runs_it) {
  python_server shop({(crawler::fixtures::fixtures_dir() / "shop_server.py").string()});
  xml_feed spider(shop.url("/feed.xml"));
  auto found = crawl_both(spider, "xml_feed", shop);
  EXPECT_EQ(found.items, 15u);
  crawler::fixtures::expect_only_the_listed_differences("xml_feed", found);
}

// CSVFeedSpider over rows with quoted commas, quotes and newlines, and a row of the wrong length
// (skipped by both).
TEST(scrapy_differential_spiders, a_csv_feed_spider_as_scrapy_runs_it) {
  python_server shop({(crawler::fixtures::fixtures_dir() / "shop_server.py").string()});
  csv_feed spider(shop.url("/feed.csv"));
  auto found = crawl_both(spider, "csv_feed", shop);
  EXPECT_EQ(found.items, 15u);
  crawler::fixtures::expect_only_the_listed_differences("csv_feed", found);
}

}  // namespace
