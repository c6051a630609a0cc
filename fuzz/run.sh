#!/usr/bin/env bash
# Runs every fuzz target for SECONDS, or until it has made RUNS executions, on its seed corpus
# (new inputs go to a temp dir, the repository's corpus is only read) and prints each target's
# executions and time. A crash, leak, timeout or out-of-memory stops with the target's report and
# the input that caused it (copied to ./fuzz-failures/). Give TARGETS to run only those;
# FUZZ_TIMEOUT (seconds, default 10) is the longest one input may take.
#
#   bash fuzz/run.sh [BUILD_DIR] [SECONDS] [RUNS] [TARGET...]   # defaults: build-fuzz 5 unlimited
#   bash fuzz/run.sh build-fuzz 1800 10000000                   # the campaign issue 9 asks for
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-5}
runs=${3:--1}
shift $(( $# < 3 ? $# : 3 ))
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(cd "$here/corpus" && echo *))
for name in "${targets[@]}"; do
  corpus="$here/corpus/$name"
  started=$SECONDS
  mkdir -p "$work/$name"
  "$build/fuzz/${name}_fuzzer" -max_total_time="$seconds" -runs="$runs" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/$name-" \
    "$work/$name" "$corpus" > "$work/$name.log" 2>&1 || {
    tail -40 "$work/$name.log"
    for artifact in "$work/$name"-*; do
      [ -e "$artifact" ] || continue
      mkdir -p fuzz-failures && cp "$artifact" fuzz-failures/
      echo "input: fuzz-failures/$(basename "$artifact")"; base64 < "$artifact" | head -c 2000; echo
    done
    echo "fuzz target $name failed" >&2
    exit 1
  }
  executed=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$name.log" | grep -o '[0-9]*$')
  printf '%-16s %10s executions in %s s\n' "$name" "$executed" "$((SECONDS - started))"
done
