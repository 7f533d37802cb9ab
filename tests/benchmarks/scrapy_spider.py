"""Reference for the fetch benchmark: a stock Scrapy CrawlSpider over the same web.

ROBOTSTXT_OBEY, one concurrent request per domain, no delay, depth limit as Trawl's
rounds, links followed within the seeds' hosts only (so that two spiders given half of
the hosts each do not crawl each other's). Settings given with -s override these.
Usage: scrapy runspider scrapy_spider.py -a seeds=FILE -s DEPTH_LIMIT=N
Prints one JSON line with the number of pages it got.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class BenchSpider(CrawlSpider):
    """Follows every link, as a generic crawler would."""

    name = "bench"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0,
        "TELNETCONSOLE_ENABLED": False,
        "USER_AGENT": "ScrapyBench (+https://trawl.invalid/bench)",
    }
    rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)

    def __init__(self, seeds: str = "", **kwargs):
        super().__init__(**kwargs)
        with open(seeds, encoding="utf-8") as handle:
            self.start_urls = [line.strip() for line in handle if line.strip()]
        self.allowed_domains = sorted({urlsplit(url).hostname for url in self.start_urls})
        self.pages = 0

    def parse_start_url(self, response, **kwargs):
        """Count the seeds too."""
        self.pages += 1
        return []

    def parse_page(self, response):
        """Count a page."""
        self.pages += 1
        return []

    def closed(self, reason):
        """Report the count."""
        print(json.dumps({"pages": self.pages, "reason": reason}), flush=True)
