#!/usr/bin/env bash
# The crawl benchmark suite: our crawler against its peers on one generated site, in one run.
#
#   bash bench/run.sh [--pages 20000] [--build build] [--out bench/results/<date>-<host>]
#                     [--long-crawl 200000] [--repeat 3] [--skip "crawlee wget"]
#                     [--shapes "light heavy"]
#
# For each page shape (site_generator.py --shape: light, 8-16 KB and 20-40 links a page, mostly
# text; heavy, about 12 KB and 43 links in dense markup), generates a deterministic site, serves it
# with nginx on a free loopback port, and crawls it with each contender in turn:
#   crawler-gumbo, crawler-libxml2  `crawler run bench/peers/crawl.json`: a follow-all rule and a
#                                   2-field item on every page, with each HTML_PARSER
#   crawler-links                   `crawler crawl site`: links only, no DOM
#   scrapy                          Scrapy 2.8's CrawlSpider doing what crawl.json does (the baseline)
#   crawlee                         Crawlee's CheerioCrawler (npm, pinned), the same crawl
#   spider-rs                       spider-rs (npm, pinned), links only
#   wget                            wget --recursive, links only
#   wrk                             wrk over the site's pages: what nginx serves on this machine
# Each crawler-* contender runs --repeat times (3 by default) and is reported by its median run, as
# this machine's wall times vary by 10-15% from run to run; the peers, minutes long, run once.
# Then the crawler-* contenders run again pinned to one core, and parse_bench parses the shape's
# pages. Once, after the shapes: the other micro-benchmarks and the fingerprint comparison with
# Scrapy on 100,000 URLs. Every contender's pages are read off nginx's
# access log, so all are counted alike; a contender that misses a page of the site is void.
# --long-crawl N adds a links-only crawl of an N-page site with the bloom dupefilter, to show that
# throughput stays flat as the seen set grows.
#
# Writes OUT/<shape>/report.md, results.json, pages.png (pages/s and CPU per page) and
# timeline.png (pages/s over each crawl) for each shape, and OUT/report.md: the shapes side by
# side against the speed goals, with links to theirs. Missing Debian packages (bench/packages.txt) are
# installed with apt-get; npm's packages go into a temporary folder that is removed afterwards.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
pages=20000 build=build out="" long_crawl=0 repeat=3 skip="" shapes="light heavy"
while [ $# -gt 0 ]; do
  case $1 in
    --pages) pages=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --long-crawl) long_crawl=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
out=${out:-$root/bench/results/$(date +%Y-%m-%d)-$(hostname -s)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log() { echo "== $*" >&2; }
skipped() { [[ " $skip " == *" $1 "* ]]; }

# --- what the suite needs -----------------------------------------------------------------------
missing=0
for cmd in nginx wrk wget /usr/bin/time taskset; do command -v "$cmd" > /dev/null || missing=1; done
/usr/bin/python3 -c 'import scrapy, matplotlib' 2> /dev/null || missing=1
if [ $missing = 1 ]; then
  log "installing bench/packages.txt"
  bash "$root/.ci/install-deps" "$here/packages.txt"
fi
if ! command -v npm > /dev/null; then
  log "no npm: installing Debian's nodejs and npm for Crawlee and spider-rs"
  bash "$root/.ci/install-deps" <(printf 'nodejs\nnpm\n') || true
fi
crawler_bin=$root/$build/crawler/crawler
[ -d "$root/$build" ] || cmake -S "$root" -B "$root/$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$root/$build" --target crawler_cli fingerprint_bench parse_bench dupefilter_bench > /dev/null

top=$(mktemp -d) && chmod 755 "$top"  # nginx's workers drop root and must reach the sites in it
trap 'for d in "$top"/*/; do stop_site "$d"; done; stop_site "$top/long"; rm -rf "$top"' EXIT
source "$here/site_server.sh"

npm_dir=$top/npm
if command -v npm > /dev/null && ! { skipped crawlee && skipped spider-rs; }; then
  log "npm install crawlee@3.18.1 @spider-rs/spider-rs@0.0.157 (into a temporary folder)"
  mkdir -p "$npm_dir" && echo '{"private": true, "type": "module"}' > "$npm_dir/package.json"
  (cd "$npm_dir" && npm install --no-audit --no-fund --loglevel=error crawlee@3.18.1 \
     @spider-rs/spider-rs@0.0.157 @spider-rs/spider-rs-linux-x64-gnu@0.0.157 > /dev/null) \
    || { echo "npm install failed: Crawlee and spider-rs are skipped" >&2; skip="$skip crawlee spider-rs"; }
  cp "$here/peers/crawlee_cheerio.mjs" "$here/peers/spider_rs.mjs" "$npm_dir/"
else
  echo "no npm: Crawlee and spider-rs are skipped" >&2
  skip="$skip crawlee spider-rs"
fi

# --- the crawls, for each shape --------------------------------------------------------------
# measure NAME COMMAND...: wall, CPU and peak RSS of COMMAND; nginx's log of it in logs/NAME.log
# (of the site in $site_dir). A contender that fails is reported as such; the suite goes on.
measure() {
  local name=$1; shift
  if skipped "${name%%[@~]*}"; then return; fi
  log "$name"
  if ! /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" > "$work/$name.out" 2> "$work/$name.err"; then
    echo "$name failed; the end of its output:" >&2
    tail -5 "$work/$name.err" >&2
    echo "failed" > "$work/$name.time"
  fi
  take_access_log "$site_dir" "$name"
  [ "$site_dir" = "$work" ] || cp "$site_dir/logs/$name.log" "$work/logs/"
}

crawl_settings=(-s ROBOTSTXT_OBEY=True -s CONCURRENT_REQUESTS=64 -s CONCURRENT_REQUESTS_PER_DOMAIN=64
                -s LOG_LEVEL=INFO -s LOGSTATS_INTERVAL=0)
run_ours() {
  local suffix=$1; shift  # "" or "@1core"; the rest is a command prefix (taskset)
  local run name
  for run in $(seq "$repeat"); do
    for parser in gumbo libxml2; do
      name=crawler-$parser$suffix && [ "$run" = 1 ] || name=$name~$run
      measure "$name" "$@" "$crawler_bin" run "$work/crawl.json" \
        -s HTML_PARSER=$parser -O "$work/items-$parser.jsonl"
    done
    name=crawler-links$suffix && [ "$run" = 1 ] || name=$name~$run
    measure "$name" "$@" "$crawler_bin" crawl site -a "start=$start" "${crawl_settings[@]}" \
      -O "$work/items-links.jsonl"
  done
}
for shape in $shapes; do
  work=$top/$shape && mkdir -p "$work" && site_dir=$work
  log "$shape pages: generating and serving a $pages-page site"
  serve_site "$work" "$pages" --shape "$shape"
  sed "s#http://127.0.0.1:8000/#$start#" "$here/peers/crawl.json" > "$work/crawl.json"
  take_access_log "$work" setup
  run_ours ""
  measure scrapy /usr/bin/python3 -m scrapy runspider "$here/peers/scrapy_crawlspider.py" -a "start=$start" \
    "${crawl_settings[@]}" -s TELNETCONSOLE_ENABLED=False -s REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7 \
    -O "$work/items-scrapy.jsonl"
  measure crawlee bash -c "cd '$npm_dir' && exec node crawlee_cheerio.mjs '$start'"
  measure spider-rs bash -c "cd '$npm_dir' && exec node spider_rs.mjs '$start'"
  # wget exits with 8 when the server answered an error, as it does for the site's 404 links.
  measure wget bash -c 'wget "$@"; rc=$?; [ $rc = 0 ] || [ $rc = 8 ]' wget --recursive --level=inf --no-verbose --delete-after -e robots=on \
    --directory-prefix="$work/wget" "$start"
  if ! skipped wrk; then
    log "wrk (10 s over the site's pages)"
    URLS_FILE=$work/expected.txt wrk -t1 -c64 -d10s -s "$here/peers/wrk_urls.lua" "$start" > "$work/wrk.out"
    take_access_log "$work" wrk
  fi
  log "the crawler again, pinned to one core (taskset -c 0)"
  run_ours "@1core" taskset -c 0

  # The shape's own pages (parse_site_pages), which report.py takes from the crawls' CPU per
  # page; medians of 3, for the same reason as --repeat.
  PARSE_BENCH_PAGES=$work/site "$root/$build/bench/parse_bench" --benchmark_min_time=0.3 \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_color=false \
    > "$work/micro-parse_bench.txt" 2> /dev/null
  stop_site "$work"
done
first=$top/${shapes%% *}
work=$first && site_dir=$work

# --- micro-benchmarks and the fingerprint comparison ---------------------------------------------
log "micro-benchmarks"
"$root/$build/bench/fingerprint_bench" --benchmark_min_time=0.3 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_color=false \
  > "$work/micro-fingerprint_bench.txt" 2> /dev/null
"$root/$build/bench/dupefilter_bench" 2000000 200000 > "$work/micro-dupefilter_bench.txt" 2> /dev/null
log "crawler fingerprint vs Scrapy on 100,000 URLs"
/usr/bin/python3 "$here/site_generator.py" --urls 100000 > "$work/fp-urls.txt"
/usr/bin/time -f "%e %U %S %M" -o "$work/fp-crawler.time" "$crawler_bin" fingerprint - \
  < "$work/fp-urls.txt" > "$work/fp-crawler.out"
/usr/bin/time -f "%e %U %S %M" -o "$work/fp-scrapy.time" /usr/bin/python3 "$here/peers/scrapy_fingerprint.py" \
  < "$work/fp-urls.txt" > "$work/fp-scrapy.out"
cmp -s "$work/fp-crawler.out" "$work/fp-scrapy.out" && echo same > "$work/fp.agree" || echo differ > "$work/fp.agree"

if [ "$long_crawl" -gt 0 ]; then
  log "a $long_crawl-page crawl with the bloom dupefilter"
  long=$top/long && mkdir -p "$long"
  serve_site "$long" "$long_crawl"
  take_access_log "$long" setup
  cp "$long/expected.txt" "$work/long-expected.txt"
  site_dir=$long
  # Every half second the queue (scheduler/enqueued - dequeued), the seen set and peak memory go
  # to the log (PERIODIC_LOG_STATS), and rss_sampler.py samples the resident memory, so report.py
  # can tell which of them the memory follows.
  measure long-bloom /usr/bin/python3 "$here/rss_sampler.py" "$work/long-bloom.rss.txt" -- \
    "$crawler_bin" crawl site -a "start=$start" "${crawl_settings[@]}" \
    -s DUPEFILTER_CLASS=bloom -s STATS_FILE="$work/long-bloom.stats.json" -O "$work/long-items.jsonl" \
    -s LOGSTATS_INTERVAL=0.5 -s MEMUSAGE_CHECK_INTERVAL_SECONDS=0.5 -s PERIODIC_LOG_TIMING_ENABLED=True \
    -s 'PERIODIC_LOG_STATS={"include": ["scheduler/", "memusage/", "response_received_count", "bloomfilter/"]}'
  cp "$work/long-bloom.err" "$work/long-bloom.log.txt"
  site_dir=$work
fi

log "report"
# What was measured is kept beside each shape's report (not committed: bench/results/.gitignore),
# so the reports can be written again: bench/report.py OUT/SHAPE/raw OUT/SHAPE --pages N, then
# bench/report.py --summary OUT SHAPE...
for shape in $shapes; do
  work=$top/$shape
  mkdir -p "$out/$shape/raw"
  cp -r "$work/logs" "$work"/*.time "$work"/*.txt "$out/$shape/raw/" 2>/dev/null || true
  cp "$work"/fp.agree "$work"/*.json "$work"/wrk.out "$out/$shape/raw/" 2>/dev/null || true
  /usr/bin/python3 "$here/report.py" "$out/$shape/raw" "$out/$shape" --pages "$pages"
done
/usr/bin/python3 "$here/report.py" --summary "$out" $shapes
log "written: $out/report.md"
