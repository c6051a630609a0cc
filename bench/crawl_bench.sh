#!/usr/bin/env bash
# Crawl benchmark: `crawler crawl site` against a static site served by nginx on loopback.
# Prints pages/s, CPU seconds per 1000 pages and peak RSS for `crawler crawl site` (links only)
# and `crawler run` (rules plus a parsed item per page); with Scrapy installed (python3-scrapy)
# and SKIP_SCRAPY unset, runs the same crawl in Scrapy as the baseline and prints the ratios.
#
#   bash bench/crawl_bench.sh [BUILD_DIR] [PAGES]        # defaults: build 20000
set -euo pipefail
build=${1:-build}
pages=${2:-20000}
baseline_pages=${BASELINE_PAGES:-5000}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
trap 'stop_site "$work"; rm -rf "$work"' EXIT

source "$here/site_server.sh"
serve_site "$work" "$pages"

# run NAME COMMAND...: runs it under /usr/bin/time and reads pages from its stats.
run() {
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" > /dev/null 2> "$work/$name.log"
  read -r wall user sys rss_kb < "$work/$name.time"
  grep -E "ERROR|Spider closed" "$work/$name.log" | tail -3 >&2 || true
  local count
  count=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['response_received_count'])" "$work/$name.stats.json")
  python3 - "$name" "$count" "$wall" "$user" "$sys" "$rss_kb" <<'PY'
import sys
name, pages, wall, user, sys_, rss = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:])
print(f"{name:8s} {pages:7d} pages in {wall:6.2f} s: {pages / wall:8.0f} pages/s, "
      f"{(user + sys_) / pages * 1000:6.3f} CPU s per 1000 pages, peak RSS {rss / 1024:6.1f} MiB")
PY
  echo "$count $wall $user $sys $rss_kb" > "$work/$name.result"
}

run crawler "$crawler" crawl site -a "start=$start" -s LOG_LEVEL=INFO -s LOGSTATS_INTERVAL=0 \
  -s CONCURRENT_REQUESTS=32 -s CONCURRENT_REQUESTS_PER_DOMAIN=32 -s DUPEFILTER_CLASS=bloom \
  -s STATS_FILE="$work/crawler.stats.json" -O "$work/items.jsonl"

# The same crawl through a crawl file: rules and an item with selected fields on every page, so
# every page is parsed by Gumbo.
cat > "$work/crawl.json" <<JSON
{
  "settings": {"LOG_LEVEL": "INFO", "LOGSTATS_INTERVAL": 0, "CONCURRENT_REQUESTS": 32,
               "CONCURRENT_REQUESTS_PER_DOMAIN": 32, "DUPEFILTER_CLASS": "bloom",
               "STATS_FILE": "$work/run.stats.json"},
  "spider": {
    "name": "site", "start_urls": ["$start"], "allowed_domains": ["127.0.0.1"],
    "rules": [{"allow": ["/[0-9]+[.]html\$"], "callback": "page", "follow": true}],
    "callbacks": {"page": {"fields": {"url": "\$url", "title": "title::text",
                                      "heading": "h1::text", "links": {"css": "li a::attr(href)", "all": true}}}}
  }
}
JSON
run run "$crawler" run "$work/crawl.json" -O "$work/run-items.jsonl"

if [ -z "${SKIP_SCRAPY:-}" ] && /usr/bin/python3 -c 'import scrapy' 2>/dev/null; then
  cat > "$work/stats_file.py" <<'PY'
import json
class StatsFile:
    def __init__(self, stats, path): self.stats, self.path = stats, path
    @classmethod
    def from_crawler(cls, crawler):
        ext = cls(crawler.stats, crawler.settings.get("STATS_JSON"))
        from scrapy import signals
        crawler.signals.connect(ext.closed, signal=signals.spider_closed)
        return ext
    def closed(self, spider):
        json.dump({k: v for k, v in self.stats.get_stats().items() if isinstance(v, (int, float, str))}, open(self.path, "w"))
PY
  PYTHONPATH="$work" run scrapy /usr/bin/python3 -m scrapy runspider "$here/scrapy_site_spider.py" \
    -a "start=$start" -s LOG_LEVEL=INFO -s LOGSTATS_INTERVAL=600 -s CONCURRENT_REQUESTS=32 \
    -s CONCURRENT_REQUESTS_PER_DOMAIN=32 -s CLOSESPIDER_PAGECOUNT="$baseline_pages" \
    -s REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7 -s TELNETCONSOLE_ENABLED=false \
    -s EXTENSIONS='{"stats_file.StatsFile": 0}' -s STATS_JSON="$work/scrapy.stats.json" \
    -O "$work/scrapy-items.jsonl"
  python3 - "$work/crawler.result" "$work/scrapy.result" <<'PY'
import sys
c = list(map(float, open(sys.argv[1]).read().split()))
s = list(map(float, open(sys.argv[2]).read().split()))
rate = lambda r: r[0] / r[1]
cpu = lambda r: (r[2] + r[3]) / r[0]
print(f"ratios vs Scrapy: {rate(c) / rate(s):.1f}x pages/s, "
      f"{cpu(s) / cpu(c):.1f}x less CPU per page, {s[4] / c[4]:.1f}x less peak RSS")
PY
elif [ -n "${SKIP_SCRAPY:-}" ]; then
  echo "(SKIP_SCRAPY set: no Scrapy baseline run)"
else
  echo "(python3-scrapy not installed: no Scrapy baseline run)"
fi
