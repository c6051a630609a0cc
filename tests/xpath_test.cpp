// XPath 1.0 as Scrapy users write it (parsel over lxml): each expression of
// fixtures/xpath/expected.json, over five pages, answers what parsel answered (make_expected.py),
// with either parser; and a selection's .xpath() and .css() mix as in parsel.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "crawler/parse/html.h"
#include "crawler/parse/selector.h"
#include "tree_paths.h"

namespace {

using crawler::html_document;
using crawler::html_parser;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::shared_ptr<const html_document> page(const std::string& relative, html_parser parser) {
  auto body = slurp((crawler::fixtures::fixtures_dir() / "xpath" / relative).string());
  EXPECT_FALSE(body.empty()) << relative;
  return html_document::parse(body, "text/html; charset=utf-8", {}, parser);
}

class each_parser : public testing::TestWithParam<html_parser> {};

TEST_P(each_parser, every_expression_answers_what_parsel_answers) {
  std::ifstream in(crawler::fixtures::fixtures_dir() / "xpath/expected.json");
  auto cases = nlohmann::json::parse(in);
  ASSERT_GE(cases.size(), 40u);
  std::map<std::string, std::shared_ptr<const html_document>> pages;
  for (const auto& one : cases) {
    auto name = one["page"].get<std::string>();
    if (!pages.contains(name)) pages[name] = page(name, GetParam());
    auto expression = one["xpath"].get<std::string>();
    EXPECT_EQ(crawler::select_xpath(pages[name], expression).getall(),
              one["expected"].get<std::vector<std::string>>())
        << name << ": " << expression;
  }
}

TEST_P(each_parser, a_selection_answers_relative_paths_and_mixes_with_css) {
  auto shop = page("shop.html", GetParam());
  auto products = crawler::select(shop, "article.product");
  ASSERT_EQ(products.size(), 3u);
  // Relative to each product; "//" still searches the whole page, as in parsel.
  EXPECT_EQ(products[1].xpath("./h3/a/text()").getall(),
            std::vector<std::string>{"Atlas of Rivers"});
  EXPECT_EQ(products[1].xpath(".//del/text()").get(), "£80.00");
  EXPECT_EQ(products[1].xpath("//del/text()").getall().size(), 1u);
  EXPECT_EQ(products.xpath("@data-sku").getall(),
            (std::vector<std::string>{"MR-1001", "MR-1002", "MR-1003"}));
  // XPath then CSS, and CSS then XPath.
  EXPECT_EQ(crawler::select_xpath(shop, "//article[2]").css("p.price del::text").get(), "£80.00");
  EXPECT_EQ(
      crawler::select(shop, "table#shipping").xpath(".//tr[@class='slow']/td[2]/text()").get(),
      "14");
  // re() and re_first() on XPath results.
  EXPECT_EQ(crawler::select_xpath(shop, "//p[@class='price']/text()").re(R"(£([\d.]+))"),
            (std::vector<std::string>{"120.00", "64.50", "15.25"}));
  EXPECT_EQ(crawler::select_xpath(shop, "//h1/small/text()").re_first(R"(of (\d+))"), "7");
  // An element selected by XPath is the element CSS selects.
  EXPECT_EQ(crawler::select_xpath(shop, "//nav").get(), crawler::select(shop, "nav").get());
  EXPECT_EQ(crawler::select_xpath(shop, "//comment()").get(), "<!-- navigation starts -->");
  // A comment's text is what it says (its XPath string-value), as a crawl file's field gives it.
  EXPECT_EQ(crawler::select_xpath(shop, "//comment()")[0].text_content(), "navigation starts");
  // A string has no children.
  EXPECT_TRUE(crawler::select_xpath(shop, "//title/text()").xpath("./b").empty());
}

INSTANTIATE_TEST_SUITE_P(xpath, each_parser,
                         testing::Values(html_parser::gumbo, html_parser::libxml2),
                         [](const auto& info) {
                           return info.param == html_parser::gumbo ? "gumbo" : "libxml2";
                         });

TEST(xpath, an_expression_that_is_not_xpath_is_an_error_quoting_it) {
  auto document = html_document::parse("<p>x</p>");
  for (std::string bad : {"//p[", "//p/@", "count(", "//p]"}) {
    try {
      crawler::select_xpath(document, bad);
      ADD_FAILURE() << bad << " was evaluated";
    } catch (const crawler::selector_error& error) {
      EXPECT_TRUE(
          std::string(error.what()).starts_with("invalid XPath expression \"" + bad + "\": "))
          << error.what();
    }
    EXPECT_THROW(crawler::validate_xpath(bad), crawler::selector_error) << bad;
  }
  EXPECT_NO_THROW(crawler::validate_xpath("//a[contains(@href, 'x')]/text()"));
  // parsel's has-class() takes one or more strings, as there.
  EXPECT_NO_THROW(crawler::validate_xpath("//p[has-class('a', 'b')]"));
  EXPECT_THROW(crawler::select_xpath(document, "//p[has-class()]"), crawler::selector_error);
  EXPECT_THROW(crawler::select_xpath(document, "//p[has-class(1)]"), crawler::selector_error);
  // As parsel: an empty list still refuses a bad expression.
  EXPECT_THROW(crawler::select(document, "table").xpath("//p["), crawler::selector_error);
}

// Pages nest deeper than any stack a recursive copy could use: the copy for libxml2 walks.
TEST(xpath, a_page_nested_thousands_deep_is_answered) {
  std::string deep;
  for (int i = 0; i < 1500; ++i) deep += "<div>";
  deep += "<b>bottom</b>";
  auto document = html_document::parse(deep, "", {}, html_parser::gumbo);
  EXPECT_EQ(crawler::select_xpath(document, "//b/text()").get(), "bottom");
  EXPECT_EQ(crawler::select_xpath(document, "count(//div)").get(), "1500.0");
}

}  // namespace
