#!/usr/bin/env bash
# A fleet on a Redis Cluster against the same fleet on one Redis: WORKERS `crawler crawl site`
# workers (SCHEDULER=redis, redis_set) crawl the generated site (nginx on loopback), once with
# REDIS_URL on one redis-server and once with REDIS_CLUSTER_NODES on a 3-master cluster made by
# `redis-cli --cluster create`, ROUNDS times interleaved. Prints each run's pages/s, the medians
# and their ratio. Without SCHEDULER_SHARDS the crawl's keys share one slot, so one master holds
# the whole crawl: this measures what routing through the cluster client costs, not a cluster's
# added throughput.
#
#   bash bench/cluster_bench.sh [BUILD_DIR] [PAGES] [WORKERS] [ROUNDS]   # build 5000 4 3
set -euo pipefail
build=${1:-build}
pages=${2:-5000}
workers=${3:-4}
rounds=${4:-3}
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
serve_site "$work" "$pages"

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
    "$crawler" crawl site -a "start=$start" -s LOG_LEVEL=WARNING -s LOGSTATS_INTERVAL=0 \
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
done
python3 - "$work" <<'PY'
import statistics, sys
work = sys.argv[1]
median = lambda name: statistics.median(float(l) for l in open(f"{work}/{name}.rates"))
single, cluster = median("single"), median("cluster")
print(f"medians: one Redis {single:.0f} pages/s, 3-master cluster {cluster:.0f} pages/s: "
      f"{cluster / single:.2f}x")
PY
