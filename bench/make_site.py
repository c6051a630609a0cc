#!/usr/bin/env python3
"""Writes a static site for the crawl benchmark: PAGES pages of about SIZE bytes each.

Page i links to ten others (some twice, as real pages do), so the crawler exercises the
dupefilter on every page: usage: make_site.py DIR PAGES [SIZE]
"""
import os
import sys

out, pages = sys.argv[1], int(sys.argv[2])
size = int(sys.argv[3]) if len(sys.argv) > 3 else 12 * 1024
os.makedirs(out, exist_ok=True)
words = ("crawler frontier request response scheduler slot fingerprint bloom filter "
         "redis queue spider item pipeline feed selector link extractor ").split()
for i in range(pages):
    links = [(i + 1) % pages, (i * 7 + 1) % pages, (i * 13 + 5) % pages, (i * 31 + 7) % pages,
             (i * 101 + 3) % pages, (i + 2) % pages, (i * 3) % pages, (i + 1) % pages,
             (i * 17 + 11) % pages, (i * 29 + 13) % pages]
    head = (f"<!DOCTYPE html><html><head><title>Page {i}</title>"
            f"<meta charset=\"utf-8\"></head><body><h1>Page {i}</h1><ul>\n")
    nav = "".join(f'<li><a href="/{n}.html">page {n}</a></li>\n' for n in links)
    text = []
    length = len(head) + len(nav)
    k = i
    while length < size - 40:
        sentence = " ".join(words[(k + j) % len(words)] for j in range(12)) + ". "
        text.append(sentence)
        length += len(sentence)
        k += 5
    body = head + nav + "</ul><p>" + "".join(text) + "</p></body></html>\n"
    with open(os.path.join(out, f"{i}.html"), "w") as f:
        f.write(body)
