// HTML_PARSER=gumbo builds well-formed pages without Gumbo (detail/well_formed_html.cpp) and
// gives every other page to Gumbo: the tree must be Gumbo's either way, or a spider would see
// other text, attributes or structure depending on how tidy a page is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "crawler/parse/detail/tree_builder.h"
#include "crawler/parse/html.h"
#include "html_outline.h"
#include "tree_paths.h"

namespace {

namespace detail = crawler::detail;
using crawler::fixtures::html_outline;

std::string gumbos_tree(const std::string& page) {
  return html_outline(
      *detail::tree_builder::build(page, "text/html", {}, &detail::build_with_gumbo_only));
}

// The fast path's tree, or nullopt when it left the page to Gumbo.
std::optional<std::string> well_formed_tree(const std::string& page) {
  auto document = detail::tree_builder::build(
      page, "text/html", {}, [](const std::string& utf8, detail::tree_builder& builder) {
        if (!detail::build_well_formed_html(utf8, builder)) builder.restart();
      });
  // A document the fast path gave up on has nothing but its root; one it built has <html>.
  if (!document->root()->first_child) return std::nullopt;
  return html_outline(*document);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Pages that keep to the model: what HTML lets a page leave out (html, head, body, the end tags
// of p, li, dd, dt), text where Gumbo buffers it (around head and after </body>), references,
// attributes in every quoting, raw text, comments wherever they may go.
TEST(well_formed_html, builds_gumbos_tree_for_the_pages_it_takes) {
  const std::vector<std::string> pages = {
      "",
      "just text",
      "   \n",
      "<!DOCTYPE html>",
      "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=\"utf-8\">\n<title>T &amp; "
      "U</title>\n"
      "</head>\n<body class=\"x\">\n<h1>Head</h1>\n<p>a <b>bold</b> c</p>\n</body>\n</html>\n",
      "<title>only a title</title><p>para",
      "<p>one<p>two<div>block</div>three",
      "<ul><li>a<li>b<li><a href=\"/x?a=1&b=2\">c</a></ul><dl><dt>t<dd>d<dt>u</dl>",
      "<div><p>closed by the div's end</div>",
      "<h1>a</h1><h2><span>b</span></h2><p>x<h3>heading closes p</h3>",
      "<p>a &lt; b &gt; c &quot;d&quot; &apos;e&apos; &nbsp;f &#65;&#x42; &#x1F600; tom & "
      "jerry</p>",
      "<p>&copy;&reg;&trade;&mdash;&ndash;&hellip;&laquo;&raquo;&lsquo;&rsquo;&ldquo;&rdquo;&sbquo;"
      "&bdquo;&lsaquo;&rsaquo;&middot;&bull;&times;&divide;&euro;&pound;&yen;&cent;&sect;&para;"
      "&deg;&plusmn;&frac12;&frac14;&frac34;&eacute;&egrave;&aacute;&agrave;&iacute;&oacute;"
      "&uacute;&ntilde;&ccedil;&uuml;&ouml;&auml;&szlig;&Eacute;&shy;&ensp;&emsp;&thinsp;&zwnj;"
      "&zwj;&larr;&rarr;&uarr;&darr;&hearts;&iexcl;&iquest;&prime;&dagger;</p>"
      "<a title=\"&copy; &eacute;\" href=\"?a=1&amp;b=2&c=3\">every reference the model knows</a>",
      "<a href='single' title=\"double\" data-x=bare data-y data-z = spaced>link</a>",
      "<img src=a.png alt=\"\"><br/><input type=text disabled><hr><p>after",
      "<script>if (a < b && c > d) { x = '</p>'; }</script><style>p > a { }</style>text",
      "<head><script src=x.js></script><link rel=stylesheet href=s.css><style></style></head>"
      "<body>b</body>",
      "<!-- before --><html><!-- in html --><head><!-- in head --></head><!-- after head -->"
      "<body><!-- in body --></body><!-- after body --></html><!-- after html -->",
      "<p>text</p></body>\n\n</html>\n",
      "<body>x</body> <!-- c --> \n",
      "<span><my-widget data-a=1>custom <x-y>nested</x-y></my-widget></span>",
      "<DIV CLASS=Upper><P>upper-case TAGS</P></DIV>",
      "<form action=/s><input name=q><button type=submit>Go</button></form><p>after form",
      "<div><form>text right before the end of a form</form>and after</div>",
      "<body><noscript><img src=pixel.gif></noscript><p>x",
      "<nav><ul><li><a href=/>Home</a></li><li><a href=/about>About</a></li></ul></nav>",
      "<article><header><h2>T</h2></header><section><p>s</p></section><footer>f</footer></article>",
      "<em>a</em><strong>b</strong><i>c<b>d</b></i><code>e</code><small>f</small>",
      "<p>caf\xc3\xa9 \xe2\x82\xac 5</p>",
      "<p>AT&T, R&D &#38; a&b</p><a href=\"?a=1&copy=2&x=&\">q</a>",
      "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Strict//EN\" "
      "\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd\">\n<html><body>old</body></html>",
      "a < b <3 <> < c",
      "<meta name=description content=\"x\"><p>meta in head, then body",
      "<p><!---->empty comment<!-- a -- b --->dashes</p>",
      "<br><wbr><p>x<source src=a><track src=b><param name=c></p>",
      "<p>para<pre>\nline one\n  two\n</pre><p>after",
      "<pre>no newline first</pre><pre>\n</pre><pre></pre>",
      "<listing>\n\nthe second newline stays</listing>",
      "<pre><!-- c -->\na newline after a comment stays</pre>",
      "<pre><b>\nbold</b></pre>",
      // Inline SVG: an icon as python3-doc's pages carry it, case in names, self-closing tags,
      // text, references, comments, an <a> that is SVG's own, SVG in a paragraph and in <head>.
      "<button><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"20\" viewBox=\"0 0 24 24\" "
      "class=\"search-icon\">\n  <path fill-rule=\"nonzero\"\n d=\"M15.5 14h-.79\" "
      "fill=\"#444\"></path>\n</svg></button>",
      "<p>before <svg><rect/><circle r=1 /><g><LinearGradient id=g></lineargradient></g></svg> "
      "after</p>",
      "<svg><text x=1>a &amp; b &lt; c</text><!-- in svg --><a href=\"#x\">svg's a</a></svg>",
      "<div><svg/>self-closed svg<svg></svg></div>",
      "<head><title>t</title></head><svg><use href=\"#i\"/></svg>",
      "<svg><svg><rect/></svg></svg><b>after svg</b>",
      // Tables as generators write them: Sphinx's, rows straight in <table>, nested tables,
      // whitespace and comments between the parts, formatting inside cells, empty cells.
      "<table class=\"docutils\">\n<colgroup>\n<col style=\"width: 20%\" />\n<col/>\n</colgroup>\n"
      "<thead>\n<tr class=\"row-odd\"><th class=\"head\"><p>A</p></th>\n<th><p>B</p></th>\n</tr>\n"
      "</thead>\n<tbody>\n<tr><td><p><code>x</code> &amp; y</p></td>\n<td><p>2</p></td>\n</tr>\n"
      "</tbody>\n</table>\n<p>after",
      "<table><tr><td>1</td><td>2</td></tr><tr><th>3</th></tr></table>",
      "<table> <!-- c --> <tbody> <tr> <td><b>bold</b> <a href=x>a</a></td> </tr> </tbody> "
      "<tfoot><tr><td></td></tr></tfoot></table>",
      "<div><table><tr><td><table><tr><td>inner</td></tr></table>after inner</td></tr></table>"
      "</div>",
      "<table><tr><td><ul><li>a<li>b</ul><p>para</td></tr></table>",
      "<b>bold <table><tr><td>cell</td></tr></table> still bold</b>",
      "<table><thead><tr><th>h</th></tr></table>",
      "<table><tbody><tr><td>x</td></tbody></table>",
      "<table><tr><td><svg><rect/></svg></td></tr></table>",
      // A stray </p> in the body is an empty paragraph.
      "<p><ul><li>x</ul></p>after",
      "<div>a<b>b</b></p>c</div>",
      "<body></p>",
  };
  for (const auto& page : pages) {
    auto fast = well_formed_tree(page);
    ASSERT_TRUE(fast.has_value()) << "left to Gumbo: " << page;
    EXPECT_EQ(*fast, gumbos_tree(page)) << page;
  }
}

// What the model leaves to Gumbo, and that HTML_PARSER=gumbo still gives Gumbo's tree for it.
TEST(well_formed_html, leaves_broken_or_complex_markup_to_gumbo) {
  const std::vector<std::string> pages = {
      "<b><i>misnested</b> text</i>",
      "<p><b>bold carried into the next paragraph<p>here",
      "<table><tr><td>1<td>2</table>",
      "<table>text in a table</table>",
      "<table><tr>x<td>1</td></tr></table>",
      "<table><caption>c</caption><tr><td>1</td></tr></table>",
      "<table><col><tr><td>1</td></tr></table>",
      "<table><td>a cell straight in a table</td></table>",
      "<table><tr><td><b>open at the cell's end</td></tr></table>",
      "<table><tr><td>1</td><tr><td>2</td></tr></table>",
      "<table><tr><td>1</table>",
      "<p>a table in a paragraph<table><tr><td>1</td></tr></table>",
      "<table><tr><td>1</td></tr>",
      "<table><div>moved out</div></table>",
      "<table><thead><tr><td>1</td></tr></tbody></table>",
      "<table>&nbsp;<tr><td>1</td></tr></table>",
      "<div><span>unclosed</div>",
      "<a href=x><a href=y>nested anchors</a></a>",
      "<pre>&#10;a newline as a reference right after pre</pre>",
      "<textarea>\nkept</textarea>",
      "<select><option>a<option>b</select>",
      "<svg><p>an HTML tag breaks out of svg</p></svg>",
      "<svg><foreignObject><div>html again</div></foreignObject></svg>",
      "<svg><title>a title in svg</title></svg>",
      "<svg><desc>d</desc></svg>",
      "<svg><style>rect { fill: red }</style></svg>",
      "<svg><script>if (a<b) x()</script></svg>",
      "<svg><use xlink:href=\"#i\"/></svg>",
      "<svg><g><rect></g></svg>",
      "<svg><rect></svg>",
      "<svg><![CDATA[x]]></svg>",
      "<svg><math></math></svg>",
      "<svg><font color=red>f</font></svg>",
      "<svg><g></g ></svg>",  // found by the fuzzer: Gumbo's </g > closes nothing
      "<svg><g></g ></g></svg>",  // and is no text either
      "<x-a><b>t</x-a><svg/>",  // the <b> closed by </x-a> is reconstructed around the svg
      "<template><p>t</p></template>",
      "<p>&copy 2024 legacy reference</p>",
      "<p>&Aring; a named reference the model does not know</p>",
      "<p>&copy 2024, a reference without its ';'</p>",
      "<p>&notes start with a reference without its ';'</p>",
      "<a href=\"?a=1&copy\">a reference without its ';' ends the value</a>",
      "<a href=\"?a=1&not&b=2\">a reference without its ';' before another '&'</a>",
      "<p>&notareference; looks like one, with its ';'</p>",
      "<p>\r\ncarriage return</p>",
      "<p>a\x01"
      "control</p>",
      "<p>&#128; a reference Gumbo rewrites</p>",
      "<script><!-- <script></script> --></script>",
      "<b>1<b>2<b>3<b>4 (Noah's ark)</b></b></b></b>",
      "<p>text</p></body>after the body",
      "</p>a stray end tag before the body",
      "<head></p></head>",
      "<form><form>nested</form></form>",
      "<h1><h2>heading in heading</h2></h1>",
      "<?php echo 1; ?>",
      "<![CDATA[x]]>",
      "<div a='1'b='2'>no space between attributes</div>",
      "<p id=a id=b class=c>two ids</p>",
      // Characters an unquoted value may not hold (each a parse error Gumbo keeps in the value).
      "<a href=x`y>a backtick in an unquoted value</a>",
      "<a href=x=y>an equals sign in an unquoted value</a>",
      "<a href=x\"y>a quote in an unquoted value</a>",
      "<a href=x'y>an apostrophe in an unquoted value</a>",
      "<a href=x<y>a less-than sign in an unquoted value</a>",
      "<p hidden id=x hidden class=c>a valueless attribute twice</p>",
      "<foo><bar>unknown tags Gumbo takes for one</foo></bar>",
      // A list item opened inside an <address>, <div> or <p> of the item before closes that item
      // through them, an error HTML allows (the special elements past which it does not look
      // leave those three out).
      "<ul><li>one<address>x<li>two</ul>",
      "<ul><li>one<address>x<li>two</address></ul>",
      "<ul><li>one<div>x<li>two</ul>",
      "<dl><dt>a<address>b<dd>c</dl>",
  };
  for (const auto& page : pages) {
    EXPECT_FALSE(well_formed_tree(page).has_value()) << "taken: " << page;
    EXPECT_EQ(html_outline(*crawler::html_document::parse(page, "text/html")), gumbos_tree(page))
        << page;
  }
}

// The pages of the books example (a copy of books.toscrape.com) and the XPath fixtures: real
// markup, all of it taken by the model, all of it Gumbo's tree.
TEST(well_formed_html, builds_gumbos_tree_for_saved_real_pages) {
  std::vector<std::filesystem::path> paths;
  for (const auto* dir : {"config/examples/books", "tests/fixtures/xpath"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(
             crawler::fixtures::source_dir() / dir)) {
      if (entry.path().extension() == ".html") paths.push_back(entry.path());
    }
  }
  ASSERT_GE(paths.size(), 18u);
  std::size_t taken = 0;
  for (const auto& path : paths) {
    auto page = read_file(path);
    auto fast = well_formed_tree(page);
    if (!fast) continue;
    ++taken;
    EXPECT_EQ(*fast, gumbos_tree(page)) << path;
  }
  EXPECT_GE(taken, paths.size() / 2) << "the model took too few of the saved pages to be of use";
}

// Debian's python3-doc, 530 Sphinx pages nobody here wrote, each with an inline SVG icon: the
// model takes nearly all of them (the rest have tables or forms it leaves to Gumbo), and every
// one it takes is Gumbo's tree.
TEST(well_formed_html, builds_gumbos_tree_for_python3_docs_pages) {
  const std::filesystem::path docs = "/usr/share/doc/python3.11/html";
  ASSERT_TRUE(std::filesystem::is_directory(docs))
      << docs << " is missing: install Debian's python3-doc, as .ci/packages.txt does";
  std::size_t pages = 0, taken = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(docs)) {
    if (entry.path().extension() != ".html") continue;
    ++pages;
    auto page = read_file(entry.path());
    auto fast = well_formed_tree(page);
    if (!fast) continue;
    ++taken;
    ASSERT_EQ(*fast, gumbos_tree(page)) << entry.path();
  }
  EXPECT_GE(pages, 500u);
  EXPECT_GE(taken, pages / 2) << taken << " of " << pages << " pages taken";
}

// Tag soup from a fixed seed: misnesting, implied tags, tables, references, stray brackets, inline
// SVG. The model takes some of the soups; each one it takes must be Gumbo's tree.
TEST(well_formed_html, builds_gumbos_tree_for_every_tag_soup_it_takes) {
  const std::vector<std::string> pieces = {
      "<p>",
      "</p>",
      "<div class=a>",
      "</div>",
      "<b>",
      "</b>",
      "<i>",
      "</i>",
      "<a href='x'>",
      "</a>",
      "<table>",
      "<td>",
      "<li>",
      "<ul>",
      "</ul>",
      "</li>",
      "<ol>",
      "</ol>",
      "<span>",
      "</span>",
      "<h1>",
      "</h1>",
      "<br>",
      "<img src=i>",
      "text",
      " ",
      "\n",
      "&amp;",
      "&lt;",
      "&x=1",
      "<!-- c -->",
      "<script>s<</script>",
      "<title>t</title>",
      "<head>",
      "</head>",
      "<body>",
      "</body>",
      "</html>",
      "<html>",
      "<form>",
      "</form>",
      "<button>",
      "</button>",
      "<dd>",
      "<dt>",
      "<dl>",
      "</dl>",
      "<x-a>",
      "</x-a>",
      "<y-b>",
      "</y-b>",
      "<meta a=b>",
      "<section>",
      "</section>",
      "<hr>",
      "<em>",
      "</em>",
      "<noscript>",
      "</noscript>",
      "<",
      "<!DOCTYPE html>",
      "<input>",
      "<label>",
      "</label>",
      "<nav>",
      "</nav>",
      "<h2>",
      "</h2>",
      "<svg>",
      "</svg>",
      "<svg/>",
      "<g>",
      "</g>",
      "<rect/>",
      "<path d='M 1'>",
      "</path>",
      "</td>",
      "<th>",
      "</th>",
      "<tr>",
      "</tr>",
      "</table>",
      "<tbody>",
      "</tbody>",
      "<thead>",
      "</thead>",
      "<colgroup>",
      "<col>",
      "</colgroup>",
      "<caption>",
  };
  std::mt19937 random(27);
  std::size_t taken = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string page;
    auto length = random() % 14;
    for (unsigned k = 0; k < length; ++k) page += pieces[random() % pieces.size()];
    auto fast = well_formed_tree(page);
    if (!fast) continue;
    ++taken;
    ASSERT_EQ(*fast, gumbos_tree(page)) << page;
  }
  EXPECT_GE(taken, 400u);
}

}  // namespace
