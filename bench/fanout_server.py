#!/usr/bin/env python3
"""A site whose frontier only grows, for bench/frontier_bench.sh: /p/N links to the FANOUT pages
/p/N*FANOUT+1 .. /p/N*FANOUT+FANOUT, none seen before, so a breadth-first crawl of P pages leaves
about P * (FANOUT - 1) requests queued. With "root" (bench/links_page_bench.sh), only /p/0 has
links: one page of FANOUT links to pages with none.

usage: fanout_server.py PORT FANOUT [root]
"""
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fanout = 1000
    root_only = False

    def do_GET(self):
        try:
            n = int(self.path.rsplit("/", 1)[-1])
        except ValueError:
            n = 0
        first = n * self.fanout + 1
        count = 0 if self.root_only and n != 0 else self.fanout
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in range(first, first + count))
        body = f"<html><head><title>Page {n}</title></head><body>{links}</body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    Handler.fanout = int(sys.argv[2])
    Handler.root_only = sys.argv[3:] == ["root"]
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
