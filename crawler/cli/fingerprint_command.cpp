#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "config/redact.h"
#include "crawler/cli/detail/commands.h"
#include "dedup/canonical_url.h"
#include "dedup/fingerprint.h"

namespace crawler::cli {
namespace {

struct fingerprint_options {
  std::string impl = "2.7";
  std::string method = "GET";
  std::string body;
  std::vector<std::string> urls;
};

// One output line per URL; a URL that cannot be canonicalized is reported on stderr with its line,
// and the exit status says some failed, but the other URLs are still printed.
bool print_fingerprint(const fingerprint_options& options, dedup::fingerprint_scheme scheme,
                       const std::string& url, const std::string& where) {
  try {
    std::string canonical = dedup::canonicalize_url(url);
    auto fp = dedup::fingerprint_of_canonical(options.method, canonical, options.body, scheme);
    std::cout << fp.hex() << '\t' << canonical << '\n';
    return true;
  } catch (const dedup::url_error& error) {
    std::cerr << "crawler fingerprint: " << where << ": " << redact(error.what()) << '\n';
    return false;
  }
}

}  // namespace

void add_fingerprint_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<fingerprint_options>();
  CLI::App* command = app.add_subcommand(
      "fingerprint", "Print Scrapy-compatible request fingerprints and canonical URLs");
  command->add_option("--impl", options->impl, "REQUEST_FINGERPRINTER_IMPLEMENTATION")
      ->check(CLI::IsMember({"2.7", "2.6", "scrapy-redis-0.8"}))
      ->capture_default_str();
  command->add_option("--method", options->method, "HTTP method")->capture_default_str();
  command->add_option("--body", options->body, "request body");
  command->add_option("urls", options->urls, "URLs, or - to read them from standard input")
      ->required();
  command->callback([options, &exit_status] {
    auto scheme = *dedup::parse_fingerprint_scheme(options->impl);
    bool all_ok = true;
    for (const auto& url : options->urls) {
      if (url != "-") {
        all_ok &= print_fingerprint(*options, scheme, url, "'" + url + "'");
        continue;
      }
      std::string line;
      for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
        if (line.empty()) continue;
        all_ok &= print_fingerprint(*options, scheme, line, "stdin line " + std::to_string(number));
      }
    }
    std::cout.flush();
    exit_status = all_ok ? 0 : 1;
  });
}

}  // namespace crawler::cli
