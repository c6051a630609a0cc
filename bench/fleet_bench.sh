#!/usr/bin/env bash
# Fleet benchmark: the same site crawled by one `crawler crawl site` with the memory scheduler
# (the baseline) and by 1 (also with signed entries, and in scrapy-redis's pickled form), 2 and 4
# workers with SCHEDULER=redis, all
# against one redis-server and a static site served by nginx on loopback, ROUNDS rounds
# interleaved. Prints each run's pages/s, what Redis saw per crawled page (INFO commandstats:
# commands, script calls) and the CPU the workers and Redis used, then the medians and ratios.
#
#   bash bench/fleet_bench.sh [BUILD_DIR] [PAGES] [ROUNDS]   # defaults: build 5000 3
set -euo pipefail
build=${1:-build}
pages=${2:-5000}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
cleanup() {
  stop_site "$work"
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

# worker NAME EXTRA...: one crawl in the background, its stats in $work/NAME.stats.json and the
# CPU seconds it used in $work/NAME.cpu-seconds.
worker() {
  local name=$1; shift
  python3 -c 'import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
used = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(str(used.ru_utime + used.ru_stime))
sys.exit(code)' "$work/$name.cpu-seconds" \
  "$crawler" crawl site -a "start=$start" -s LOG_LEVEL=WARNING -s LOGSTATS_INTERVAL=0 \
    -s CONCURRENT_REQUESTS=32 -s CONCURRENT_REQUESTS_PER_DOMAIN=32 \
    -s DUPEFILTER_CLASS=redis_set -s REDIS_URL="$redis_url" \
    -s STATS_FILE="$work/$name.stats.json" "$@" > /dev/null 2> "$work/$name.log" &
  workers+=($!)
}

# run LABEL WORKERS EXTRA...: a fresh Redis, WORKERS workers, then the figures.
run() {
  local label=$1 count=$2; shift 2
  redis-cli -p "$redis_port" flushall > /dev/null
  redis-cli -p "$redis_port" config resetstat > /dev/null
  # Redis's CPU counters cover its whole life (RESETSTAT leaves them): read before and after.
  redis-cli -p "$redis_port" info cpu > "$work/$label.cpu-before"
  workers=()
  for i in $(seq "$count"); do worker "$label-$i" "$@"; done
  wait "${workers[@]}"
  take_access_log "$work" "$label"
  redis-cli -p "$redis_port" info commandstats > "$work/$label.commandstats"
  redis-cli -p "$redis_port" info cpu > "$work/$label.cpu"
  python3 - "$label" "$count" "$work" <<'PY'
import glob, json, re, sys
label, count, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pages = sum(json.load(open(f)).get("response_received_count", 0)
            for f in glob.glob(f"{work}/{label}-*.stats.json"))
stats = open(f"{work}/{label}.commandstats").read()
calls = {m[0]: int(m[1]) for m in re.findall(r"cmdstat_(\w+):calls=(\d+)", stats)}
commands = sum(calls.values()) - calls.get("config", 0) - calls.get("info", 0) - calls.get("flushall", 0)
scripts = calls.get("eval", 0) + calls.get("evalsha", 0)
def cpu_seconds(path):
    return sum(float(v) for v in re.findall(r"used_cpu_(?:sys|user):([\d.]+)", open(path).read()))
redis_cpu = cpu_seconds(f"{work}/{label}.cpu") - cpu_seconds(f"{work}/{label}.cpu-before")
# The crawl's time is the server's, from its first request to its last: a worker's start and
# its close (a redis worker waits MAX_IDLE_TIME_BEFORE_CLOSE for more work) are left out.
times = [float(line.split()[0]) for line in open(f"{work}/logs/{label}.log")]
active = max(times) - min(times)
rate = pages / active
workers_cpu = sum(float(open(f).read()) for f in glob.glob(f"{work}/{label}-*.cpu-seconds"))
open(f"{work}/{label}.rate", "w").write(str(rate))
# The CPU a page cost the workers and Redis together: on a machine whose cores the crawl keeps
# busy (nginx too), it is what pages/s follows, and it drifts less than pages/s do.
open(f"{work}/{label}.cpu-per-page", "w").write(str((workers_cpu + redis_cpu) / pages))
print(f"{label:18s} {count} worker(s): {pages:6d} pages in {active:6.2f} s = {rate:7.0f} pages/s; "
      f"Redis per page: {commands / pages:5.2f} commands, {scripts / pages:5.2f} scripts; "
      f"CPU per 1000 pages: Redis {redis_cpu / pages * 1000:6.3f} s, "
      f"workers {workers_cpu / pages * 1000:6.3f} s")
PY
}

# Each kind of run once a round, interleaved, and its median: the first crawl of a fresh site
# runs slower than the next ones (nginx and the page cache warming up), and this machine's speed
# drifts between runs, even within a round. So the two runs of the headline ratio
# go back to back, each first in every other round (a drift would otherwise favour the one always
# first), and the ratio is also given round by round.
# One crawl first that no figure counts: the first of a fresh site is the slow one.
run "warm-up~0" 1 > /dev/null
for round in $(seq "$rounds"); do
  if (( round % 2 )); then
    run "memory~$round" 1
    run "redis~$round" 1 -s SCHEDULER=redis -s MAX_IDLE_TIME_BEFORE_CLOSE=1
  else
    run "redis~$round" 1 -s SCHEDULER=redis -s MAX_IDLE_TIME_BEFORE_CLOSE=1
    run "memory~$round" 1
  fi
  # The same worker with signed entries (SCHEDULER_SIGNING_KEY): an HMAC per entry written and
  # read.
  SCHEDULER_SIGNING_KEY=fleet-bench-signing-key-0123456789 \
    run "redis-signed~$round" 1 -s SCHEDULER=redis -s MAX_IDLE_TIME_BEFORE_CLOSE=1
  # The same worker on scrapy-redis's queue form (a pickle per entry written and read), with its
  # dupefilter's fingerprint: what a worker on a scrapy-redis fleet's keys costs.
  run "redis-pickled~$round" 1 -s SCHEDULER=scrapy_redis.scheduler.Scheduler \
    -s DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter -s MAX_IDLE_TIME_BEFORE_CLOSE=1
  run "redis-2-workers~$round" 2 -s SCHEDULER=redis -s MAX_IDLE_TIME_BEFORE_CLOSE=1
  run "redis-4-workers~$round" 4 -s SCHEDULER=redis -s MAX_IDLE_TIME_BEFORE_CLOSE=1
done
python3 - "$work" "$rounds" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], range(1, int(sys.argv[2]) + 1)
def rates(name):
    return [float(open(f"{work}/{name}~{r}.rate").read()) for r in rounds]
def rate(name):
    return statistics.median(rates(name))
for name in ("memory", "redis", "redis-signed", "redis-pickled", "redis-2-workers",
             "redis-4-workers"):
    print(f"median of {len(rounds)}, {name:16s} {rate(name):7.0f} pages/s")
print(f"SCHEDULER=redis with one worker: {rate('redis') / rate('memory'):.2f}x the memory "
      f"scheduler's pages/s (each from the server's first request to its last)")
paired = [r / m for r, m in zip(rates("redis"), rates("memory"))]
print(f"  round by round: {', '.join(f'{x:.2f}' for x in paired)}x; "
      f"median {statistics.median(paired):.2f}x")
def cpu(name):
    return [float(open(f"{work}/{name}~{r}.cpu-per-page").read()) for r in rounds]
costs = [m / r for r, m in zip(cpu("redis"), cpu("memory"))]
print(f"  the memory scheduler's CPU per page (worker and Redis) over SCHEDULER=redis's, round "
      f"by round: {', '.join(f'{x:.2f}' for x in costs)}x; median {statistics.median(costs):.2f}x")
print(f"Signed entries (SCHEDULER_SIGNING_KEY): {rate('redis-signed') / rate('redis'):.2f}x the "
      f"unsigned worker's pages/s")
print(f"scrapy-redis's pickled form (SCHEDULER_SERIALIZER=scrapy_redis.picklecompat): "
      f"{rate('redis-pickled') / rate('redis'):.2f}x the JSON worker's pages/s")
PY
