#!/usr/bin/env bash
# What a fleet costs its Redis, per unit, for bench/README.md's plan for a billion URLs. One
# redis-server on loopback, and for each figure a fresh database:
#   per crawled page   one SCHEDULER=redis worker crawls the generated site (nginx, as
#                      fleet_bench.sh): commands, bytes in and out, Redis CPU, each per page
#   per seen URL       URLS new URLs through `crawler dedup` with each Redis dupefilter at
#                      BLOOMFILTER_ERRORRATE 0.001 (redis_bitmap sized for URLS; redisbloom with
#                      the real module when ../shared/redisbloom is there): MEMORY USAGE of its key
#   per queued request a worker crawls PAGES pages of bench/fanout_server.py (FANOUT new links
#                      each) with SCHEDULER_PERSIST, leaving about PAGES * FANOUT requests queued:
#                      MEMORY USAGE of the queue / its length
#
#   bash bench/redis_footprint.sh [BUILD_DIR] [URLS] [PAGES] [FANOUT] [SITE_PAGES]
#                                 # defaults: build 1000000 100 1000 5000
set -euo pipefail
build=${1:-build}
urls=${2:-1000000}
pages=${3:-100}
fanout=${4:-1000}
site_pages=${5:-5000}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
cleanup() {
  stop_site "$work"
  [ -n "${redis_pid:-}" ] && kill "$redis_pid" 2>/dev/null || true
  [ -n "${fanout_pid:-}" ] && kill "$fanout_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
source "$here/site_server.sh"

module_args=()
if [ -f "$here/../../shared/redisbloom/build.sh" ]; then
  module=$(bash "$here/../../shared/redisbloom/build.sh" "$work/redisbloom" | tail -1)
  module_args=(--loadmodule "$module")
fi
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
  "${module_args[@]}" > "$work/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$redis_port" ping > /dev/null 2>&1 && break; sleep 0.1; done
redis_url="redis://127.0.0.1:$redis_port/0"
cli() { redis-cli -p "$redis_port" "$@"; }
fresh() { cli flushall > /dev/null; cli config resetstat > /dev/null; }

echo "## Per crawled page (one worker, a $site_pages-page generated site)"
serve_site "$work" "$site_pages"
fresh
"$crawler" crawl site -a "start=$start" -s SCHEDULER=redis -s DUPEFILTER_CLASS=redis_set \
  -s REDIS_URL="$redis_url" -s MAX_IDLE_TIME_BEFORE_CLOSE=1 -s LOG_LEVEL=WARNING \
  -s CONCURRENT_REQUESTS=32 -s CONCURRENT_REQUESTS_PER_DOMAIN=32 -s STATS_FILE="$work/site.json" \
  > /dev/null 2> "$work/site.log"
cli info commandstats > "$work/site.commandstats"
cli info stats > "$work/site.stats"
cli info cpu > "$work/site.cpu"
python3 - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
pages = json.load(open(f"{work}/site.json"))["response_received_count"]
calls = {m[0]: int(m[1]) for m in re.findall(r"cmdstat_(\w+):calls=(\d+)", open(f"{work}/site.commandstats").read())}
commands = sum(v for k, v in calls.items() if k not in ("config", "info", "flushall"))
stats = dict(re.findall(r"(\w+):(\S+)", open(f"{work}/site.stats").read()))
cpu = sum(float(v) for v in re.findall(r"used_cpu_(?:sys|user):([\d.]+)", open(f"{work}/site.cpu").read()))
print(f"- {pages} pages: {commands / pages:.1f} commands, {int(stats['total_net_input_bytes']) / pages:,.0f} bytes "
      f"to Redis, {int(stats['total_net_output_bytes']) / pages:,.0f} bytes from Redis, "
      f"{cpu / pages * 1e6:.0f} µs of Redis CPU per page")
PY
stop_site "$work"

echo "## Per seen URL ($urls URLs, BLOOMFILTER_ERRORRATE 0.001)"
python3 - "$urls" > "$work/urls.txt" <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print(f"https://shop{i % 997}.example/p/{i}.html?ref={i * 7919 % 100003}")
PY
bits=$(python3 -c "import math; print(math.ceil(math.log2(-$urls * math.log(0.001) / math.log(2) ** 2)))")
backends=(redis_set redis_bitmap)
[ ${#module_args[@]} -gt 0 ] && backends+=(redisbloom)
for backend in "${backends[@]}"; do
  fresh
  "$crawler" dedup -s DUPEFILTER_CLASS=$backend -s REDIS_URL="$redis_url" \
    -s BLOOMFILTER_ERRORRATE=0.001 -s BLOOMFILTER_CAPACITY="$urls" -s BLOOMFILTER_BIT="$bits" \
    "$work/urls.txt" > "$work/new-$backend.txt" 2> "$work/dedup-$backend.log"
  key=$(cli --scan | grep -v ':params$' | head -1)
  bytes=$(cli memory usage "$key" samples 0)
  python3 -c "print(f'- $backend: {$bytes:,} bytes for $urls URLs = {$bytes / $urls:.2f} bytes per URL (key $key; $(wc -l < "$work/new-$backend.txt") reported new)')"
done

echo "## Per queued request ($pages pages of a site with $fanout new links a page)"
fanout_port=$(free_port)
python3 "$here/fanout_server.py" "$fanout_port" "$fanout" &
fanout_pid=$!
sleep 1
fresh
"$crawler" crawl site -a "start=http://127.0.0.1:$fanout_port/p/0" -s SCHEDULER=redis \
  -s DUPEFILTER_CLASS=redis_set -s REDIS_URL="$redis_url" -s SCHEDULER_PERSIST=true \
  -s SCHEDULER_MEMORY_QUEUE=fifo -s CLOSESPIDER_PAGECOUNT="$pages" -s LOG_LEVEL=WARNING \
  > /dev/null 2> "$work/fanout.log"
queue=site:requests
length=$(cli zcard $queue)
bytes=$(cli memory usage $queue samples 0)
python3 -c "print(f'- {$length:,} requests in {$bytes:,} bytes = {$bytes / $length:.0f} bytes per queued request ($queue, a sorted set)')"
