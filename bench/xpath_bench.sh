#!/usr/bin/env bash
# XPath fields against CSS fields, in a whole crawl: the same follow-all crawl of a generated site
# (served by nginx on loopback), its 4-field item on every page selected once with CSS
# (bench/peers/crawl_fields_css.json) and once with XPath (crawl_fields_xpath.json), with each
# HTML_PARSER; then Scrapy 2.8 with the same XPath expressions (scrapy_crawlspider.py -a fields=xpath). Prints
# pages/s and CPU per page (medians of REPEAT runs; Scrapy runs once), the ratios, and whether the
# CSS, XPath and Scrapy crawls wrote the same items.
#
#   bash bench/xpath_bench.sh [BUILD_DIR] [PAGES] [REPEAT]      # defaults: build 5000 3
set -euo pipefail
build=${1:-build}
pages=${2:-5000}
repeat=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
trap 'stop_site "$work"; rm -rf "$work"' EXIT
source "$here/site_server.sh"
serve_site "$work" "$pages"
for fields in css xpath; do
  sed "s#http://127.0.0.1:8000/#$start#" "$here/peers/crawl_fields_$fields.json" > "$work/$fields.json"
done

# measure NAME COMMAND...: wall and CPU seconds of COMMAND in NAME.time, its items in NAME.jsonl.
measure() {
  local name=$1; shift
  echo "== $name" >&2
  /usr/bin/time -f "%e %U %S" -o "$work/$name.time" "$@" -O "$work/$name.jsonl" \
    > /dev/null 2> "$work/$name.err" || { tail -5 "$work/$name.err" >&2; exit 1; }
}
for run in $(seq "$repeat"); do
  for parser in gumbo libxml2; do
    for fields in css xpath; do
      measure "$parser-$fields-$run" "$crawler" run "$work/$fields.json" -s HTML_PARSER=$parser
    done
  done
done
measure scrapy-xpath-1 /usr/bin/python3 -m scrapy runspider "$here/peers/scrapy_crawlspider.py" \
  -a "start=$start" -a fields=xpath -s ROBOTSTXT_OBEY=True -s CONCURRENT_REQUESTS=64 \
  -s CONCURRENT_REQUESTS_PER_DOMAIN=64 -s LOG_LEVEL=INFO -s TELNETCONSOLE_ENABLED=False \
  -s REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7

python3 - "$work" "$repeat" <<'PY'
import glob, json, statistics, sys
work, repeat = sys.argv[1], int(sys.argv[2])

def items(name):
    with open(f"{work}/{name}.jsonl") as f:
        return sorted(json.dumps(json.loads(line), sort_keys=True) for line in f)

def figures(label):
    runs = []
    for path in sorted(glob.glob(f"{work}/{label}-*.time")):
        wall, user, system = map(float, open(path).read().split()[-3:])
        pages = len(items(path[len(work) + 1:-5]))
        runs.append((pages / wall, (user + system) * 1000 / pages, pages))
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            runs[0][2])

rows = {label: figures(label) for label in
        ["gumbo-css", "gumbo-xpath", "libxml2-css", "libxml2-xpath", "scrapy-xpath"]}
scrapy = rows["scrapy-xpath"][0]
print("| crawl | items | pages/s | CPU ms/page | pages/s vs CSS, same parser | vs Scrapy (XPath) |")
print("|---|---:|---:|---:|---:|---:|")
for label, (rate, cpu, count) in rows.items():
    parser = label.split("-")[0]
    versus_css = f"{rate / rows[parser + '-css'][0]:.2f}x" if parser != "scrapy" else ""
    print(f"| {label} | {count} | {rate:,.0f} | {cpu:.3f} | {versus_css} | {rate / scrapy:.1f}x |")
same = items("gumbo-css-1") == items("gumbo-xpath-1") == items("libxml2-xpath-1")
print(f"\nCSS and XPath crawls wrote the same items: {same}")
print(f"our XPath items equal Scrapy's: {items('gumbo-xpath-1') == items('scrapy-xpath-1')}")
PY
