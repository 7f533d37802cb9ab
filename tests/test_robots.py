from lib.fetching.robots import RobotsRules

ROBOTS = b"""User-agent: Trawl
Disallow: /private/
Disallow: /page/5
Crawl-delay: 2

User-agent: *
Disallow: /
Sitemap: http://a.test/sitemap.xml
"""


def rules(status, body=b""):
    return RobotsRules.from_response(status, body, "Trawl", 512000)


def test_parsed_rules_match_our_product_token():
    parsed = rules(200, ROBOTS)
    assert parsed.allowed("http://a.test/page/1")
    assert not parsed.allowed("http://a.test/private/x")
    assert not parsed.allowed("http://a.test/page/5")
    assert parsed.crawl_delay() == 2.0
    assert parsed.sitemaps == ["http://a.test/sitemap.xml"]
    other = RobotsRules.from_response(200, ROBOTS, "OtherBot", 512000)
    assert not other.allowed("http://a.test/page/1")


def test_status_codes_as_rfc_9309_says():
    assert rules(404).allowed("http://a.test/anything")
    assert rules(403).allowed("http://a.test/anything")
    assert not rules(503).allowed("http://a.test/anything")
    assert rules(503).unavailable
    assert not rules(None).allowed("http://a.test/")
    assert rules(404).crawl_delay() is None


def test_only_the_first_part_up_to_the_limit_is_parsed():
    body = b"User-agent: *\n" + b"#" * 600_000 + b"\nDisallow: /\n"
    limited = RobotsRules.from_response(200, body, "Trawl", 512000)
    assert limited.allowed("http://a.test/x")


def test_garbage_never_raises():
    for body in (b"\x00\xff\xfe", b"<html>not robots</html>", b"Disallow /x\n\n\n", b""):
        assert rules(200, body).allowed("http://a.test/") in (True, False)
