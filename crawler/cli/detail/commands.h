// The `crawler` program's subcommands. Each registers itself on the CLI11 app and runs when chosen.
// Private to the cli target (not installed): users see crawler/cli/main.h, without CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string_view>

namespace crawler::cli {

/// Every subcommand's one error path: `body`'s exit status, or, when it throws, one line
/// "crawler NAME: what went wrong" on standard error (credentials redacted) and status 2.
int run_command(std::string_view name, const std::function<int()>& body);

/// `crawler crawl NAME [-a k=v]... [-s K=V]... [-o FILE] [-O FILE] [-L LEVEL]`, `crawler list`,
/// `crawler fetch URL [--headers] [--no-redirect]`, `crawler version [-v]`. A crawl that cannot
/// start (unknown spider, bad setting, Redis unreachable) prints one line naming the problem and
/// sets exit status 2.
void add_crawl_commands(CLI::App& app, int& exit_status);

/// `crawler fingerprint [--impl 2.6|2.7] [--method M] [--body TEXT] URL...` (`-` reads URLs from
/// standard input, one per line): prints "<40-hex fingerprint>\t<canonical URL>" per URL.
void add_fingerprint_command(CLI::App& app, int& exit_status);

/// `crawler dedup [-s KEY=VALUE]... [--spider NAME] [--seed-scenario] [FILE|-]...`: feeds URLs
/// through the dupefilter DUPEFILTER_CLASS selects, prints the new ones, logs the stats at the end.
/// Exit status 2 when the dupefilter cannot start (bad setting, Redis unreachable).
void add_dedup_command(CLI::App& app, int& exit_status);

/// `crawler push NAME [-s KEY=VALUE]... URL... | -`: appends start URLs (or JSON requests) to the
/// fleet's REDIS_START_URLS_KEY in one round trip per thousand; every entry is checked first.
void add_push_command(CLI::App& app, int& exit_status);

/// `crawler stats NAME [-s KEY=VALUE]...`: the fleet's summed counters (<spider>:stats) as JSON.
void add_stats_command(CLI::App& app, int& exit_status);

/// `crawler requeue NAME [--bad] [-s KEY=VALUE]...`: puts the fleet's dead letters (<queue>:dead),
/// or with --bad its set-aside entries and start URLs (<queue>:bad), back where they were, byte
/// for byte; exit 1 when records that are neither were left there.
void add_requeue_command(CLI::App& app, int& exit_status);

/// `crawler status NAME [-s KEY=VALUE]...`: one screen on a fleet: each worker (alive or dead by
/// its heartbeat, pages, items, in flight), queued, leased, start URLs waiting, pages/s.
void add_status_command(CLI::App& app, int& exit_status);

/// `crawler serve NAME [-s K=V]... [--port N] [--bind ADDRESS] [--interval S] [--no-auth]`: a
/// live page on the fleet at /, its figures at /api/fleet, its metrics at /metrics.
void add_serve_command(CLI::App& app, int& exit_status);

/// `crawler genspider NAME DOMAIN [-t basic|crawl|cpp] [-d DIR] [--force]`: writes NAME.json
/// (basic: an item per start page; crawl: a rule and its callback) or NAME/NAME.cpp with its
/// CMakeLists.txt. Exit 1 when a file exists (without --force) or cannot be written, 2 for a bad
/// NAME or DOMAIN.
void add_genspider_command(CLI::App& app, int& exit_status);

/// `crawler shell [URL|FILE] [-c FILE.json] [-s KEY=VALUE]... [-L LEVEL]`: fetches the page, then
/// runs a CSS selector or a command (links, fetch URL, headers, status, url, view, help, quit)
/// per line read; with line editing and history on a terminal.
void add_shell_command(CLI::App& app, int& exit_status);

/// `crawler bench [-s KEY=VALUE]...`: crawls a site served from inside the process for
/// CLOSESPIDER_TIMEOUT (10) seconds, every link followed, and prints pages/min.
void add_bench_command(CLI::App& app, int& exit_status);

}  // namespace crawler::cli
