// What one page costs in memory, step by step: the body read, the page parsed, the fields of the
// python3-doc crawl selected in CSS or in XPath, the links extracted. One process per run, since
// peak RSS only grows.
//
//   ./build/bench/page_memory /usr/share/doc/python3/html/contents.html gumbo css
//
// Prints, after each step, the heap in use (mallinfo2) and the process's peak RSS, in MB.
#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "crawler/parse/html.h"
#include "crawler/parse/link_extractor.h"
#include "crawler/parse/response.h"
#include "crawler/parse/selector.h"

namespace {

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// In use from malloc's heap and from its own mappings (large blocks).
double heap_mb() {
  auto info = mallinfo2();
  return static_cast<double>(info.uordblks + info.hblkhd) / (1024.0 * 1024.0);
}

void report(const char* step) {
  std::printf("%-10s heap %7.1f MB  peak RSS %7.1f MB\n", step, heap_mb(), peak_rss_mb());
}

// The python3-doc crawl's fields (bench/peers/pydoc_fields_{css,xpath}.json).
std::size_t select_fields(const std::shared_ptr<const crawler::html_document>& page, bool xpath) {
  std::size_t values = 0;
  auto take = [&](const crawler::selector_list& found) { values += found.getall().size(); };
  if (xpath) {
    for (const char* query : {"//title/text()", "//h1", "//h2", "//div[@class='body']//a/@href",
                              "//div[@class='related']//li/a/text()"}) {
      take(crawler::select_xpath(page, query));
    }
  } else {
    for (const char* query :
         {"title::text", "h1", "h2", "div.body a::attr(href)", "div.related li a::text"}) {
      take(crawler::select(page, query));
    }
  }
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: page_memory FILE gumbo|libxml2 css|xpath\n");
    return 2;
  }
  report("start");
  std::ifstream in(argv[1], std::ios::binary);
  std::string body{std::istreambuf_iterator<char>(in), {}};
  if (body.empty()) {
    std::fprintf(stderr, "page_memory: cannot read %s\n", argv[1]);
    return 2;
  }
  report("read");
  crawler::response response;
  response.url = "http://127.0.0.1/contents.html";
  response.headers = {{"Content-Type", "text/html; charset=utf-8"}};
  response.body = std::move(body);
  response.parser = crawler::html_parser_named(argv[2]);
  const auto& page = response.document();
  report("parsed");
  auto values = select_fields(page, std::strcmp(argv[3], "xpath") == 0);
  report("selected");
  crawler::link_extractor links;
  auto found = links.extract_links(response);
  report("links");
  std::printf("%zu bytes, %zu values, %zu links\n", response.body.size(), values, found.size());
  return 0;
}
