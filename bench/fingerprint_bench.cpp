// Fingerprint + canonicalization of typical URLs (Google Benchmark). Target: at most 1 us for an
// ~80-byte URL. Baseline in the same run: SHA-1 alone over the same bytes, the floor of any scheme.
#include <benchmark/benchmark.h>

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "request/canonical_url.h"
#include "request/fingerprint.h"

namespace {

// 80 bytes: a product page with a few query parameters, the common case in a crawl's frontier.
const std::string typical_url =
    "https://shop.example.com/catalogue/books/page-12.html?sort=price&ref=nav&lang=en";

void baseline_sha1_only(benchmark::State& state) {
  // The low-level calls, as fingerprint.cpp makes them: OpenSSL 3's one-shot SHA1() fetches an
  // EVP algorithm per call and costs several times more.
  unsigned char digest[20];
  for (auto _ : state) {
    SHA_CTX sha;
    SHA1_Init(&sha);
    SHA1_Update(&sha, typical_url.data(), typical_url.size());
    SHA1_Final(digest, &sha);
    benchmark::DoNotOptimize(digest);
  }
}
BENCHMARK(baseline_sha1_only);

void canonicalize_url(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(crawler::dedup::canonicalize_url(typical_url));
}
BENCHMARK(canonicalize_url);

void request_fingerprint_2_7(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(crawler::dedup::request_fingerprint("GET", typical_url));
}
BENCHMARK(request_fingerprint_2_7);

void request_fingerprint_2_6(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(crawler::dedup::request_fingerprint(
        "GET", typical_url, "", crawler::dedup::fingerprint_scheme::scrapy_2_6));
  }
}
BENCHMARK(request_fingerprint_2_6);

}  // namespace

BENCHMARK_MAIN();
