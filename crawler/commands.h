// The `crawler` program's subcommands. Each registers itself on the CLI11 app and runs when chosen.
#pragma once

#include <CLI/CLI.hpp>

namespace crawler::cli {

/// `crawler fingerprint [--impl 2.6|2.7] [--method M] [--body TEXT] URL...` (`-` reads URLs from
/// standard input, one per line): prints "<40-hex fingerprint>\t<canonical URL>" per URL.
void add_fingerprint_command(CLI::App& app, int& exit_status);

}  // namespace crawler::cli
