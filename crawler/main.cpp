// The `crawler` command-line program.
#include <CLI/CLI.hpp>

#include "crawler/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"crawler: a Scrapy-style web crawler in C++"};
  app.require_subcommand(1);
  int exit_status = 0;
  crawler::cli::add_fingerprint_command(app, exit_status);
  crawler::cli::add_dedup_command(app, exit_status);
  CLI11_PARSE(app, argc, argv);
  return exit_status;
}
