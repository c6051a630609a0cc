#!/usr/bin/env bash
# Soak: `crawler crawl site` against a site without end (bench/soak_server.py: 1% 500s, 0.5%
# connection resets) for SECONDS, breadth-first (each page brings one new URL, so the frontier
# keeps its size) with a Bloom dupefilter of fixed size. Samples the crawler's RSS every 5 s and
# prints RSS after the first minute (after a third of the run when it is shorter) against RSS at
# the end: a crawl that runs for days must not grow. Fails (exit 1) when the end is more than 10%
# above, when the crawl did not run to its time limit, or when it crawled nothing.
#
#   bash bench/soak.sh [BUILD_DIR] [SECONDS]        # defaults: build 1800; CI runs 40
set -euo pipefail
build=${1:-build}
seconds=${2:-1800}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$here/soak_server.py" "$port" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
# Until the server answers, not a fixed second: CI starts the soak beside the fuzz targets, and
# on two busy cores Python took longer than that to listen (the crawl's three tries then failed).
for try in $(seq 300); do
  (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break
  kill -0 "$server" 2> /dev/null || { echo "bench/soak_server.py exited"; exit 1; }
  [ "$try" -lt 300 ] || { echo "bench/soak_server.py did not listen on port $port in 30 s"; exit 1; }
  sleep 0.1
done
"$crawler" crawl site -a "start=http://127.0.0.1:$port/p/0" -s LOG_LEVEL=WARNING \
  -s CLOSESPIDER_TIMEOUT="$seconds" -s DUPEFILTER_CLASS=bloom -s BLOOMFILTER_CAPACITY=20000000 \
  -s CONCURRENT_REQUESTS=16 -s SCHEDULER_MEMORY_QUEUE=fifo -s STATS_FILE="$work/stats.json" \
  > /dev/null 2> "$work/log" &
crawl=$!
: > "$work/rss"
while kill -0 "$crawl" 2>/dev/null; do
  awk '/VmRSS/ {print $2}' "/proc/$crawl/status" >> "$work/rss" 2>/dev/null || true
  sleep 5
done
wait "$crawl"
python3 - "$work" "$seconds" <<'PY'
import json, sys
work = sys.argv[1]
rss = [int(line) for line in open(f"{work}/rss") if line.strip()]
stats = json.load(open(f"{work}/stats.json"))
seconds = int(sys.argv[2])
first_at = min(60, seconds // 3)  # the first minute, or a third of a shorter run
first = rss[min(first_at // 5, len(rss) - 1)]
last = rss[-1]
print(f"pages {stats.get('response_received_count', 0)}, "
      f"500s {stats.get('downloader/response_status_count/500', 0)}, "
      f"errors {sum(v for k, v in stats.items() if k.startswith('downloader/exception_count'))}, "
      f"retries {stats.get('retry/count', 0)}, "
      f"finish_reason {stats.get('finish_reason')}")
print(f"RSS after {first_at} s {first / 1024:.1f} MB, at the end {last / 1024:.1f} MB, "
      f"peak {max(rss) / 1024:.1f} MB: end/first = {last / first:.3f}")
if stats.get("finish_reason") != "closespider_timeout" or stats.get("response_received_count", 0) == 0:
    sys.exit("the crawl did not run until its time limit")
if last > first * 1.10:
    sys.exit(f"RSS grew by {100 * (last / first - 1):.0f}%, more than 10%")
PY
