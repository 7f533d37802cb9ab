"""Which links a fetch task follows at once (lib.fetching.follow), without Spark or a web."""

from lib.config import load_config
from lib.fetching.follow import OutlinkFollower
from lib.url.filter import UrlFilter

HOST = "site.example"
PAGE = f"http://{HOST}/"
HTML = {"content-type": "text/html"}


def follower(*settings: str) -> OutlinkFollower:
    conf = load_config(overrides=["fetcher.follow.outlinks.depth=3", *settings])
    return OutlinkFollower(conf, UrlFilter(conf))


def page(*hrefs: str, head: str = "") -> bytes:
    links = "".join(f'<a href="{href}">x</a>' for href in hrefs)
    return f"<html><head>{head}</head><body>{links}</body></html>".encode()


def test_nutch_budget_per_level():
    chooser = follower(
        "fetcher.follow.outlinks.num.links=4", "fetcher.follow.outlinks.depth.divisor=2"
    )
    assert [chooser.budget(level) for level in range(4)] == [8, 4, 0, 0]
    deep = follower(
        "fetcher.follow.outlinks.num.links=10", "fetcher.follow.outlinks.depth.divisor=3"
    )
    assert [deep.budget(level) for level in range(4)] == [30, 10, 10, 0]  # depth 3: none at 3
    assert not follower("fetcher.follow.outlinks.depth=-1").enabled


def test_only_own_host_new_urls_within_the_budget():
    chooser = follower("fetcher.follow.outlinks.num.links=1")
    chooser.claim(PAGE, HOST)
    body = page("/", "http://other.example/a", "/a", "/a#frag", "/b", "/c", "/d")
    links, found = chooser.links(PAGE, HOST, 0, 0, body, HTML)
    assert links == [f"http://{HOST}/a", f"http://{HOST}/b"]  # budget 2 at level 0
    assert found == 6  # every kept link counts for the score share
    again, _ = chooser.links(PAGE, HOST, 0, 0, body, HTML)
    assert again == [f"http://{HOST}/c", f"http://{HOST}/d"]  # /a and /b are claimed


def test_defences_of_updatedb_apply():
    capped = follower("db.max.urls.per.host=3")
    capped.claim(PAGE, HOST)
    links, _ = capped.links(PAGE, HOST, 0, 0, page("/a", "/b", "/c"), HTML)
    assert links == [f"http://{HOST}/a", f"http://{HOST}/b"]
    pattern = follower("db.max.urls.per.pattern=2")
    links, _ = pattern.links(PAGE, HOST, 0, 0, page("/day/1", "/day/2", "/day/3", "/x"), HTML)
    assert links == [f"http://{HOST}/day/1", f"http://{HOST}/day/2", f"http://{HOST}/x"]
    variants = follower("urlnormalizer.drop.trailing.slash=true")
    links, _ = variants.links(PAGE, HOST, 0, 0, page("/a/", "/a"), HTML)
    assert links == [f"http://{HOST}/a/"]  # one URL per dedup key
    shallow = follower("db.max.depth=2")
    assert shallow.links(PAGE, HOST, 2, 0, page("/a"), HTML) == ([], 0)
    assert shallow.links(PAGE, HOST, 1, 0, page("/a"), HTML)[0] == [f"http://{HOST}/a"]


def test_nofollow_and_non_html_give_nothing():
    chooser = follower()
    meta = page("/a", head='<meta name="robots" content="nofollow">')
    assert chooser.links(PAGE, HOST, 0, 0, meta, HTML) == ([], 0)
    header = HTML | {"x-robots-tag": "nofollow"}
    assert chooser.links(PAGE, HOST, 0, 0, page("/a"), header) == ([], 0)
    assert chooser.links(PAGE, HOST, 0, 0, page("/a"), {"content-type": "text/plain"}) == ([], 0)
    rel = page("/a").replace(b'href="/a"', b'href="/a" rel="nofollow"')
    assert chooser.links(PAGE, HOST, 0, 0, rel, HTML) == ([], 0)
