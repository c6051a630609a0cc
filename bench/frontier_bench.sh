#!/usr/bin/env bash
# A frontier larger than memory: `crawler crawl site` breadth-first over bench/fanout_server.py,
# where every page brings FANOUT new links, until PAGES pages are crawled and about
# PAGES * (FANOUT - 1) requests wait in the queue; once with the whole queue in memory (the
# baseline) and once with SCHEDULER_MEMORY_QUEUE_LIMIT=LIMIT. Prints the queue each reached, peak
# RSS, wall time, and RSS per queued request; then the limited crawl with JOBDIR, killed with
# kill -9 and resumed for one page: the resume's peak RSS.
#
#   bash bench/frontier_bench.sh [BUILD_DIR] [PAGES] [FANOUT] [LIMIT]   # build 2000 1000 100000
set -euo pipefail
build=${1:-build}
pages=${2:-2000}
fanout=${3:-1000}
limit=${4:-100000}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$here/fanout_server.py" "$port" "$fanout" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 1

echo "| queue | queued at the end | peak RSS MiB | wall s | RSS bytes per queued request |"
echo "|---|---:|---:|---:|---:|"
for run in unlimited limited; do
  extra=()
  [ $run = limited ] && extra=(-s SCHEDULER_MEMORY_QUEUE_LIMIT="$limit")
  /usr/bin/time -f "%e %M" -o "$work/$run.time" "$crawler" crawl site \
    -a "start=http://127.0.0.1:$port/p/0" -s LOG_LEVEL=WARNING -s LOGSTATS_INTERVAL=0 \
    -s SCHEDULER_MEMORY_QUEUE=fifo -s CLOSESPIDER_PAGECOUNT="$pages" -s CONCURRENT_REQUESTS=16 \
    -s DUPEFILTER_CLASS=bloom -s BLOOMFILTER_CAPACITY=5000000 -s STATS_FILE="$work/$run.json" \
    "${extra[@]}" > /dev/null 2> "$work/$run.log" || { tail -5 "$work/$run.log"; exit 1; }
  python3 - "$work/$run.json" "$work/$run.time" "$run" "$limit" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
wall, rss_kib = open(sys.argv[2]).read().split()[-2:]
queued = stats["scheduler/enqueued"] - stats["scheduler/dequeued"]
rss = int(rss_kib) * 1024
label = "all in memory" if sys.argv[3] == "unlimited" else f"SCHEDULER_MEMORY_QUEUE_LIMIT={sys.argv[4]}"
print(f"| {label} | {queued:,} | {rss / 2**20:,.0f} | {float(wall):.1f} | {rss / queued:,.0f} |")
PY
done

# The resume: the limited crawl again with JOBDIR, killed (kill -9) once it has crawled about as
# far (at 90% of the limited crawl's wall time), then resumed for one page: the journal is replayed
# a line at a time into the queue's segments, and closing writes the whole queue to the snapshot.
limited_wall=$(awk '{ print $(NF-1) }' "$work/limited.time")
common=(-a "start=http://127.0.0.1:$port/p/0" -s LOG_LEVEL=WARNING -s LOGSTATS_INTERVAL=0
  -s SCHEDULER_MEMORY_QUEUE=fifo -s CONCURRENT_REQUESTS=16 -s DUPEFILTER_CLASS=bloom
  -s BLOOMFILTER_CAPACITY=5000000 -s SCHEDULER_MEMORY_QUEUE_LIMIT="$limit" -s JOBDIR="$work/job")
timeout -s KILL "$(python3 -c "print($limited_wall * 0.9)")" "$crawler" crawl site "${common[@]}" \
  > /dev/null 2> "$work/killed.log" || true
/usr/bin/time -f "%e %M" -o "$work/resume.time" "$crawler" crawl site "${common[@]}" \
  -s CLOSESPIDER_PAGECOUNT=1 -s STATS_FILE="$work/resume.json" > /dev/null 2> "$work/resume.log" \
  || { tail -5 "$work/resume.log"; exit 1; }
python3 - "$work/resume.time" "$work/job/requests.queue.jsonl" "$limit" <<'PY'
import sys
wall, rss_kib = open(sys.argv[1]).read().split()[-2:]
queued = sum(1 for line in open(sys.argv[2]) if not line.startswith("#"))
print(f"| resumed after kill -9, SCHEDULER_MEMORY_QUEUE_LIMIT={sys.argv[3]} | {queued:,} | "
      f"{int(rss_kib) / 1024:,.0f} | {float(wall):.1f} | {int(rss_kib) * 1024 / queued:,.0f} |")
PY
