// HTML_PARSER=libxml2 builds our tree from libxml2's parse events (detail/libxml2_tree.cpp), not
// by walking the xmlDoc libxml2 would build: the two must give the same tree for every page, or a
// spider would see other text, attributes or structure than parsel shows for the same page.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "crawler/parse/detail/tree_builder.h"
#include "crawler/parse/html.h"
#include "html_outline.h"

namespace {

namespace detail = crawler::detail;
using crawler::fixtures::html_outline;

std::string from_events(const std::string& page) {
  return html_outline(*detail::tree_builder::build(page, "text/html", {}, &detail::build_with_libxml2));
}
std::string from_dom(const std::string& page) {
  return html_outline(
      *detail::tree_builder::build(page, "text/html", {}, &detail::build_with_libxml2_dom));
}

// Where SAX2.c's tree building has rules of its own: the top level, text outside any element,
// joined text, CDATA beside text, prefixed names, boolean attributes, processing instructions.
TEST(libxml2_tree, events_build_the_tree_libxml2s_dom_has_on_pages_it_repairs) {
  const std::vector<std::string> pages = {
      "",
      "just text",
      "<!DOCTYPE html><html><head><title>T</title></head><body><p>a<b>b</b>c</p></body></html>",
      "<!-- first --><html><body>x</body></html><!-- after --><p>late</p>",
      "<html><body>x</body></html><p>after the end</p>text after<!--c--><div>d</div>",
      "<!DOCTYPE html><html><body>x</body></html><p>after the end, with a doctype</p>",
      "<p>one<!DOCTYPE html><p>misplaced doctype</p>",
      "<p>a&amp;b &bogus; &#65;&#x42;</p>",
      "<script>if (a < b) { x = '</p>'; }</script><style>p { }</style>text",
      "<p>a<?pi data?>b</p><?top level?>",
      "<fb:like data-href=\"x\" fb:layout=\"y\">like</fb:like><svg:rect/>",
      "<input checked disabled value><option selected>o</option><td nowrap>",
      "<b><i>misnested</b> text</i>",
      "<table><tr><td>1<td>2</table><ul><li>a<li>b</ul>",
      "<title>a</title><title>b</title>text in head?<meta charset=latin1>",
      "<textarea>\nkept</textarea><pre>\nline</pre>",
      "<p>x<![CDATA[y]]>z</p>",
      "<p id=a id=b class='c' class=d>duplicates</p>",
      "<frameset><frame src=a></frameset>",
      "<a href='x'><a href='y'>nested</a></a>",
      "<p>\xc3\xa9t\xc3\xa9</p>",
  };
  for (const auto& page : pages) EXPECT_EQ(from_events(page), from_dom(page)) << page;
}

// Tag soup from a fixed seed: misnesting, implied tags, tables, scripts, stray brackets.
TEST(libxml2_tree, events_build_the_tree_libxml2s_dom_has_on_three_thousand_tag_soups) {
  const std::vector<std::string> pieces = {
      "<p>", "</p>", "<div class=a>", "</div>", "<b>", "</b>", "<i>", "</i>", "<a href='x'>",
      "</a>", "<table>", "<tr>", "<td>", "</td>", "</table>", "<li>", "<ul>", "</ul>",
      "<script>var a = '<b>';</script>", "<style>p{}</style>", "<!-- c -->", "<?pi x?>",
      "<!DOCTYPE html>", "<html>", "</html>", "<body>", "</body>", "<head>", "<title>t</title>",
      "</head>", "text ", " ", "\n", "&amp;", "&nbsp;", "&bogus;", "<fb:like data-x=1>",
      "</fb:like>", "<input checked>", "<option selected>", "<select>", "<br>", "<br/>",
      "<img src=x>", "<frameset>", "<noscript>", "<textarea>a</textarea>", "<![CDATA[x]]>", "<",
      ">", "</", "<p", "'", "\"", "<svg:rect/>", "<math>", "<template>", "<form>", "<h1>",
      "</h1>", "<span>", "</span>", "<meta charset=latin1>", "\xc3\xa9", "\xff", "</x>", "<x y>"};
  std::mt19937 random(27);
  for (int i = 0; i < 3000; ++i) {
    std::string page;
    auto length = std::uniform_int_distribution<int>(1, 40)(random);
    for (int j = 0; j < length; ++j) {
      page += pieces[std::uniform_int_distribution<std::size_t>(0, pieces.size() - 1)(random)];
    }
    ASSERT_EQ(from_events(page), from_dom(page)) << page;
  }
}

}  // namespace
