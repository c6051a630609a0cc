// The `crawler` program as a function, for a program of one's own that registers its spiders
// and wants every `crawler` subcommand over them (crawl, list, fetch, version, fingerprint,
// dedup, push, stats, status):
//
//   #include "crawler/cli/main.h"
//   int main(int argc, char** argv) { return crawler::cli::main(argc, argv); }
//
// Link crawler::cli. The command-line parser (CLI11) stays inside it: this header is all a
// program needs to compile.
#pragma once

namespace crawler::cli {

/// Parses the command line, runs the chosen subcommand, returns the exit status: 0, 1 when a
/// crawl closed for a failure (redis_unavailable, jobdir_write_failed, feed_write_failed), 2 when
/// it could not start (unknown spider, bad setting, Redis unreachable) or the command line is
/// wrong. With no arguments, or `help`, it prints the list of commands and returns 0.
int main(int argc, char** argv);

}  // namespace crawler::cli
