#!/usr/bin/env bash
# One page of LINKS unique links (`<a href="/p/K">K</a>`, about 30 bytes each: 1,000,000 make a
# 29.8 MB page, under HTML_MAX_SIZE) crawled by `crawler crawl site`, which queues every link,
# at default settings but CLOSESPIDER_PAGECOUNT=1 (the crawl ends with the page, its links
# queued). Prints the peak RSS, wall time and queued requests of that crawl and, in the same run,
# of the same crawl over a page of 1,000 links (the process's own cost), then the bytes of peak
# RSS each queued link added.
#
#   bash bench/links_page_bench.sh [BUILD_DIR] [LINKS]      # defaults: build 1000000
set -euo pipefail
build=${1:-build}
links=${2:-1000000}
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# /N/0: a page of N links to /p/1 ... /p/N; anything else: a page with none.
python3 - "$port" <<'EOF' &
import http.server, sys
pages = {}
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        parts = self.path.strip("/").split("/")
        links = int(parts[0]) if len(parts) == 2 and parts[1] == "0" and parts[0].isdigit() else 0
        if links not in pages:
            pages[links] = ("<html><head><title>Links</title></head><body>" +
                            "".join(f'<a href="/p/{k}">{k}</a>' for k in range(1, links + 1)) +
                            "</body></html>").encode()
        body = pages[links]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
EOF
server=$!
for try in $(seq 300); do
  (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break
  [ "$try" -lt 300 ] || { echo "the page server did not listen on port $port in 30 s"; exit 1; }
  sleep 0.1
done
# crawl N: `crawler crawl site` from the page of N links; "peak_kib wall_s queued".
crawl() {
  local n=$1
  /usr/bin/time -f "%M %e" -o "$work/$n.time" "$crawler" crawl site \
    -a "start=http://127.0.0.1:$port/$n/0" -s CLOSESPIDER_PAGECOUNT=1 -s LOG_LEVEL=WARNING \
    -s LOGSTATS_INTERVAL=0 -s STATS_FILE="$work/$n.json" > /dev/null 2> "$work/$n.log" ||
    { tail -5 "$work/$n.log" >&2; exit 1; }
  echo "$(cat "$work/$n.time") $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["scheduler/enqueued"])' "$work/$n.json")"
}
read -r base_kib base_wall base_queued <<< "$(crawl 1000)"
read -r peak_kib wall queued <<< "$(crawl "$links")"
echo "| page | queued | peak RSS MB | wall s |"
echo "|---|---:|---:|---:|"
echo "| 1,000 links (the process's own cost) | $base_queued | $((base_kib / 1024)) | $base_wall |"
echo "| $links links | $queued | $((peak_kib / 1024)) | $wall |"
echo "peak RSS per queued link beyond the small page's: $(( (peak_kib - base_kib) * 1024 / (queued - base_queued) )) bytes"
