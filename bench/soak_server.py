#!/usr/bin/env python3
"""A site without end for the soak test: /p/N links to /p/N+1 .. /p/N+10, so every page brings one
new URL and nine the crawler has seen, and the frontier stays the same size however long the crawl
runs. One request in a hundred answers 500 and one in two hundred has its connection reset.

usage: soak_server.py PORT
"""
import http.server
import random
import socket
import struct
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        roll = random.random()
        if roll < 0.005:  # a reset: RST instead of an answer
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if roll < 0.015:
            self.send_error(500)
            return
        try:
            n = int(self.path.rsplit("/", 1)[-1])
        except ValueError:
            n = 0
        links = "".join(f'<a href="/p/{n + k}">{n + k}</a>' for k in range(1, 11))
        body = (f"<html><head><title>Page {n}</title></head><body><h1>{n}</h1>{links}"
                f"<p>{'soak ' * 200}</p></body></html>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
