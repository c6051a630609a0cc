#!/usr/bin/env bash
# One page of LINKS unique links (bench/fanout_server.py's /p/0 with "root": about 30 bytes a
# link, 29.8 MB for 1,000,000, under HTML_MAX_SIZE) crawled by `crawler crawl site`, which queues
# every link, at default settings but CLOSESPIDER_PAGECOUNT=1 (the crawl ends with the page, its
# links queued). Prints the peak RSS, wall time and queued requests of that crawl and, in the
# same run, of the same crawl over a page of 1,000 links (the process's own cost), then the bytes
# of peak RSS each queued link added.
#
#   bash bench/links_page_bench.sh [BUILD_DIR] [LINKS]      # defaults: build 1000000
set -euo pipefail
build=${1:-build}
links=${2:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
servers=()
trap 'kill "${servers[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
source "$here/site_server.sh"  # free_port, wait_for_port
# serve N: fanout_server.py with a page of N links on a port of its own, saved as port_N.
serve() {
  local n=$1 port
  port=$(free_port)
  python3 "$here/fanout_server.py" "$port" "$n" root > /dev/null 2>&1 &
  servers+=($!)
  wait_for_port "$port" "fanout_server.py"
  printf -v "port_$n" '%s' "$port"
}
# crawl N: `crawler crawl site` over the page of N links; prints "peak_kib wall_s queued".
crawl() {
  local n=$1 port_name="port_$1"
  /usr/bin/time -f "%M %e" -o "$work/$n.time" "$crawler" crawl site \
    -a "start=http://127.0.0.1:${!port_name}/p/0" -s CLOSESPIDER_PAGECOUNT=1 -s LOG_LEVEL=WARNING \
    -s LOGSTATS_INTERVAL=0 -s STATS_FILE="$work/$n.json" > /dev/null 2> "$work/$n.log" ||
    { tail -5 "$work/$n.log" >&2; exit 1; }
  echo "$(cat "$work/$n.time") $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["scheduler/enqueued"])' "$work/$n.json")"
}
serve 1000
serve "$links"
read -r base_kib base_wall base_queued <<< "$(crawl 1000)"
read -r peak_kib wall queued <<< "$(crawl "$links")"
echo "| page | queued | peak RSS MB | wall s |"
echo "|---|---:|---:|---:|"
echo "| 1,000 links (the process's own cost) | $base_queued | $((base_kib / 1024)) | $base_wall |"
echo "| $links links | $queued | $((peak_kib / 1024)) | $wall |"
echo "peak RSS per queued link beyond the small page's: $(( (peak_kib - base_kib) * 1024 / (queued - base_queued) )) bytes"
