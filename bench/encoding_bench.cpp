// What every item and every fleet request pays to be written (Google Benchmark): an item as a
// JSON lines feed writes it (Python's json.dumps separators, as Scrapy's exporters), and a request
// dict as scrapy-redis's pickle (CPython's protocol 5, frames and memo included). Baselines in the
// same run: nlohmann's compact dump of the same item, the floor of any JSON encoding of it, and the
// same dict's compact JSON, our own queue form's cost.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "request/python_json.h"
#include "scheduler/fleet/pickle.h"

namespace {

// A catalogue page's item: eight fields, a list, non-ASCII text.
nlohmann::ordered_json typical_item() {
  nlohmann::ordered_json item;
  item["url"] = "https://books.example/catalogue/a-light-in-the-attic_1000/index.html";
  item["title"] = "A Light in the Attic";
  item["price"] = "51.77";
  item["availability"] = "In stock (22 available)";
  item["rating"] = 3;
  item["tags"] = {"poetry", "classics", "Caf\u00e9 \u2615"};
  item["description"] = std::string(400, 'x');
  item["upc"] = "a897fe39b1053632";
  return item;
}

void baseline_compact_dump(benchmark::State& state) {
  auto item = typical_item();
  for (auto _ : state) benchmark::DoNotOptimize(item.dump(-1, ' ', true));
}
BENCHMARK(baseline_compact_dump);

void item_as_scrapys_json_lines(benchmark::State& state) {
  auto item = typical_item();
  for (auto _ : state) {
    benchmark::DoNotOptimize(crawler::with_python_separators(item.dump(-1, ' ', true)));
  }
}
BENCHMARK(item_as_scrapys_json_lines);

// scrapy-redis's request dict, as scrapy_dict_of makes it for a typical link.
crawler::pickle::value request_dict() {
  namespace pickle = crawler::pickle;
  auto dict = pickle::value::dict();
  dict.set("url", pickle::value::str("https://books.example/catalogue/page-2.html"));
  dict.set("callback", pickle::value::str("parse"));
  dict.set("errback", pickle::value{});
  dict.set("headers", pickle::value::dict());
  dict.set("method", pickle::value::str("GET"));
  dict.set("body", pickle::value::bytes(""));
  dict.set("cookies", pickle::value::dict());
  auto meta = pickle::value::dict();
  meta.set("depth", pickle::value::of(std::int64_t(2)));
  meta.set("link_text", pickle::value::str("next"));
  dict.set("meta", meta);
  dict.set("encoding", pickle::value::str("utf-8"));
  dict.set("priority", pickle::value::of(std::int64_t(0)));
  dict.set("dont_filter", pickle::value::of(false));
  dict.set("flags", pickle::value::list());
  dict.set("cb_kwargs", pickle::value::dict());
  return dict;
}

void baseline_request_as_json(benchmark::State& state) {
  nlohmann::json request = {{"url", "https://books.example/catalogue/page-2.html"},
                            {"callback", "parse"},
                            {"meta", {{"depth", 2}, {"link_text", "next"}}},
                            {"priority", 0}};
  for (auto _ : state) benchmark::DoNotOptimize(request.dump());
}
BENCHMARK(baseline_request_as_json);

void request_as_scrapy_redis_pickle(benchmark::State& state) {
  auto dict = request_dict();
  for (auto _ : state) benchmark::DoNotOptimize(crawler::pickle::write(dict));
}
BENCHMARK(request_as_scrapy_redis_pickle);

void scrapy_redis_pickle_read(benchmark::State& state) {
  auto written = crawler::pickle::write(request_dict());
  for (auto _ : state) benchmark::DoNotOptimize(crawler::pickle::read(written));
}
BENCHMARK(scrapy_redis_pickle_read);

}  // namespace

BENCHMARK_MAIN();
