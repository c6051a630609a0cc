#!/usr/bin/env bash
# The host frontier's cost where it cannot help: one host, no delay. The generated site (nginx,
# as run.sh) crawled by one `crawler crawl site` with SCHEDULER_QUEUE_CLASS=priority (the
# baseline) and =host, each with SCHEDULER=memory and with SCHEDULER=redis (one worker): pages/s,
# medians of RUNS crawls, and the ratio to the baseline. Then, for SCHEDULER=redis, the round
# trips a page costs: the commands the worker sent (redis-cli MONITOR, leaving out what scripts
# ran inside Redis) per crawled page.
#
#   bash bench/host_frontier_bench.sh [BUILD_DIR] [PAGES] [RUNS]      # defaults: build 5000 3
set -euo pipefail
build=${1:-build}
pages=${2:-5000}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
cleanup() {
  stop_site "$work"
  [ -n "${monitor_pid:-}" ] && kill "$monitor_pid" 2>/dev/null || true
  [ -n "${redis_pid:-}" ] && kill "$redis_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
source "$here/site_server.sh"
serve_site "$work" "$pages"

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
  > "$work/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$redis_port" ping > /dev/null 2>&1 && break; sleep 0.1; done
redis_url="redis://127.0.0.1:$redis_port/0"

# crawl NAME SCHEDULER QUEUE_CLASS: one crawl of the site; its stats in $work/NAME.json.
crawl() {
  local name=$1 scheduler=$2 queue_class=$3
  redis-cli -p "$redis_port" flushall > /dev/null
  local dupefilter=bloom
  [ "$scheduler" = redis ] && dupefilter=redis_set
  "$crawler" crawl site -a "start=$start" -s LOG_LEVEL=WARNING -s LOGSTATS_INTERVAL=0 \
    -s SCHEDULER="$scheduler" -s SCHEDULER_QUEUE_CLASS="$queue_class" \
    -s DUPEFILTER_CLASS=$dupefilter -s REDIS_URL="$redis_url" -s MAX_IDLE_TIME_BEFORE_CLOSE=1 \
    -s CONCURRENT_REQUESTS=32 -s CONCURRENT_REQUESTS_PER_DOMAIN=32 \
    -s STATS_FILE="$work/$name.json" > /dev/null 2> "$work/$name.log"
}

# pages_per_second NAME: crawled pages over the time from the first response to the close, less
# the idle wait a fleet worker makes before it closes.
pages_per_second() {
  python3 - "$work/$1.json" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
idle = 1.0 if stats.get("scheduler/dequeued/redis") else 0.0
print(f'{stats["response_received_count"] / (stats["elapsed_time_seconds"] - idle):.0f}')
PY
}

median() { tr ' ' '\n' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "## One host, $pages pages, no delay: pages/s (median of $runs)"
for scheduler in memory redis; do
  declare -A results=() rate=()
  # Interleaved, so that a machine that slows down midway slows both alike.
  for run in $(seq "$runs"); do
    for queue_class in priority host; do
      crawl "$scheduler-$queue_class-$run" "$scheduler" "$queue_class"
      results[$queue_class]+=" $(pages_per_second "$scheduler-$queue_class-$run")"
    done
  done
  for queue_class in priority host; do
    rate[$queue_class]=$(echo ${results[$queue_class]} | median)
  done
  python3 -c "print(f'- SCHEDULER=$scheduler: priority ${rate[priority]}, host ${rate[host]} pages/s: {${rate[host]} / ${rate[priority]}:.2f}x')"
done

echo "## Round trips per page, SCHEDULER=redis, one worker"
for queue_class in priority host; do
  redis-cli -p "$redis_port" flushall > /dev/null
  redis-cli -p "$redis_port" monitor > "$work/monitor-$queue_class.txt" &
  monitor_pid=$!
  sleep 0.5
  crawl "monitor-$queue_class" redis "$queue_class"
  sleep 0.5
  kill "$monitor_pid"; wait "$monitor_pid" 2>/dev/null || true
  monitor_pid=
  python3 - "$work/monitor-$queue_class.txt" "$work/monitor-$queue_class.json" "$queue_class" <<'PY'
import collections, json, re, sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
# "1700000000.123456 [0 127.0.0.1:5555] "EVALSHA" ...": a client's command; "[0 lua]": a script's.
sent = [l for l in lines if re.match(r'^\d+\.\d+ \[\d+ [^l]', l)]
pages = json.load(open(sys.argv[2]))["response_received_count"]
kinds = collections.Counter(re.search(r'\] "(\w+)"', l).group(1).upper() for l in sent)
print(f"- {sys.argv[3]}: {len(sent) / pages:.2f} commands sent per page "
      f"({', '.join(f'{k} {v / pages:.2f}' for k, v in kinds.most_common(4))}), {pages} pages")
PY
done
