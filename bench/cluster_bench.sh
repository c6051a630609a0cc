#!/usr/bin/env bash
# A fleet on a Redis Cluster against the same fleet on one Redis: WORKERS `crawler crawl site`
# workers (SCHEDULER=redis, redis_set) crawl the generated site (nginx on loopback, served as
# HOSTS hosts, 127.0.0.1 ... 127.0.0.HOSTS, each crawled whole), ROUNDS times interleaved:
#   single   REDIS_URL on one redis-server, one set of keys (SCHEDULER_SHARDS=1), the baseline;
#   cluster  REDIS_CLUSTER_NODES on a 3-master cluster made by `redis-cli --cluster create`, one
#            set of keys: one master holds the crawl, so this is what routing costs;
#   sharded  the same cluster with SCHEDULER_SHARDS=SHARDS: hosts spread over the shards, and the
#            shards' slots over the masters.
# Prints each run's pages/s, the medians and their ratios to the baseline. Then, on one Redis,
# the commands the workers sent per crawled page (redis-cli MONITOR, leaving out what scripts ran
# inside Redis) with one set of keys and with SHARDS shards.
#
#   bash bench/cluster_bench.sh [BUILD_DIR] [PAGES] [WORKERS] [ROUNDS] [HOSTS] [SHARDS]
#                                                                  # build 5000 4 3 1 1
set -euo pipefail
build=${1:-build}
pages=${2:-5000}
workers=${3:-4}
rounds=${4:-3}
hosts=${5:-1}
shards=${6:-1}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
cleanup() {
  stop_site "$work"
  stop_redis "$work"
  rm -rf "$work"
}
trap cleanup EXIT
source "$here/site_server.sh"
SITE_HOSTS=$hosts serve_site "$work" "$pages"

single=$(serve_redis "$work" single)
nodes=()
for i in 1 2 3; do
  # A cluster node also listens on its port + 10000 (the cluster bus): pick one with both free.
  while :; do
    port=$(free_port)
    [ "$port" -le 55535 ] && ! (echo > "/dev/tcp/127.0.0.1/$((port + 10000))") 2>/dev/null && break
  done
  mkdir -p "$work/node$i"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/node$i" \
    --cluster-enabled yes --cluster-config-file nodes.conf > "$work/node$i/redis.log" 2>&1 &
  echo $! >> "$work/redis.pids"
  for _ in $(seq 50); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.1; done
  nodes+=("127.0.0.1:$port")
done
redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes > "$work/create.log"
until redis-cli -p "${nodes[0]##*:}" cluster info | grep -q 'cluster_state:ok'; do sleep 0.1; done
seeds=$(IFS=,; echo "${nodes[*]}")

# crawl LABEL ROUND SETTINGS...: the fleet to the end; appends its pages/s to WORK/LABEL.rates.
crawl() {
  local label=$1 round=$2; shift 2
  local begin end pids=()
  begin=$(date +%s.%N)
  for i in $(seq "$workers"); do
    "$crawler" crawl site -a "start=$starts" -s LOG_LEVEL=WARNING -s LOGSTATS_INTERVAL=0 \
      -s SCHEDULER=redis -s DUPEFILTER_CLASS=redis_set -s MAX_IDLE_TIME_BEFORE_CLOSE=1 \
      -s CONCURRENT_REQUESTS=32 -s CONCURRENT_REQUESTS_PER_DOMAIN=32 \
      -s STATS_FILE="$work/$label-$round-$i.json" "$@" > /dev/null 2> "$work/$label-$i.log" &
    pids+=($!)
  done
  wait "${pids[@]}"
  end=$(date +%s.%N)
  python3 - "$work" "$label" "$round" "$begin" "$end" <<'PY'
import glob, json, sys
work, label, round_, begin, end = sys.argv[1], sys.argv[2], sys.argv[3], *map(float, sys.argv[4:6])
pages = sum(json.load(open(f)).get("response_received_count", 0)
            for f in glob.glob(f"{work}/{label}-{round_}-*.json"))
rate = pages / (end - begin - 1.0)  # the 1 s MAX_IDLE_TIME_BEFORE_CLOSE wait left out
open(f"{work}/{label}.rates", "a").write(f"{rate}\n")
print(f"{label:8s} round {round_}: {pages} pages, {rate:7.0f} pages/s")
PY
}

for round in $(seq "$rounds"); do
  redis-cli -p "$single" flushall > /dev/null
  crawl single "$round" -s REDIS_URL="redis://127.0.0.1:$single/0"
  for node in "${nodes[@]}"; do redis-cli -p "${node##*:}" flushall > /dev/null; done
  crawl cluster "$round" -s REDIS_CLUSTER_NODES="$seeds"
  if [ "$shards" -gt 1 ]; then
    for node in "${nodes[@]}"; do redis-cli -p "${node##*:}" flushall > /dev/null; done
    crawl sharded "$round" -s REDIS_CLUSTER_NODES="$seeds" -s SCHEDULER_SHARDS="$shards"
  fi
done
python3 - "$work" "$shards" <<'PY'
import os, statistics, sys
work, shards = sys.argv[1], sys.argv[2]
median = lambda name: statistics.median(float(l) for l in open(f"{work}/{name}.rates"))
single = median("single")
print(f"medians: one Redis {single:.0f} pages/s")
print(f"  3-master cluster, one set of keys: {median('cluster'):.0f} pages/s, "
      f"{median('cluster') / single:.2f}x")
if os.path.exists(f"{work}/sharded.rates"):
    print(f"  3-master cluster, SCHEDULER_SHARDS={shards}: {median('sharded'):.0f} pages/s, "
          f"{median('sharded') / single:.2f}x")
PY

# MONITOR on one Redis: commands sent per page (a sharded take is one pipeline to the shards with
# work, a settle one script, or two steps when a page's links cross shards).
for count in 1 "$shards"; do
  [ "$count" = 1 ] || [ "$shards" -gt 1 ] || continue
  redis-cli -p "$single" flushall > /dev/null
  redis-cli -p "$single" monitor > "$work/monitor-$count.txt" &
  monitor=$!
  sleep 0.5
  crawl "monitor$count" 1 -s REDIS_URL="redis://127.0.0.1:$single/0" -s SCHEDULER_SHARDS="$count" \
    > /dev/null
  sleep 0.5
  kill "$monitor"; wait "$monitor" 2>/dev/null || true
  python3 - "$work" "$count" <<'PY'
import collections, glob, json, re, sys
work, count = sys.argv[1], sys.argv[2]
lines = open(f"{work}/monitor-{count}.txt", errors="replace").read().splitlines()
# "1700000000.123456 [0 127.0.0.1:5555] "EVALSHA" ...": a client's command; "[0 lua]": a script's.
sent = [l for l in lines if re.match(r'^\d+\.\d+ \[\d+ [^l]', l)]
pages = sum(json.load(open(f)).get("response_received_count", 0)
            for f in glob.glob(f"{work}/monitor{count}-1-*.json"))
kinds = collections.Counter(re.search(r'\] "(\w+)"', l).group(1).upper() for l in sent)
print(f"SCHEDULER_SHARDS={count}: {len(sent) / pages:.2f} commands sent per page "
      f"({', '.join(f'{k} {v / pages:.2f}' for k, v in kinds.most_common(4))}), {pages} pages")
PY
done
