// The location paths answered on the page's own tree (detail/xpath_paths.cpp) answer what libxml2
// answers on its copy of the tree, the engine under parsel: every path below, over pages nobody
// here wrote (python3-doc's, the books example) and pages of the cases paths get wrong (nested
// matches, positions, attributes, comments), with both parsers, from the page and from elements
// inside it. Expressions outside the subset are left to libxml2, which still answers them.
#include "crawler/parse/detail/xpath_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "crawler/parse/detail/xpath.h"
#include "crawler/parse/html.h"
#include "crawler/parse/selector.h"
#include "tree_paths.h"

namespace xpath_paths_cases {

namespace detail = crawler::detail;
using crawler::html_document;
using crawler::html_parser;

std::string read_page(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What a result list says, node by node: the node's address or the string.
std::vector<std::string> shown(const std::vector<detail::xpath_result>& results) {
  std::vector<std::string> out;
  for (const auto& result : results) {
    out.push_back(result.node
                      ? "node " + std::to_string(reinterpret_cast<std::uintptr_t>(result.node))
                      : "text " + result.text);
  }
  return out;
}

// Pages that hold what paths get wrong: elements inside elements of the same name (a set that
// holds a node and its descendant), positions among a parent's children of one name, comments,
// text beside elements, attributes present, absent and empty.
const std::vector<std::string> made_pages = {
    "<div id=a class='x y'><p>one</p><div id=b><p>two</p><p class=x>three</p></div>"
    "<p>four</p><!-- c1 --></div><div id=c><p>five<b>bold</b>tail</p></div>",
    "<ul><li>a<ul><li>a1</li><li class=''>a2</li></ul></li><li class='x'>b</li>"
    "<li>c<a href=/c>c</a></li></ul><ol><li>1</li><li data-n=2>2</li></ol>",
    "<table><tr><td>1</td><td><table><tr><td>inner</td></tr></table></td></tr>"
    "<tr><td>3</td><td title='t'>4</td></tr></table><p>after <!-- c2 --> text</p>",
    "",
    "just text",
};

const std::vector<std::string> paths = {
    "/",
    "//p",
    "//p/text()",
    "//div",
    "//div/p",
    "//div//p",
    "//div/div/p",
    "//div[@id='b']//p",
    "//div//div",
    "//p[1]",
    "//p[2]",
    "//p[3]/text()",
    "//div/p[2]",
    "//div//p[1]/text()",
    "//p[@class='x']",
    "//p[@class!='x']",
    "//*[@class]",
    "//*[not(@class)]",
    "//*[contains(@class, 'x')]",
    "//*[contains(@class,'')]",
    "//*[starts-with(@class, 'x')]",
    "//p[text()='four']",
    "//li[text()='a']",
    "//li",
    "//li[1]",
    "//li[2]/text()",
    "//ul/li",
    "//ul//li",
    "//li//a/@href",
    "//li/@class",
    "//li[@class]/text()",
    "//li[@class][1]",
    "//li[1][@class]",
    "//ol/li[2]/@data-n",
    "//@class",
    "//@*",
    "//a/@*",
    "//td",
    "//td[2]",
    "//tr/td[1]/text()",
    "//table//td",
    "//table/tbody/tr[2]/td",
    "//td[@title]/text()",
    "//comment()",
    "//div/comment()",
    "//text()",
    "//node()",
    "/html/body/*",
    "/html/body/node()",
    "/html/head/title/text()",
    "//title/text()",
    "//h1",
    "//h2",
    "//div[@class='body']//a/@href",
    "//div[@class='related']//li/a/text()",
    "//p[contains(@class, 'star-rating')]/@class",
    "//article[@class='product_pod']//h3/a/@title",
    "//ul[@class='breadcrumb']/li/a/text()",
    "//a[starts-with(@href, 'http')]/@href",
    "//DIV",
    "//Title",
    "//*",
    "/*",
    "/*/*",
    "//b/text()",
    "//section//div[@class='section']/h2",
    "//pre//span[@class]",
    "//dl//dt[1]",
};

// Relative to an element: its own subtree, and the whole page again with "//".
const std::vector<std::string> relative_paths = {
    ".",      "./p",           ".//p",      "p",          "p[1]", "*",        "node()",
    "text()", "./text()",      ".//text()", "@id",        "@*",   ".//@href", "./*/text()",
    "//p[1]", ".//a[1]/@href", "comment()", "./div/p[2]",
};

std::vector<std::pair<std::string, std::string>> pages_to_check() {
  std::vector<std::pair<std::string, std::string>> pages;
  for (std::size_t i = 0; i < made_pages.size(); ++i) {
    pages.emplace_back("made page " + std::to_string(i), made_pages[i]);
  }
  for (const auto* dir : {"config/examples/books", "tests/fixtures/xpath"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(crawler::fixtures::source_dir() / dir)) {
      if (entry.path().extension() == ".html") {
        pages.emplace_back(entry.path().string(), read_page(entry.path()));
      }
    }
  }
  // One page in ten of python3-doc, contents.html among them.
  const std::filesystem::path docs = "/usr/share/doc/python3.11/html";
  EXPECT_TRUE(std::filesystem::is_directory(docs))
      << docs << " is missing: install Debian's python3-doc, as .ci/packages.txt does";
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(docs)) {
    if (entry.path().extension() == ".html") found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  for (std::size_t i = 0; i < found.size(); i += 10) {
    pages.emplace_back(found[i].string(), read_page(found[i]));
  }
  pages.emplace_back("contents.html", read_page(docs / "contents.html"));
  return pages;
}

// The pages are dealt into four shares, each a test of its own: ctest runs them side by side, and
// none comes near its time limit on a loaded machine (one test of every page took 150 to 200 s).
constexpr std::size_t page_shares = 4;

class paths_with_each_parser : public testing::TestWithParam<std::tuple<html_parser, std::size_t>> {
};

TEST_P(paths_with_each_parser, every_path_answers_what_libxml2_answers_on_its_copy) {
  auto [parser, share] = GetParam();
  auto every_page = pages_to_check();
  ASSERT_GE(every_page.size(), 60u);
  std::vector<std::pair<std::string, std::string>> pages;
  for (std::size_t i = share; i < every_page.size(); i += page_shares) {
    pages.push_back(std::move(every_page[i]));
  }
  std::size_t nonempty = 0;
  for (const auto& [name, body] : pages) {
    auto document = html_document::parse(body, "text/html; charset=utf-8", {}, parser);
    for (const auto& path : paths) {
      auto answered = detail::evaluate_xpath_path(*document, document->root(), path);
      ASSERT_TRUE(answered.has_value()) << "left to libxml2: " << path;
      auto expected = detail::evaluate_xpath_with_libxml2(*document, document->root(), path);
      ASSERT_EQ(shown(*answered), shown(expected)) << name << ": " << path;
      nonempty += !expected.empty();
    }
    // From the first 15 elements of the page that have children.
    auto elements = crawler::select(document, "*");
    std::size_t contexts = 0;
    for (const auto& element : elements) {
      if (!element.node() || !element.node()->first_child) continue;
      if (++contexts > 15) break;
      for (const auto& path : relative_paths) {
        auto answered = detail::evaluate_xpath_path(*document, element.node(), path);
        ASSERT_TRUE(answered.has_value()) << "left to libxml2: " << path;
        ASSERT_EQ(shown(*answered),
                  shown(detail::evaluate_xpath_with_libxml2(*document, element.node(), path)))
            << name << ", from the element <" << element.node()->name << ">: " << path;
      }
    }
  }
  EXPECT_GE(nonempty, pages.size() * 10) << "too few paths found anything to compare";
}

INSTANTIATE_TEST_SUITE_P(xpath_paths, paths_with_each_parser,
                         testing::Combine(testing::Values(html_parser::gumbo, html_parser::libxml2),
                                          testing::Range(std::size_t(0), page_shares)),
                         [](const auto& info) {
                           // (No structured binding: its comma would split the macro's arguments.)
                           auto parser = std::get<0>(info.param);
                           auto share = std::get<1>(info.param);
                           return std::string(parser == html_parser::gumbo ? "gumbo" : "libxml2") +
                                  "_pages_" + std::to_string(share + 1) + "_of_" +
                                  std::to_string(page_shares);
                         });

// Paths from a fixed seed, put together from steps and predicates, over the made pages and a
// python3-doc page, from the page and from elements: each answers what libxml2 answers.
TEST(xpath_paths, every_generated_path_answers_what_libxml2_answers) {
  const std::vector<std::string> tests = {"p",      "div",    "li",        "td",   "tr",
                                          "a",      "b",      "ul",        "span", "*",
                                          "text()", "node()", "comment()", "dt",   "section"};
  const std::vector<std::string> predicates = {"[1]",
                                               "[2]",
                                               "[3]",
                                               "[@class]",
                                               "[not(@class)]",
                                               "[@id='b']",
                                               "[@class!='x']",
                                               "[@href]",
                                               "[contains(@class,'x')]",
                                               "[text()='a']",
                                               "[starts-with(@href, '/')]",
                                               "[@class='section']",
                                               "[0]"};
  auto pages = made_pages;
  pages.push_back(read_page("/usr/share/doc/python3.11/html/tutorial/controlflow.html"));
  ASSERT_GT(pages.back().size(), 50000u) << "python3-doc's tutorial/controlflow.html";
  std::mt19937 random(51);
  std::size_t compared = 0, found = 0;
  for (const auto& body : pages) {
    for (auto parser : {html_parser::gumbo, html_parser::libxml2}) {
      auto document = html_document::parse(body, "text/html; charset=utf-8", {}, parser);
      auto elements = crawler::select(document, "*");
      for (int round = 0; round < 300; ++round) {
        std::string path = random() % 3 == 0 ? "." : (random() % 2 ? "/" : "");
        auto steps = 1 + random() % 2;
        for (unsigned k = 0; k < steps; ++k) {
          if (path == "/") {
            path += random() % 2 ? "" : "/";  // "/p" or "//p"
          } else if (k > 0 || !path.empty()) {
            path += random() % 2 ? "/" : "//";
          }
          path += tests[random() % tests.size()];
          while (random() % 3 == 0) path += predicates[random() % predicates.size()];
        }
        if (random() % 4 == 0) path += random() % 2 ? "/@class" : "//@*";
        if (path.starts_with("./") && random() % 2) path.erase(0, 2);
        const crawler::html_node* context = document->root();
        if (!elements.empty() && random() % 2) {
          context = elements[random() % elements.size()].node();
        }
        auto answered = detail::evaluate_xpath_path(*document, context, path);
        ASSERT_TRUE(answered.has_value()) << "left to libxml2: " << path;
        auto expected = detail::evaluate_xpath_with_libxml2(*document, context, path);
        ASSERT_EQ(shown(*answered), shown(expected)) << path;
        ++compared;
        found += !expected.empty();
      }
    }
  }
  EXPECT_GE(compared, 3000u);
  EXPECT_GE(found, compared / 20) << "too few paths found anything to compare";
}

// What is not a plain path is libxml2's: unions, other axes, functions, arithmetic, last(),
// prefixes, several tests in one predicate, and what is not XPath at all (libxml2 names the
// error).
TEST(xpath_paths, what_is_not_a_plain_path_is_left_to_libxml2_which_answers_it) {
  auto document = html_document::parse(made_pages[0], "text/html");
  const std::vector<std::string> others = {
      "//p | //div",
      "count(//p)",
      "//p[last()]",
      "../p",
      "//p/..",
      "descendant::p",
      "//p[position() < 3]",
      "//svg:rect",
      "//p[@class and @id]",
      "//.",
      "//p[1.5]",
      "//p[text()]",
      "string(//p)",
      "//p[@class = //p/@id]",
      "//*[has-class('x')]",
      "//p[-1]",
      "//p[b]",
      "//p[@x:y]",
      "//@x:y",
      "//p/@class[1]",
      ".[1]",
      ". [1]",
      "//p[",
      "///p",
      "//p/",
      "@",
  };
  for (const auto& query : others) {
    EXPECT_FALSE(detail::evaluate_xpath_path(*document, document->root(), query).has_value())
        << "answered on our tree: " << query;
  }
  // The last <p> of each parent, in document order.
  EXPECT_EQ(crawler::select_xpath(document, "//p[last()]/text()").getall(),
            (std::vector<std::string>{"three", "four", "five", "tail"}));
  EXPECT_EQ(crawler::select_xpath(document, "count(//p)").getall(),
            std::vector<std::string>{"5.0"});
  EXPECT_THROW(crawler::select_xpath(document, "//p["), crawler::selector_error);
  // XML documents keep their namespaces: libxml2's, on its own tree.
  auto feed = html_document::parse_xml("<feed><entry id='1'/></feed>");
  EXPECT_FALSE(detail::evaluate_xpath_path(*feed, feed->root(), "//entry/@id").has_value());
  EXPECT_EQ(crawler::select_xpath(feed, "//entry/@id").getall(), std::vector<std::string>{"1"});
}

}  // namespace xpath_paths_cases
