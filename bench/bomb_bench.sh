#!/usr/bin/env bash
# Four gzip bombs at default settings: a crawl file (`crawler run`, which reads pages only
# through their documents) starts from four pages that each inflate to SIZE MiB of zeros
# (default 1024, about 1 MiB on the wire), served gzip-encoded as text/html. Prints the peak RSS
# of that crawl and, measured in the same run, of the same crawl file over four small pages (the
# process's own cost), and the crawl's stats on the bombs: each must be skipped as too large
# (html/skipped_reason_count/too_large 4) having been downloaded no further than HTML_MAX_SIZE.
#
#   bash bench/bomb_bench.sh [BUILD_DIR] [SIZE_MIB]      # defaults: build 1024
set -euo pipefail
build=${1:-build}
size_mib=${2:-1024}
crawler=$(cd "$build" && pwd)/crawler/crawler
work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
head -c "$((size_mib * 1048576))" /dev/zero | gzip -1 > "$work/bomb.gz"
source "$(dirname "$0")/site_server.sh"  # free_port, wait_for_port
port=$(free_port)
# /bomb/N: the bomb, gzip-encoded; /small/N: a page of a few hundred bytes.
python3 - "$port" "$work/bomb.gz" <<'EOF' &
import http.server, sys
port, bomb = int(sys.argv[1]), open(sys.argv[2], "rb").read()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        small = self.path.startswith("/small/")
        body = b"<html><title>small</title><body>" + b"x" * 200 if small else bomb
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        if not small:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the crawler stopped reading where its pages stop: expected
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
EOF
server=$!
wait_for_port "$port" "the bomb server"
# Peak RSS in MB of `crawler run` over /KIND/1 ... /KIND/4; its stats in $work/KIND.json.
peak_mb() {
  local kind=$1
  python3 - "$port" "$kind" > "$work/$kind-crawl.json" <<'EOF'
import json, sys
port, kind = sys.argv[1], sys.argv[2]
print(json.dumps({"spider": {
    "name": "bombs",
    "start_urls": [f"http://127.0.0.1:{port}/{kind}/{i}" for i in range(1, 5)],
    "callbacks": {"parse_start_url": {"fields": {"title": "title::text"}}}}}))
EOF
  /usr/bin/time -f "%M" -o "$work/$kind.rss" "$crawler" run "$work/$kind-crawl.json" \
    -s STATS_FILE="$work/$kind.json" -s LOG_LEVEL=WARNING > /dev/null
  echo $(( $(cat "$work/$kind.rss") / 1024 ))
}
bombs=$(peak_mb bomb)
small=$(peak_mb small)
python3 - "$work/bomb.json" "$bombs" "$small" "$size_mib" <<'EOF'
import json, sys
stats, bombs, small, size = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
print(f"four {size} MiB gzip bombs: peak RSS {bombs} MB; four small pages: {small} MB "
      f"({bombs / small:.2f}x)")
for key in ("html/skipped_reason_count/too_large", "downloader/response_bytes",
            "downloader/exception_count"):
    print(f"  {key}: {stats.get(key, 0)}")
EOF
