"""Scrapy's side of bench/run.sh: the crawl `crawler run` makes from bench/peers/crawl.json.

A CrawlSpider with one follow-all rule whose callback yields a 2-field item on every page, on the
site's host only, obeying robots.txt (settings on run.sh's command line).

    python3 -m scrapy runspider scrapy_crawlspider.py -a start=http://127.0.0.1:PORT/ -O items.jsonl
"""
from urllib.parse import urlparse

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class SiteSpider(CrawlSpider):
    name = "site"
    rules = [Rule(LinkExtractor(), callback="parse_item", follow=True)]

    def __init__(self, start=None, **kwargs):
        self.start_urls = [start]
        self.allowed_domains = [urlparse(start).hostname]
        super().__init__(**kwargs)

    def parse_item(self, response):
        yield {"title": response.css("title::text").get(), "heading": response.css("h1::text").get()}
