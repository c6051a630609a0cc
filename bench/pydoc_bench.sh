#!/usr/bin/env bash
# Pages nobody here wrote: Debian's python3-doc HTML (530 Sphinx pages, 2.5 MB for the largest),
# served by nginx on loopback and crawled in one run by `crawler run` (each HTML_PARSER, a
# 6-field item selected with CSS, bench/peers/pydoc_fields_css.json, and with XPath,
# pydoc_fields_xpath.json) and by Scrapy 2.8 running the same crawl files
# (tests/fixtures/scrapy_crawl_file.py, the differential suite's oracle). Then the same crawls
# of one page alone, the largest (contents.html, reached from index.html), for its peak RSS.
# Prints pages/s and peak RSS of each (medians of REPEAT runs; Scrapy runs once) and the ratios
# against Scrapy in the same run. Installs python3-doc with apt-get when it is missing.
#
#   bash bench/pydoc_bench.sh [BUILD_DIR] [REPEAT]      # defaults: build 3
set -euo pipefail
build=${1:-build}
repeat=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
crawler=$(cd "$build" && pwd)/crawler/crawler
docs=/usr/share/doc/python3.11/html
if [ ! -f "$docs/contents.html" ]; then
  echo "== installing python3-doc" >&2
  apt-get install -y python3-doc > /dev/null
fi
work=$(mktemp -d)
trap 'stop_site "$work"; rm -rf "$work"' EXIT
source "$here/site_server.sh"
serve_dir "$work" "$docs"
for fields in css xpath; do
  sed "s#http://127.0.0.1:8000/#$start#" "$here/peers/pydoc_fields_$fields.json" \
    > "$work/site-$fields.json"
  # One page: only contents.html is followed from index.html.
  sed 's#"\\\\.html\$"#"contents\\\\.html$"#' "$work/site-$fields.json" > "$work/page-$fields.json"
  grep -q 'contents' "$work/page-$fields.json" || { echo "no one-page crawl file" >&2; exit 1; }
done

# measure NAME COMMAND...: wall seconds and peak RSS (KB) of COMMAND in NAME.time; COMMAND writes
# its items to NAME.jsonl.
measure() {
  local name=$1; shift
  echo "== $name" >&2
  /usr/bin/time -f "%e %M" -o "$work/$name.time" "$@" > /dev/null 2> "$work/$name.err" ||
    { tail -5 "$work/$name.err" >&2; exit 1; }
}
for crawl in site page; do
  for run in $(seq "$repeat"); do
    for parser in gumbo libxml2; do
      for fields in css xpath; do
        measure "$crawl-$parser-$fields-$run" "$crawler" run "$work/$crawl-$fields.json" \
          -s HTML_PARSER=$parser -O "$work/$crawl-$parser-$fields-$run.jsonl"
      done
    done
  done
  for fields in css xpath; do
    measure "$crawl-scrapy-$fields-1" /usr/bin/python3 "$root/tests/fixtures/scrapy_crawl_file.py" \
      "$work/$crawl-$fields.json" "$work/$crawl-scrapy-$fields-1.jsonl"
  done
done

python3 - "$work" <<'PY'
import glob, json, statistics, sys
work = sys.argv[1]

def items(name):
    with open(f"{work}/{name}.jsonl") as f:
        return [json.loads(line) for line in f]

def figures(label):
    """(pages/s, peak RSS in MB, items) of a contender: medians over its runs."""
    runs = []
    for path in sorted(glob.glob(f"{work}/{label}-*.time")):
        wall, peak_kb = map(float, open(path).read().split()[-2:])
        count = len(items(path[len(work) + 1:-5]))
        runs.append((count / wall, peak_kb / 1024, count))
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            runs[0][2])

for crawl, title in (("site", "every page"), ("page", "contents.html alone (and index.html)")):
    print(f"\n### python3-doc, {title}\n")
    print("| crawl | items | pages/s | peak RSS MB | pages/s vs Scrapy | Scrapy's RSS / ours |")
    print("|---|---:|---:|---:|---:|---:|")
    for fields in ("css", "xpath"):
        scrapy = figures(f"{crawl}-scrapy-{fields}")
        for parser in ("gumbo", "libxml2", "scrapy"):
            rate, rss, count = figures(f"{crawl}-{parser}-{fields}")
            print(f"| {parser}, {fields.upper()} fields | {count} | {rate:,.1f} | {rss:.0f} | "
                  f"{rate / scrapy[0]:.1f}x | {scrapy[1] / rss:.2f}x |")
    same = lambda name: sorted(json.dumps(i, sort_keys=True) for i in items(name))
    for fields in ("css", "xpath"):
        theirs = same(f"{crawl}-scrapy-{fields}-1")
        equal = [parser for parser in ("gumbo", "libxml2")
                 if same(f"{crawl}-{parser}-{fields}-1") == theirs]
        print(f"\n{fields.upper()} fields: items equal to Scrapy's with "
              f"{', '.join(equal) or 'neither parser'}")
PY
