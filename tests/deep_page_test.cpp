// Pages built to hurt: nesting as deep as a site likes must cost bounded stack, time and memory.
#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <functional>
#include <random>

#include "crawler/parse/detail/tag_openings.h"
#include "crawler/parse/html.h"
#include "crawler/parse/link_extractor.h"
#include "crawler/parse/response.h"

namespace {

std::string nested_divs(std::size_t depth, std::string_view inside = "") {
  std::string html = "<html><body>";
  for (std::size_t i = 0; i < depth; ++i) html += "<div>";
  html += inside;
  return html;
}

// Runs `work` on a thread with a small stack, where code that recurses once per level of a
// deep page overflows at once instead of sometimes.
void on_small_stack(std::function<void()> work) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 256 * 1024);
  pthread_t thread;
  auto run = [](void* argument) -> void* {
    (*static_cast<std::function<void()>*>(argument))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attributes, run, &work), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
}

class deep_page_parsed_by : public testing::TestWithParam<crawler::html_parser> {};

TEST_P(deep_page_parsed_by, selectors_text_and_links_walk_a_deep_tree_without_recursion) {
  crawler::response page;
  page.url = page.request.url = "http://example.com/deep";
  page.parser = GetParam();
  page.body = nested_divs(20000, "<a href=\"/bottom\">the bottom</a>");
  page.parse_limits.max_depth = 100000;
  on_small_stack([&] {
    page.document();  // neither parser recurses per level: parsed on the small stack too
    EXPECT_EQ(page.css("div > a::attr(href)").get(), "/bottom");
    EXPECT_EQ(page.css("a::text").get(), "the bottom");
    EXPECT_EQ(page.css("body").front().text_content(), "the bottom");
    EXPECT_EQ(page.css("body > div").get()->size(), 20000 * 11 + 32);  // every <div></div>
    auto links = crawler::link_extractor().extract_links(page);
    ASSERT_EQ(links.size(), 1u);
    EXPECT_EQ(links[0].url, "http://example.com/bottom");
    EXPECT_EQ(links[0].text, "the bottom");
  });
}

INSTANTIATE_TEST_SUITE_P(each_parser, deep_page_parsed_by,
                         testing::Values(crawler::html_parser::gumbo,
                                         crawler::html_parser::libxml2),
                         [](const auto& info) {
                           return info.param == crawler::html_parser::gumbo ? "gumbo" : "libxml2";
                         });

// libxml2 stopped reading at 256 levels (its default xmlParserMaxDepth) and silently dropped the
// rest of the page; both parsers now read what HTML_MAX_DEPTH lets through, whole.
TEST(deep_page, both_parsers_read_a_page_nested_300_deep_whole) {
  for (auto parser : {crawler::html_parser::gumbo, crawler::html_parser::libxml2}) {
    crawler::response page;
    page.url = page.request.url = "http://example.com/deep";
    page.parser = parser;
    page.body = nested_divs(300, "<a href=\"/bottom\">the bottom</a>") + "<p id=after>";
    EXPECT_EQ(page.css("a::text").get(), "the bottom") << int(parser);
    EXPECT_EQ(page.css("div").size(), 300u) << int(parser);
    EXPECT_EQ(page.css("#after").size(), 1u) << int(parser);
  }
}

TEST(hostile_page, a_page_that_says_utf_7_is_read_as_utf_8_as_browsers_do) {
  for (const char* label : {"utf-7", "UTF-7", "unicode-1-1-utf-7", "csUnicode11UTF7"}) {
    crawler::response page;
    page.url = page.request.url = "http://example.com/utf7";
    page.headers = {{"Content-Type", std::string("text/html; charset=") + label}};
    page.body = "<p>+ADw-script+AD4-alert(1)+ADw-/script+AD4-</p>";
    EXPECT_EQ(page.css("script").size(), 0u) << label;
    EXPECT_EQ(page.css("p::text").get(), "+ADw-script+AD4-alert(1)+ADw-/script+AD4-") << label;
  }
}

TEST(deep_page, a_page_nested_past_html_max_depth_is_refused_before_gumbo_sees_it) {
  auto body = nested_divs(100000);
  try {
    crawler::html_document::parse(body, "text/html", {.max_depth = 2000});
    FAIL() << "parsed a page nested 100000 deep";
  } catch (const crawler::page_too_complex& error) {
    EXPECT_EQ(error.reason(), "too_deep");
    EXPECT_STREQ(error.what(),
                 "the page nests elements 100000 deep, more than HTML_MAX_DEPTH (2000)");
  }
  EXPECT_THROW(crawler::html_document::parse(std::string(1000, 'x'), "", {.max_bytes = 999}),
               crawler::page_too_complex);
}

TEST(deep_page, the_depth_estimate_follows_what_html_nests) {
  using crawler::estimate_nesting_depth;
  EXPECT_EQ(estimate_nesting_depth(nested_divs(300)), 300u);
  EXPECT_EQ(estimate_nesting_depth("<div><span>a</span><span>b</span></div>"), 2u);
  std::string flat;
  for (int i = 0; i < 5000; ++i) flat += "<p>para<li>item<br><img src=x><input>";
  EXPECT_EQ(estimate_nesting_depth(flat), 0u);  // closed by their siblings, or void
  std::string icons = "<svg>";
  for (int i = 0; i < 5000; ++i) icons += "<path d=\"M0 0\"/>";
  EXPECT_EQ(estimate_nesting_depth(icons + "</svg>"), 1u);
  std::string html_self_closing;
  for (int i = 0; i < 5000; ++i) html_self_closing += "<div/>";  // HTML opens a div each time
  EXPECT_EQ(estimate_nesting_depth(html_self_closing), 5000u);
  std::string hidden = "<script>";
  for (int i = 0; i < 5000; ++i) hidden += "x = '<div>';";
  EXPECT_EQ(estimate_nesting_depth(hidden + "</SCRIPT><!-- <div><div> --><b title='>'>x</b>"), 1u);
  EXPECT_EQ(estimate_nesting_depth("a < b and c <= d </ e"), 0u);
}

}  // namespace

// The budget's first check counts a page's '<' eight bytes at a time: exactly, whatever the bytes
// beside them (0xbc, '=' and '>' differ from '<' by one bit or one step) and the length.
TEST(deep_page, the_count_of_tag_openings_is_exact_for_any_bytes) {
  std::mt19937 random(7);
  const std::string alphabet = std::string("<<<=>;|\xbc\x3c\x00\xff a", 13);
  for (int i = 0; i < 2000; ++i) {
    std::string markup(std::uniform_int_distribution<std::size_t>(0, 70)(random), ' ');
    for (auto& c : markup) {
      c = alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(random)];
    }
    ASSERT_EQ(crawler::detail::count_tag_openings(markup),
              std::size_t(std::count(markup.begin(), markup.end(), '<')));
  }
}
