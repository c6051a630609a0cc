"""The baseline for bench/crawl_bench.sh: the same crawl as `crawler crawl site`, in Scrapy."""
from urllib.parse import urlparse

import scrapy


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start=None, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.allowed_domains = [urlparse(start).hostname]

    def parse(self, response):
        links = response.css("a::attr(href)").getall()
        for href in links:
            yield response.follow(href)
        yield {"url": response.url, "title": response.css("title::text").get(),
               "links": len(links)}
