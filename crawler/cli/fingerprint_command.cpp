#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/redact.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/cli/detail/lines.h"
#include "request/canonical_url.h"
#include "request/fingerprint.h"

namespace crawler::cli {
namespace {

struct fingerprint_options {
  std::string impl = "2.7";
  std::string method = "GET";
  std::string body;
  std::vector<std::string> urls;
};

// One output line per URL, gathered in `out`; a URL that cannot be canonicalized is reported on
// stderr with where it came from, and the exit status says some failed, but the other URLs are
// still printed.
template <class Where>
bool print_fingerprint(const fingerprint_options& options, dedup::fingerprint_scheme scheme,
                       std::string_view url, const Where& where, std::string& out) {
  try {
    std::string canonical = dedup::canonicalize_url(url);
    auto fp = dedup::fingerprint_of_canonical(options.method, canonical, options.body, scheme);
    out.append(fp.hex()).append(1, '\t').append(canonical).append(1, '\n');
    return true;
  } catch (const dedup::url_error& error) {
    std::cerr << "crawler fingerprint: " << where() << ": " << redact(error.what()) << '\n';
    return false;
  }
}

void write_out(std::string& out) {
  std::fwrite(out.data(), 1, out.size(), stdout);
  out.clear();
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
    std::string out;
    for (const auto& url : options->urls) {
      if (url != "-") {
        all_ok &= print_fingerprint(*options, scheme, url, [&] { return "'" + url + "'"; }, out);
        continue;
      }
      bool read = detail::for_each_line(stdin, [&](std::string_view line, std::size_t number) {
        if (line.empty()) return;
        all_ok &= print_fingerprint(
            *options, scheme, line, [&] { return "stdin line " + std::to_string(number); }, out);
        if (out.size() > (1 << 16)) write_out(out);
      });
      if (!read) {
        std::cerr << "crawler fingerprint: cannot read standard input\n";
        all_ok = false;
      }
    }
    write_out(out);
    std::fflush(stdout);
    exit_status = all_ok ? 0 : 1;
  });
}

}  // namespace crawler::cli
