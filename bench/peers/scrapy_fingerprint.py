"""Scrapy's side of bench/run.sh's fingerprint comparison: what `crawler fingerprint -` prints,
"<fingerprint>\t<canonical URL>" per URL read from stdin, computed by Scrapy 2.8 and w3lib."""
import sys

from scrapy import Request
from scrapy.utils.request import fingerprint
from w3lib.url import canonicalize_url

out = sys.stdout
for line in sys.stdin:
    url = line.rstrip("\n")
    out.write(f"{fingerprint(Request(url)).hex()}\t{canonicalize_url(url)}\n")
