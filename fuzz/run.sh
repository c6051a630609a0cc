#!/usr/bin/env bash
# Runs every fuzz target for SECONDS on its seed corpus (new inputs go to a temp dir, the
# repository's corpus is only read) and prints each target's executions. A crash, leak, timeout
# or out-of-memory stops with the target's report and the input that caused it.
#
#   bash fuzz/run.sh [BUILD_DIR] [SECONDS]       # defaults: build-fuzz 5
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for corpus in "$here"/corpus/*/; do
  name=$(basename "$corpus")
  mkdir -p "$work/$name"
  "$build/fuzz/${name}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/$name-" \
    "$work/$name" "$corpus" > "$work/$name.log" 2>&1 || {
    tail -40 "$work/$name.log"
    for artifact in "$work/$name"-*; do
      [ -e "$artifact" ] && { echo "input: $artifact"; base64 < "$artifact" | head -c 2000; echo; }
    done
    echo "fuzz target $name failed" >&2
    exit 1
  }
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$name.log" | grep -o '[0-9]*$')
  printf '%-16s %10s executions in %s s\n' "$name" "$runs" "$seconds"
done
