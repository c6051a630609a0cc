// Parse + select (CSS, or the same fields in XPath) + extract links of a 12 KB page, against the
// one-pass href scanner as baseline.
//
//   ./build/bench/parse_bench
//   PARSE_BENCH_PAGES=DIR ./build/bench/parse_bench   # also parse_site_pages: DIR's *.html pages
//
// parse_site_pages parses real pages in turn (up to 2,000, evenly sampled from DIR's tree), so the
// suite (bench/run.sh) can take its per-page time from a crawl of the same site.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "crawler/parse/detail/tag_openings.h"
#include "crawler/parse/detail/tree_builder.h"
#include "crawler/parse/detail/xpath.h"
#include "crawler/parse/href_scanner.h"
#include "crawler/parse/link_extractor.h"
#include "crawler/parse/response.h"

namespace {

// A catalogue-like page of about 12 KB: a navigation list, 20 product blocks, filler text.
std::string make_page() {
  std::string html =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Page 17</title></head><body>"
      "<ul class=\"nav\">";
  for (int i = 0; i < 10; ++i) {
    html += "<li><a href=\"/category/" + std::to_string(i) + "/index.html\">Category " +
            std::to_string(i) + "</a></li>";
  }
  html += "</ul><ol class=\"row\">";
  for (int i = 0; i < 20; ++i) {
    html += "<li class=\"col\"><article class=\"product_pod\"><h3><a href=\"/catalogue/book-" +
            std::to_string(i) + "/index.html\" title=\"Book " + std::to_string(i) + "\">Book " +
            std::to_string(i) + "</a></h3><p class=\"price_color\">£" + std::to_string(10 + i) +
            ".99</p><p class=\"instock availability\">In stock</p>"
            "</article></li>";
  }
  html += "</ol><div class=\"text\">";
  while (html.size() < 12 * 1024 - 200) {
    html += "<p>A crawler frontier holds requests; the scheduler asks the dupefilter. </p>";
  }
  html +=
      "</div><ul class=\"pager\"><li class=\"next\"><a href=\"page-18.html\">next</a></li>"
      "</ul></body></html>";
  return html;
}

crawler::response make_response() {
  crawler::response response;
  response.url = "http://books.example/catalogue/page-17.html";
  response.request.url = response.url;
  response.body = make_page();
  response.headers.emplace_back("Content-Type", "text/html; charset=utf-8");
  return response;
}

void baseline_href_scanner(benchmark::State& state) {
  auto response = make_response();
  for (auto _ : state) {
    std::size_t links = 0;
    crawler::for_each_href(response.body, [&](std::string_view) { ++links; });
    benchmark::DoNotOptimize(links);
  }
  state.SetBytesProcessed(std::int64_t(state.iterations() * response.body.size()));
}
BENCHMARK(baseline_href_scanner);

// The nesting-depth budget check html_document::parse runs before Gumbo (HTML_MAX_DEPTH).
void depth_estimate(benchmark::State& state) {
  auto response = make_response();
  for (auto _ : state) benchmark::DoNotOptimize(crawler::estimate_nesting_depth(response.body));
  state.SetBytesProcessed(std::int64_t(state.iterations() * response.body.size()));
}
BENCHMARK(depth_estimate);

// What the check costs on most pages: counting their '<', fewer than HTML_MAX_DEPTH's 2000,
// which bounds the depth without the estimate.
void depth_bound_by_tag_count(benchmark::State& state) {
  auto response = make_response();
  for (auto _ : state) benchmark::DoNotOptimize(crawler::detail::count_tag_openings(response.body));
  state.SetBytesProcessed(std::int64_t(state.iterations() * response.body.size()));
}
BENCHMARK(depth_bound_by_tag_count);

// HTML_PARSER: argument 0 is Gumbo (the default), 1 libxml2.
crawler::html_parser parser_of(const benchmark::State& state) {
  return state.range(0) == 0 ? crawler::html_parser::gumbo : crawler::html_parser::libxml2;
}

void parse_only(benchmark::State& state) {
  auto response = make_response();
  for (auto _ : state) {
    auto document = crawler::html_document::parse(response.body, "text/html; charset=utf-8", {},
                                                  parser_of(state));
    benchmark::DoNotOptimize(document.get());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations() * response.body.size()));
}
BENCHMARK(parse_only)->Arg(0)->Arg(1);

// A page nested 100,000 deep (about 500 KB of <div>s), which Gumbo would take about 17 s over,
// is refused as too deep (HTML_MAX_DEPTH) before a tree is built: its bytes per second against
// parse_only's. hostile_site's test checks that such a page is skipped and counted; this is how
// fast, with no wall-time bound in a test.
void refuse_a_page_nested_100000_deep(benchmark::State& state) {
  std::string deep = "<html><title>deep</title><body>";
  for (int i = 0; i < 100000; ++i) deep += "<div>";
  for (auto _ : state) {
    try {
      auto document = crawler::html_document::parse(deep, "text/html; charset=utf-8", {},
                                                    parser_of(state));
      benchmark::DoNotOptimize(document.get());
      state.SkipWithError("the page nested 100,000 deep was parsed, not refused");
      break;
    } catch (const crawler::page_too_complex&) {
    }
  }
  state.SetBytesProcessed(std::int64_t(state.iterations() * deep.size()));
}
BENCHMARK(refuse_a_page_nested_100000_deep)->Arg(0)->Arg(1);

// parse_only/0's baseline: Gumbo on every page, without the well-formed fast path in front.
void parse_only_gumbo_alone(benchmark::State& state) {
  auto response = make_response();
  for (auto _ : state) {
    auto document = crawler::detail::tree_builder::build(
        response.body, "text/html; charset=utf-8", {}, &crawler::detail::build_with_gumbo_only);
    benchmark::DoNotOptimize(document.get());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations() * response.body.size()));
}
BENCHMARK(parse_only_gumbo_alone);

// What a typical callback does: select four fields per product, extract the links.
std::size_t select_and_extract(const crawler::response& response,
                               const crawler::link_extractor& extractor) {
  std::size_t fields = 0;
  for (const auto& book : response.css("article.product_pod")) {
    fields += book.css("h3 a::attr(title)").get().has_value();
    fields += book.css("p.price_color::text").get().has_value();
  }
  fields += response.css("li.next a::attr(href)").get().has_value();
  return fields + extractor.extract_links(response).size();
}

// The same callback with its fields in XPath, as a spider ported from Scrapy writes them: plain
// paths, answered on the page's own tree.
std::size_t select_and_extract_xpath(const crawler::response& response,
                                     const crawler::link_extractor& extractor) {
  std::size_t fields = 0;
  for (const auto& book : response.xpath("//article[@class='product_pod']")) {
    fields += book.xpath("./h3/a/@title").get().has_value();
    fields += book.xpath("./p[@class='price_color']/text()").get().has_value();
  }
  fields += response.xpath("//li[@class='next']/a/@href").get().has_value();
  return fields + extractor.extract_links(response).size();
}

// The baseline of the one above: the same paths by libxml2, whose first query copies the page's
// tree (what every XPath query did before the paths were answered on the page's own tree).
std::size_t select_and_extract_xpath_by_libxml2(const crawler::response& response,
                                                const crawler::link_extractor& extractor) {
  namespace detail = crawler::detail;
  const auto& page = *response.document();
  auto first = [&](const crawler::html_node* context, std::string_view path) {
    return !detail::evaluate_xpath_with_libxml2(page, context, path).empty();
  };
  std::size_t fields = 0;
  for (const auto& book :
       detail::evaluate_xpath_with_libxml2(page, page.root(), "//article[@class='product_pod']")) {
    fields += first(book.node, "./h3/a/@title");
    fields += first(book.node, "./p[@class='price_color']/text()");
  }
  fields += first(page.root(), "//li[@class='next']/a/@href");
  return fields + extractor.extract_links(response).size();
}

// The whole cost of a page: parsed, then selected by `callback`.
template <std::size_t (*callback)(const crawler::response&, const crawler::link_extractor&)>
void parse_and(benchmark::State& state) {
  auto base = make_response();
  crawler::link_extractor extractor({.allow = {R"(/catalogue/)"}});
  base.parser = parser_of(state);
  for (auto _ : state) {
    crawler::response response = base;  // a fresh response: nothing parsed yet
    benchmark::DoNotOptimize(callback(response, extractor));
  }
}
void parse_select_extract(benchmark::State& state) {
  parse_and<select_and_extract>(state);
}
BENCHMARK(parse_select_extract)->Arg(0)->Arg(1);
void parse_xpath_select_extract(benchmark::State& state) {
  parse_and<select_and_extract_xpath>(state);
}
BENCHMARK(parse_xpath_select_extract)->Arg(0)->Arg(1);
void parse_xpath_by_libxml2_select_extract(benchmark::State& state) {
  parse_and<select_and_extract_xpath_by_libxml2>(state);
}
BENCHMARK(parse_xpath_by_libxml2_select_extract)->Arg(0)->Arg(1);

// The event loop's share for a spider that parses_html: the page arrives parsed by a worker.
void select_extract_parsed_ahead(benchmark::State& state) {
  auto response = make_response();
  crawler::link_extractor extractor({.allow = {R"(/catalogue/)"}});
  response.document();
  for (auto _ : state) benchmark::DoNotOptimize(select_and_extract(response, extractor));
}
BENCHMARK(select_extract_parsed_ahead);

std::vector<std::string> load_pages(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".html") paths.push_back(entry);
  }
  std::sort(paths.begin(), paths.end());
  constexpr std::size_t most = 2000;
  std::size_t step = std::max<std::size_t>(1, paths.size() / most);
  std::vector<std::string> pages;
  for (std::size_t i = 0; i < paths.size() && pages.size() < most; i += step) {
    std::ifstream in(paths[i], std::ios::binary);
    pages.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return pages;
}

// One page per iteration, in turn: the time per iteration is the time per page of the site.
// Argument 0 is Gumbo (with the well-formed fast path), 1 libxml2, 2 Gumbo alone; the counter
// well_formed is the share of the pages the fast path builds.
void parse_site_pages(benchmark::State& state, const std::vector<std::string>* pages) {
  namespace detail = crawler::detail;
  auto parse = [&state](const std::string& page) {
    if (state.range(0) == 2) {
      return detail::tree_builder::build(page, "text/html; charset=utf-8", {},
                                         &detail::build_with_gumbo_only);
    }
    return crawler::html_document::parse(page, "text/html; charset=utf-8", {}, parser_of(state));
  };
  std::size_t next = 0, bytes = 0;
  for (auto _ : state) {
    const auto& page = (*pages)[next];
    next = (next + 1) % pages->size();
    bytes += page.size();
    auto document = parse(page);
    benchmark::DoNotOptimize(document.get());
  }
  state.SetBytesProcessed(std::int64_t(bytes));
  state.counters["pages"] = double(pages->size());
  std::size_t well_formed = 0;
  for (const auto& page : *pages) {
    // A page the fast path gives up on is left with no node at all.
    auto document =
        detail::tree_builder::build(page, "text/html; charset=utf-8", {},
                                    [](const std::string& utf8, detail::tree_builder& builder) {
                                      if (!detail::build_well_formed_html(utf8, builder))
                                        builder.restart();
                                    });
    well_formed += document->root()->first_child != nullptr;
  }
  state.counters["well_formed"] = double(well_formed) / double(pages->size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> site_pages;
  if (const char* dir = std::getenv("PARSE_BENCH_PAGES")) {
    try {
      site_pages = load_pages(dir);
    } catch (const std::filesystem::filesystem_error& error) {
      std::fprintf(stderr, "parse_bench: PARSE_BENCH_PAGES: %s\n", error.what());
      return 2;
    }
    if (site_pages.empty()) {
      std::fprintf(stderr, "parse_bench: PARSE_BENCH_PAGES=%s holds no .html page\n", dir);
      return 2;
    }
    benchmark::RegisterBenchmark("parse_site_pages", parse_site_pages, &site_pages)
        ->Arg(0)
        ->Arg(1)
        ->Arg(2);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
