// The `crawler` program: every subcommand on one CLI11 app.
#include <iostream>

#include "config/redact.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/cli/main.h"

namespace crawler::cli {

int run_command(std::string_view name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& error) {
    std::cerr << "crawler " << name << ": " << redact(error.what()) << '\n';
    return 2;
  }
}

int main(int argc, char** argv) {
  CLI::App app{"crawler: a Scrapy-style web crawler in C++", "crawler"};
  app.require_subcommand(1);
  int exit_status = 0;
  add_crawl_commands(app, exit_status);
  add_fingerprint_command(app, exit_status);
  add_dedup_command(app, exit_status);
  add_push_command(app, exit_status);
  add_stats_command(app, exit_status);
  add_requeue_command(app, exit_status);
  add_status_command(app, exit_status);
  add_serve_command(app, exit_status);
  add_genspider_command(app, exit_status);
  add_shell_command(app, exit_status);
  add_bench_command(app, exit_status);
  // As `scrapy` alone: the list of commands, and no error.
  if (argc == 1 || (argc == 2 && std::string_view(argv[1]) == "help")) {
    std::cout << app.help();
    return 0;
  }
  CLI11_PARSE(app, argc, argv);
  return exit_status;
}

}  // namespace crawler::cli
