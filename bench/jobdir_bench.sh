#!/usr/bin/env bash
# What crash safety costs: `crawler crawl site` on the generated site (nginx on loopback), without
# JOBDIR (the baseline), with JOBDIR (the request journal, one write per page) and with
# JOBDIR_FSYNC (an fsync per page). Prints pages/s of each, best of RUNS, and the ratios.
#
#   bash bench/jobdir_bench.sh [BUILD_DIR] [PAGES] [RUNS]       # defaults: build 20000 3
set -euo pipefail
build=${1:-build}
pages=${2:-20000}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
trap 'stop_site "$work"; rm -rf "$work"' EXIT

source "$here/site_server.sh"
serve_site "$work" "$pages"

# best NAME SETTINGS...: the best pages/s of $runs crawls, each with a fresh JOBDIR.
best() {
  local name=$1; shift
  local top=0
  for run in $(seq "$runs"); do
    rm -rf "$work/job"
    local begin end
    begin=$(date +%s.%N)
    "$crawler" crawl site -a "start=$start" -s LOG_LEVEL=WARNING -s LOGSTATS_INTERVAL=0 \
      -s CONCURRENT_REQUESTS=32 -s CONCURRENT_REQUESTS_PER_DOMAIN=32 "$@" > /dev/null
    end=$(date +%s.%N)
    top=$(python3 -c "print(max($top, $pages / ($end - $begin)))")
  done
  echo "$top" > "$work/$name.rate"
  printf '%-14s %7.0f pages/s\n' "$name" "$top"
}

best memory
best jobdir -s JOBDIR="$work/job"
best jobdir-fsync -s JOBDIR="$work/job" -s JOBDIR_FSYNC=true
python3 - "$work" <<'PY'
import sys
rate = lambda name: float(open(f"{sys.argv[1]}/{name}.rate").read())
print(f"JOBDIR: {rate('jobdir') / rate('memory'):.2f}x the pages/s without it; "
      f"JOBDIR_FSYNC: {rate('jobdir-fsync') / rate('memory'):.2f}x")
PY
