// A rule's allow pattern against the URLs of a page: RE2 (what link extractors, crawl-file "re"
// fields and selector re() use) against std::regex (what they used), in the same run.
//
//   ./build/bench/regex_bench
#include <benchmark/benchmark.h>
#include <re2/re2.h>

#include <regex>
#include <string>
#include <vector>

namespace {

const char* const pattern = R"(/catalogue/[^/]+/index\.html)";

// Thirty links as a catalogue page has them: half match.
std::vector<std::string> page_urls() {
  std::vector<std::string> urls;
  for (int i = 0; i < 15; ++i) {
    urls.push_back("http://books.toscrape.com/catalogue/book-" + std::to_string(i) +
                   "_" + std::to_string(1000 + i) + "/index.html");
    urls.push_back("http://books.toscrape.com/category/books/travel_" + std::to_string(i) +
                   "/page-2.html?sort=price&order=" + std::to_string(i));
  }
  return urls;
}

void std_regex_search(benchmark::State& state) {
  std::regex compiled(pattern, std::regex::ECMAScript | std::regex::optimize);
  auto urls = page_urls();
  for (auto _ : state) {
    int matched = 0;
    for (const auto& url : urls) matched += std::regex_search(url, compiled);
    benchmark::DoNotOptimize(matched);
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(urls.size()));
}
BENCHMARK(std_regex_search);

void re2_partial_match(benchmark::State& state) {
  re2::RE2 compiled(pattern);
  auto urls = page_urls();
  for (auto _ : state) {
    int matched = 0;
    for (const auto& url : urls) matched += re2::RE2::PartialMatch(url, compiled);
    benchmark::DoNotOptimize(matched);
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(urls.size()));
}
BENCHMARK(re2_partial_match);

}  // namespace

BENCHMARK_MAIN();
