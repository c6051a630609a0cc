// urljoin: RFC 3986's own examples, Python's answers on every link shape a page holds, and which
// links the parser-free path (plain_url.h) leaves to the URL parser.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "crawler/parse/plain_url.h"
#include "crawler/parse/response.h"
#include "tree_paths.h"

namespace {

// RFC 3986 section 5.4, normal and abnormal examples; the fragment rule is Python's (and
// Scrapy's): a non-empty link without a fragment gets none.
TEST(urljoin, resolves_rfc_3986_examples_as_python_does) {
  const std::string base = "http://a/b/c/d;p?q";
  const std::vector<std::pair<std::string, std::string>> examples = {
      {"g", "http://a/b/c/g"},
      {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"},
      {"/g", "http://a/g"},
      {"//g", "http://g"},
      {"?y", "http://a/b/c/d;p?y"},
      {"g?y", "http://a/b/c/g?y"},
      {"#s", "http://a/b/c/d;p?q#s"},
      {"g#s", "http://a/b/c/g#s"},
      {"g?y#s", "http://a/b/c/g?y#s"},
      {";x", "http://a/b/c/;x"},
      {"g;x", "http://a/b/c/g;x"},
      {"g;x?y#s", "http://a/b/c/g;x?y#s"},
      {".", "http://a/b/c/"},
      {"./", "http://a/b/c/"},
      {"..", "http://a/b/"},
      {"../", "http://a/b/"},
      {"../g", "http://a/b/g"},
      {"../..", "http://a/"},
      {"../../", "http://a/"},
      {"../../g", "http://a/g"},
      {"../../../g", "http://a/g"},
      {"../../../../g", "http://a/g"},
      {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},
      {"g.", "http://a/b/c/g."},
      {".g", "http://a/b/c/.g"},
      {"g..", "http://a/b/c/g.."},
      {"..g", "http://a/b/c/..g"},
      {"./../g", "http://a/b/g"},
      {"./g/.", "http://a/b/c/g/"},
      {"g/./h", "http://a/b/c/g/h"},
      {"g/../h", "http://a/b/c/h"},
      {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
      {"g;x=1/../y", "http://a/b/c/y"},
      {"g?y/./x", "http://a/b/c/g?y/./x"},
      {"g?y/../x", "http://a/b/c/g?y/../x"},
      {"g#s/./x", "http://a/b/c/g#s/./x"},
      {"g#s/../x", "http://a/b/c/g#s/../x"},
  };
  for (const auto& [link, expected] : examples) {
    EXPECT_EQ(crawler::urljoin(base, link), expected) << "link " << link;
  }
}

// Every spelling of a link pages hold, against bases with ports, userinfo, queries, fragments
// and escapes; expected values recorded once from Python's urljoin (fixtures/urljoin_python.tsv).
// All of them are plain, so they also pin the parser-free path.
TEST(urljoin, plain_links_resolve_as_pythons_urljoin_does) {
  std::ifstream table(crawler::fixtures::fixtures_dir() / "urljoin_python.tsv");
  ASSERT_TRUE(table) << "fixtures/urljoin_python.tsv is missing";
  std::string line;
  int rows = 0;
  while (std::getline(table, line)) {
    if (line.starts_with("#")) continue;
    auto tab = line.find('\t'), second = line.find('\t', tab + 1);
    auto base = line.substr(0, tab), link = line.substr(tab + 1, second - tab - 1);
    auto expected = line.substr(second + 1);
    ++rows;
    EXPECT_EQ(crawler::urljoin(base, link), expected) << base << " + " << link;
    auto plain = crawler::plain_urljoin(base, link);
    ASSERT_TRUE(plain) << base << " + " << link << " should take the parser-free path";
  }
  EXPECT_EQ(rows, 264);
}

// Links that go through the URL parser (here: a space to escape) get the same dot-segment
// treatment as Python's urljoin: ".." above the root is dropped, where Boost.URL 1.81 keeps it.
TEST(urljoin, dot_segments_above_the_root_are_dropped_on_the_parser_path_too) {
  EXPECT_EQ(crawler::urljoin("http://a/b/c", "../../../x y"), "http://a/x%20y");
  EXPECT_EQ(crawler::urljoin("http://a/b", "/../a b"), "http://a/a%20b");
  EXPECT_EQ(crawler::urljoin("http://a/b/", "../../x y#f"), "http://a/x%20y#f");
}

TEST(urljoin, links_the_parser_must_judge_leave_the_parser_free_path) {
  for (std::string link : {"", "HTTP://x/", "mailto:a@b", "a b", "x%zz", "x#a#b", "http://[::1]/",
                           "[x]", "é.html", "javascript:void(0)", "a:b"}) {
    EXPECT_FALSE(crawler::plain_urljoin("http://a/b", link)) << link;
  }
  for (std::string base : {"HTTP://a/b", "http://a/b c", "//a/b", "a/b", "http://[::1]/x"}) {
    EXPECT_FALSE(crawler::plain_urljoin(base, "x.html")) << base;
  }
}

// Dot segments in an absolute or network-path link go as RFC 3986 says (Python keeps them there).
TEST(urljoin, dot_segments_of_absolute_links_are_removed) {
  EXPECT_EQ(crawler::urljoin("http://a/b", "https://c/x/./y/../z?q#f"), "https://c/x/z?q#f");
  EXPECT_EQ(crawler::urljoin("https://a/b", "//c/x/../../y"), "https://c/y");
  // The same links with a space, so the URL parser resolves them: the same answers.
  EXPECT_EQ(crawler::urljoin("http://a/b", "https://c/x/./y/../z z?q#f"), "https://c/x/z%20z?q#f");
  EXPECT_EQ(crawler::urljoin("https://a/b", "//c/x/../../y z"), "https://c/y%20z");
}

TEST(urljoin, a_plain_url_splits_into_its_parts) {
  auto parts = crawler::split_plain_url("http://u:pw@Shop.example:8080/p/1.html?a=1#top");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->scheme, "http");
  EXPECT_EQ(parts->authority, "u:pw@Shop.example:8080");
  EXPECT_EQ(parts->host, "Shop.example");
  EXPECT_EQ(parts->path, "/p/1.html");
  EXPECT_EQ(parts->query, "?a=1");
  EXPECT_EQ(parts->fragment, "#top");
  auto bare = crawler::split_plain_url("https://h.example");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->host, "h.example");
  EXPECT_EQ(bare->path, "");
  EXPECT_FALSE(crawler::split_plain_url("http://[::1]:80/"));
  EXPECT_FALSE(crawler::split_plain_url("HTTP://a/"));
  EXPECT_FALSE(crawler::split_plain_url("/relative"));
  EXPECT_FALSE(crawler::split_plain_url("http://a/b c"));
}

}  // namespace

namespace {

crawler::response page_in(std::string content_type, std::string body) {
  crawler::response response;
  response.url = response.request.url = "http://shop.example/dir/page.html";
  response.headers.emplace_back("Content-Type", std::move(content_type));
  response.body = std::move(body);
  return response;
}

// As the request Scrapy makes of a page's link (w3lib's safe_url_string with the page's
// encoding) and as a browser: a link's query and fragment go in the page's encoding, its path in
// UTF-8, so the server of a windows-1252 page gets the bytes it wrote. A character that encoding
// cannot write makes no link (Scrapy skips it); a UTF-8 page's links stay UTF-8. Answers are
// w3lib 2.1's safe_url_string(urljoin(base, link), encoding=...).
TEST(urljoin, a_links_query_and_fragment_go_in_the_pages_encoding_its_path_in_utf8) {
  auto latin = page_in("text/html; charset=windows-1252", "<p>caf\xe9</p>");
  EXPECT_EQ(latin.urljoin("p\xc3\xa9.html?q=caf\xc3\xa9&r=\xe2\x82\xac#fr\xc3\xa9"),
            "http://shop.example/dir/p%C3%A9.html?q=caf%E9&r=%80#fr%E9");
  EXPECT_EQ(latin.urljoin("/x?q=caf%C3%A9"), "http://shop.example/x?q=caf%C3%A9");
  EXPECT_THROW(latin.urljoin("/x?q=\xe4\xb8\xad"), crawler::link_error);
  EXPECT_EQ(latin.urljoin("/\xe4\xb8\xad"), "http://shop.example/%E4%B8%AD");

  auto utf8 = page_in("text/html; charset=utf-8", "<p>caf\xc3\xa9</p>");
  EXPECT_EQ(utf8.urljoin("/x?q=caf\xc3\xa9"), "http://shop.example/x?q=caf%C3%A9");
  // Found by a <meta> as the parser finds it, with no charset in the Content-Type.
  auto meta = page_in("text/html", "<meta charset=iso-8859-2><a href='?q=\xb1'>a</a>");
  EXPECT_EQ(meta.urljoin(*meta.css("a::attr(href)").get()),
            "http://shop.example/dir/page.html?q=%B1");
}

}  // namespace

// A '%' that starts no escape ("%4G": one hex digit, then none; "%G4"; a '%' at the end) is a
// stray byte: the link is followed with that '%' escaped, never dropped as "not a URL". Each
// spelling differs from a real escape in one place, the second digit included. (Scrapy keeps a
// stray '%' as it is: docs/scrapy-differences.md.)
TEST(urljoin, a_link_with_a_stray_percent_is_followed_with_the_percent_escaped) {
  EXPECT_EQ(crawler::urljoin("http://a/b", "/x%4G y"), "http://a/x%254G%20y");
  EXPECT_EQ(crawler::urljoin("http://a/b", "/x%G4 y"), "http://a/x%25G4%20y");
  EXPECT_EQ(crawler::urljoin("http://a/b", "/x y%4"), "http://a/x%20y%254");
  EXPECT_EQ(crawler::urljoin("http://a/b", "/x y%"), "http://a/x%20y%25");
  EXPECT_EQ(crawler::urljoin("http://a/b", "/x%2F%4G y"), "http://a/x%2F%254G%20y");
}

// A link that must be escaped (a space) keeps the escapes it has: "%2F" is not a '/', "%2e%2e"
// is no ".." to climb by, "%4A" stays as written. Expected values are Python's urljoin then
// w3lib's safe_url_string, as a Scrapy request from the link gets them.
TEST(urljoin, escapes_in_a_link_that_needs_escaping_are_kept_as_python_keeps_them) {
  EXPECT_EQ(crawler::urljoin("http://a/b/c", "x%2F..%2F y"), "http://a/b/x%2F..%2F%20y");
  EXPECT_EQ(crawler::urljoin("http://a/b/c", "%2e%2e/y z"), "http://a/b/%2e%2e/y%20z");
  EXPECT_EQ(crawler::urljoin("http://a/b", "/x%0A%C0%00 y"), "http://a/x%0A%C0%00%20y");
  EXPECT_EQ(crawler::urljoin("http://a/b", "/api/a%2Fb%3Fc?q=1 2"),
            "http://a/api/a%2Fb%3Fc?q=1%202");
  EXPECT_EQ(crawler::urljoin("http://a/b/c", "./d%4A%2F/../e f"), "http://a/b/e%20f");
  EXPECT_EQ(crawler::urljoin("http://a/b/c", "http://h/p%2Fq r"), "http://h/p%2Fq%20r");
}
