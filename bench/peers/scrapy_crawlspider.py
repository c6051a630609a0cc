"""Scrapy's side of bench/run.sh: the crawl `crawler run` makes from bench/peers/crawl.json.

A CrawlSpider with one follow-all rule whose callback yields a 2-field item on every page, on the
site's host only, obeying robots.txt (settings on run.sh's command line). With -a fields=xpath,
bench/xpath_bench.sh's crawl instead: the 4-field item of bench/peers/crawl_fields_xpath.json,
selected with the same XPath expressions.

    python3 -m scrapy runspider scrapy_crawlspider.py -a start=http://127.0.0.1:PORT/ -O items.jsonl
"""
from urllib.parse import urlparse

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class SiteSpider(CrawlSpider):
    name = "site"
    rules = [Rule(LinkExtractor(), callback="parse_item", follow=True)]

    def __init__(self, start=None, fields="css", **kwargs):
        self.start_urls = [start]
        self.allowed_domains = [urlparse(start).hostname]
        self.fields = fields
        super().__init__(**kwargs)

    def parse_item(self, response):
        if self.fields != "xpath":
            yield {"title": response.css("title::text").get(),
                   "heading": response.css("h1::text").get()}
            return
        # A crawl file's fields come out trimmed, and null when nothing matches.
        yield {
            "title": (response.xpath("//title/text()").get() or "").strip() or None,
            "heading": (response.xpath("//h1/text()").get() or "").strip() or None,
            "price": response.xpath("//p[@class='price']/text()").re_first(r"[\d.]+"),
            "links": [text.strip() for text in response.xpath("//main//li/a/text()").getall()],
        }
