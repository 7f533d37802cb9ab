"""The content of the local test web: deterministic pages of several hosts.

Host ``i`` of ``n`` serves (``P`` = ``pages_per_host``; ``/copy/k`` is ``/page/k`` again,
``/near/k`` is ``/page/k`` with one sentence changed: duplicates for de-duplication):

- ``/``: links to ``/page/1``, ``/page/2``, the next host, a disallowed ``/private/``
  page, a permanent redirect, a missing page, a text file, and links of other schemes;
- ``/page/k``: links to ``/page/k+1``, ``/page/2k`` and the next host's ``/page/k``;
  pages are only reachable by links, one level deeper each time; with ``fanout`` F,
  ``/`` also links to ``/page/1`` ... ``/page/F`` and ``/page/k`` to ``/page/Fk+1`` ...
  ``/page/Fk+F`` (an F-ary tree: levels 1..d hold F + ... + F^d pages), so that a shallow
  crawl reaches every page, as in the benchmark's web;
- ``/robots.txt``: ``Disallow: /private/`` for everyone; host 1 asks for a Crawl-delay;
  host 2 also disallows ``/page/5`` for Trawl only; the last host has no robots.txt (404);
- ``/doc.pdf``, ``/feed.xml``, ``/thing.trawl``, ``/blob.xyz``: pages of other types,
  for the parser plugins (``testweb.documents``);
- ``/news/...`` and ``/syndicated/...``: a news web of realistic text with exact and
  near copies whose right answer is known (``testweb.news``);
- behaviour endpoints in the style of Scrapy's mock server: ``/status/<code>``,
  ``/redirect/<n>`` (a chain of n hops), ``/gzip``, ``/large``, ``/delay/<ms>``.

Hosts after the first ``ring_size`` ones are not linked from the ring; each plays one
role of ``SPECIAL_ROLES`` (robots.txt unavailable, redirected or oversized, a failing
server, a Crawl-delay too long, a slow server). Stateful endpoints answer by how often
the same client (User-Agent) asked them before (``hit``): ``/ratelimit/<s>`` (429 with
Retry-After s, then 200), ``/unavailable-date`` (503 with an HTTP-date Retry-After, then
200). Hostile ones:
``/trickle`` (a byte at a time), ``/bomb`` (gzip of 20 MB of zeros), ``/loop/a`` <->
``/loop/b``, ``/reset`` (connection closed), ``/garbage`` (no valid status line).

With ``stragglers`` S, the ring's last S hosts are stragglers among the fast ones, in
turn (``STRAGGLER_ROLES``): one whose ``/page/1`` trickles for ``trickle_s`` seconds, one
whose ``/page/1`` is a 12 MB page streamed at about 5 MB/s (``/huge`` on any host), one
whose pages answer 503 every other time they are asked (each page's first ask fails).
Their other pages answer at once: a crawler has no reason to slow down for them.

Pages are pure functions of (host index, path, hit), so a crawl's results can be predicted.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import formatdate

from testweb import documents
from testweb.news import NewsWeb

SPECIAL_ROLES = (
    "robots_unavailable",  # robots.txt answers 503: nothing may be fetched this round
    "robots_redirect",  # robots.txt redirects to /robots-real.txt (Disallow: /secret/)
    "robots_oversize",  # Disallow: /early/, 600 KB of comments, Disallow: /late/
    "failing",  # every page answers 500
    "crawl_delay_too_long",  # Crawl-delay: 120
    "slow",  # every page takes 150 ms
    "traps",  # six good pages among spider traps (see _trap_page)
    "soft404",  # a missing page is answered 200 with a "not found" page (soft 404)
    "sitemaps",  # robots.txt names a sitemap index: gzip URL set, /hidden/ pages, lastmod
)
SLOW_MS = 150
STRAGGLER_ROLES = ("trickle", "huge", "flaky")
TRICKLE_BYTE_S = 0.3  # the trickle mode's pause between two bytes
HUGE_BYTES = 12_000_000
STREAM_CHUNK = 256 * 1024  # the stream mode's writes: a chunk every STREAM_PAUSE_S
STREAM_PAUSE_S = 0.05


@dataclass(frozen=True)
class Response:
    """What the server sends for one path."""

    status: int
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()
    gzip: bool = False
    delay_ms: int = 0
    # normal, trickle (a byte every TRICKLE_BYTE_S), stream (STREAM_CHUNK bytes every
    # STREAM_PAUSE_S), reset, garbage
    mode: str = "normal"


@dataclass(frozen=True)
class Site:
    """The whole test web: host names (loopback addresses) and a shared port."""

    hosts: tuple[str, ...]
    port: int
    pages_per_host: int = 8
    crawl_delay: float = 1.5
    ring_size: int = 0  # hosts linked to each other; 0: all of them
    fanout: int = 0  # tree links per page (see the module's docstring); 0: none
    words: int = 800  # words of text of the home page and /page/k (800: about 4.5 KB)
    stragglers: int = 0  # the ring's last hosts that play STRAGGLER_ROLES, in turn
    trickle_s: float = 20.0  # how long the trickling straggler's page takes
    news_articles: int = 200  # articles of each ring host's news pages (testweb.news)

    @property
    def ring(self) -> int:
        """How many hosts form the linked ring."""
        return self.ring_size or len(self.hosts)

    @functools.cached_property
    def news(self) -> NewsWeb:
        """The ring hosts' news pages (``/news/...``, ``/syndicated/...``)."""
        return NewsWeb(tuple(self.base(i) for i in range(self.ring)), self.news_articles)

    @functools.cached_property
    def _host_index(self) -> dict[str, int]:
        return {host: index for index, host in enumerate(self.hosts)}

    def base(self, index: int) -> str:
        """Base URL of host ``index``."""
        return f"http://{self.hosts[index % len(self.hosts)]}:{self.port}"

    def next_in_ring(self, index: int) -> str:
        """Base URL of the host a ring host links to (special hosts link to themselves)."""
        return self.base((index + 1) % self.ring if index < self.ring else index)

    def role(self, index: int) -> str | None:
        """The special role of a host outside the ring, or ``None``."""
        return SPECIAL_ROLES[index - self.ring] if index >= self.ring else None

    def straggler(self, index: int) -> str | None:
        """The straggler role of a ring host (``STRAGGLER_ROLES``), or ``None``."""
        first = self.ring - self.stragglers
        if not self.stragglers or not first <= index < self.ring:
            return None
        return STRAGGLER_ROLES[(index - first) % len(STRAGGLER_ROLES)]

    def host_with(self, role: str) -> int:
        """Index of the host playing ``role``."""
        return self.ring + SPECIAL_ROLES.index(role)

    def respond(
        self, host: str, path: str, hit: int = 0, epoch: int = 0, epoch_time: float = 0.0
    ) -> Response:
        """The response of host ``host`` for ``path`` (query string included), asked for
        the ``hit``-th time before, in the web's ``epoch`` (pages under /fresh/ change
        between epochs), which began at ``epoch_time`` (epoch seconds)."""
        index = self._host_index[host]
        route = path.split("?", 1)[0]
        role = self.role(index)
        if role == "sitemaps" and (
            route.startswith(("/sitemap", "/hidden/")) or route == "/robots.txt"
        ):
            return _sitemaps_host(self.base(index), route, epoch_time)
        if route.startswith("/fresh/") and route[7:].isdigit() and role is None:
            return _fresh_page(index, int(route[7:]), epoch)
        if route.startswith("/robots"):
            return self._robots(index, route)
        if role == "failing":
            return Response(500, b"server error", "text/plain")
        if role == "slow":
            return _html(f"Slow {route}", [], _words(index, 1), delay_ms=SLOW_MS)
        if role == "traps":
            return _trap_page(self.base(index), path, hit)
        if role == "soft404" and not route.startswith("/page/") and route != "/":
            return _html(
                "Sorry",
                [("/", "home")],
                f"We could not find {route} on this site. " + _words(99, 0)[:3000],
            )
        straggling = self._straggling(index, route, hit)
        if straggling is not None:
            return straggling
        if route.startswith(("/news/", "/syndicated/")) and index < self.ring:
            page = self.news.page(index, route)
            return Response(200, page) if page else Response(404, b"not found", "text/plain")
        if route == "/":
            return _html(
                f"Home of host {index}", self._home_links(index), _words(index, 0, size=self.words)
            )
        if route.startswith("/page/"):
            return self._page(index, route[len("/page/") :])
        if route.startswith(("/copy/", "/near/")):
            return self._page(index, route[len("/copy/") :], edit=route.startswith("/near/"))
        return _behaviour(self, index, route, hit)

    def _straggling(self, index: int, route: str, hit: int) -> Response | None:
        """A straggler's slow, huge or failing answer (see the module's docstring)."""
        role = self.straggler(index)
        if role == "trickle" and route == "/page/1":
            size = max(2, round(self.trickle_s / TRICKLE_BYTE_S) + 1)
            return Response(200, b"<p>" + b"x" * (size - 3), mode="trickle")
        if role == "huge" and route == "/page/1":
            return _huge()
        if role == "flaky" and route.startswith("/page/") and hit % 2 == 0:
            return Response(503, b"busy, try again", "text/plain")
        return None

    def _robots(self, index: int, route: str) -> Response:
        role = self.role(index)
        if role is not None:
            return _special_robots(role, route)
        if route != "/robots.txt":
            return Response(404, b"not found", "text/plain")
        if index == self.ring - 1 and self.ring > 1:
            return Response(404, b"no robots here", "text/plain")
        lines = ["User-agent: *", "Disallow: /private/"]
        if index == 1:
            lines.append(f"Crawl-delay: {self.crawl_delay}")
        if index == 2:
            lines = ["User-agent: Trawl", "Disallow: /private/", "Disallow: /page/5", ""] + lines
        return Response(200, ("\n".join(lines) + "\n").encode(), "text/plain")

    def _home_links(self, index: int) -> list[tuple[str, str]]:
        return [
            ("/page/1", "first page"),
            (" /page/2\t", "second page, href with spaces"),
            ("/private/secret", "private area"),
            ("/old-page", "moved page"),
            ("/missing", "missing page"),
            ("/data.txt", "a text file"),
            ("/page/1#section", "fragment of page 1"),
            ("mailto:webmaster@example.invalid", "mail"),
            ("javascript:void(0)", "script"),
            (f"{self.next_in_ring(index)}/", "next host"),
        ] + self._tree_links(0)

    def _tree_links(self, k: int) -> list[tuple[str, str]]:
        """Links from page ``k`` (0: the home page) to its children in the F-ary tree."""
        children = range(self.fanout * k + 1, min(self.fanout * (k + 1), self.pages_per_host) + 1)
        return [(f"/page/{child}", f"page {child}") for child in children]

    def _page(self, index: int, number: str, edit: bool = False) -> Response:
        if not number.isdigit() or not 1 <= int(number) <= self.pages_per_host:
            return Response(404, b"<html><body>not found</body></html>")
        k = int(number)
        links = [(f"{self.next_in_ring(index)}/page/{k}", "same page, next host")]
        for target in (k + 1, 2 * k):
            if target <= self.pages_per_host:
                links.append((f"../page/{target}", f"page {target}"))
        links += self._tree_links(k)
        return _html(f"Host {index} page {k}", links, _words(index, k, edit, self.words))


HIDDEN_PAGES = 3  # /hidden/k: linked from nowhere, listed in a sitemap only


def _sitemaps_host(base: str, route: str, epoch_time: float) -> Response:
    """robots.txt names a sitemap index (and one on another host, never fetched); the
    index lists a gzipped URL set (/page/1-8 monthly, /hidden/1-3 weekly, an off-host
    URL, a robots-disallowed URL) and a URL set of /page/1-3 whose lastmod is the start
    of the current epoch."""
    xml = "application/xml"
    if route == "/robots.txt":
        text = f"User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap-index.xml\n"
        text += "Sitemap: http://sitemaps.elsewhere.invalid/sitemap.xml\n"
        return Response(200, text.encode(), "text/plain")
    if route == "/sitemap-index.xml":
        children = "".join(
            f"<sitemap><loc>{base}/{name}</loc></sitemap>"
            for name in ("sitemap-pages.xml.gz", "sitemap-fresh.xml")
        )
        return Response(200, _urlset(children, "sitemapindex").encode(), xml)
    if route == "/sitemap-pages.xml.gz":
        entries = [(f"/page/{k}", "monthly", "0.8") for k in range(1, 9)]
        entries += [(f"/hidden/{k}", "weekly", "0.4") for k in range(1, HIDDEN_PAGES + 1)]
        entries += [("/private/listed", "daily", "1.0")]
        urls = "".join(
            f"<url><loc>{base}{path}</loc><changefreq>{freq}</changefreq>"
            f"<priority>{priority}</priority></url>"
            for path, freq, priority in entries
        )
        urls += "<url><loc>http://other.invalid/listed</loc></url>"
        return Response(200, gzip.compress(_urlset(urls).encode(), mtime=0), "application/gzip")
    if route == "/sitemap-fresh.xml":
        stamp = datetime.fromtimestamp(epoch_time or EPOCH_ZERO, tz=UTC).isoformat()
        urls = "".join(
            f"<url><loc>{base}/page/{k}</loc><lastmod>{stamp}</lastmod></url>" for k in (1, 2, 3)
        )
        return Response(200, _urlset(urls).encode(), xml)
    if route.startswith("/hidden/") and route[8:].isdigit() and 1 <= int(route[8:]) <= HIDDEN_PAGES:
        return _html(f"Hidden {route[8:]}", [], _words(77, int(route[8:])))
    return Response(404, b"<html><body>not found</body></html>")


def _urlset(body: str, root: str = "urlset") -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<{root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</{root}>'
    )


FRESH_PAGES = 20
EPOCH_ZERO = 1_767_225_600  # 2026-01-01T00:00:00Z: the web's first epoch; one day each


def fresh_changes(number: int) -> bool:
    """Whether /fresh/k changes between epochs: even pages do, odd pages never."""
    return number % 2 == 0


def _fresh_page(index: int, number: int, epoch: int) -> Response:
    """A page with validators (ETag, Last-Modified): even pages get new text every epoch,
    odd pages keep theirs. The server answers conditional requests with 304."""
    if not 1 <= number <= FRESH_PAGES:
        return Response(404, b"<html><body>not found</body></html>")
    version = epoch if fresh_changes(number) else 0
    body = _html_bytes(
        f"Fresh {number} v{version}", [], _words(index, 1000 + 50 * number + version)
    )
    modified = formatdate(EPOCH_ZERO + version * 86_400, usegmt=True)
    etag = f'"{hashlib.sha1(body).hexdigest()[:16]}"'
    return Response(200, body, headers=(("ETag", etag), ("Last-Modified", modified)))


TRAP_PAGES = 6


def _trap_page(base: str, path: str, hit: int) -> Response:
    """A host of traps: a calendar linking 24 months away, session ids that change on every
    visit, tracking tags, a relative link that nests forever, a slash redirect, and
    variants of one URL (case, dot segments, escapes) around six good pages."""
    route, _, query = path.partition("?")
    host = base.split("//", 1)[1]
    if route == "/cal":
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        year = int(params.get("y", "2026")) if params.get("y", "").isdigit() else 2026
        links = [
            (f"/cal?y={y}&m={m}", f"{y}-{m}") for y in (year - 1, year + 1) for m in range(1, 13)
        ]
        return _html(f"Calendar {year}", links, "calendar")
    if route.startswith("/loopdir/"):
        return _html("Nested", [("more/", "more")], "nested")
    if route == "/trailing/":
        return Response(301, b"", headers=(("Location", "/trailing"),))
    if route == "/trailing":
        return _html("Trailing", [("/trailing/", "with a slash")], "trailing")
    number = route.removeprefix("/page/")
    if route == "/" or (number.isdigit() and 1 <= int(number) <= TRAP_PAGES):
        k = int(number) if number.isdigit() else 0
        nxt = min(k + 1, TRAP_PAGES)
        links = [(f"/page/{j}", f"good page {j}") for j in range(1, TRAP_PAGES + 1)]
        links += [
            (f"/page/{nxt}?b=2&a=1", "parameters in one order"),
            (f"/page/{nxt}?a=1&b=2", "parameters in the other order"),
            (f"/page/{nxt}?utm_source=mail&utm_medium=x", "tracked"),
            (f"/page/{nxt};jsessionid=S{hit}X{k}", "session path parameter"),
            (f"/page/{nxt}?sid={hit}{k}", "session query parameter"),
            (f"HTTP://{host.upper()}/./%70age/{nxt}#top", "variant"),
            ("/cal?y=2026&m=1", "calendar"),
            ("/loopdir/", "nested"),
            ("/trailing/", "slash redirect"),
        ]
        return _html(f"Good page {k}", links, _words(7, k))
    return Response(404, b"<html><body>not found</body></html>")


def _special_robots(role: str, route: str) -> Response:
    text = "User-agent: *\nDisallow: /private/\n"
    if role == "robots_unavailable":
        return Response(503, b"try later", "text/plain")
    if role == "robots_redirect":
        if route == "/robots.txt":
            return Response(301, b"", headers=(("Location", "/robots-real.txt"),))
        text = "User-agent: *\nDisallow: /secret/\n"
    elif role == "robots_oversize":
        text = "User-agent: *\nDisallow: /early/\n" + "#" * 600_000 + "\nDisallow: /late/\n"
    elif role == "crawl_delay_too_long":
        text += "Crawl-delay: 120\n"
    return Response(200, text.encode(), "text/plain")


def _huge() -> Response:
    return Response(200, _huge_page(), mode="stream")


@functools.cache
def _huge_page() -> bytes:
    return b"<html><body><p>" + b"huge " * (HUGE_BYTES // 5) + b"</p></body></html>"


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(b"\0" * 20_000_000, compresslevel=9, mtime=0)


def _stateful(route: str, hit: int) -> Response | None:
    if route.startswith("/ratelimit/") and route[11:].isdigit():
        if hit == 0:
            return Response(429, b"slow down", "text/plain", (("Retry-After", route[11:]),))
        return _html("After the rate limit", [], "ok")
    if route == "/unavailable-date":
        if hit == 0:
            when = formatdate(time.time() + 1.5, usegmt=True)
            return Response(503, b"later", "text/plain", (("Retry-After", when),))
        return _html("After the outage", [], "ok")
    return None


def _hostile(route: str) -> Response | None:
    if route == "/trickle":
        return Response(200, b"<html>" + b"x" * 60 + b"</html>", mode="trickle")  # ~20 s
    if route == "/huge":
        return _huge()
    if route == "/bomb":
        return Response(200, _bomb(), "text/html", (("Content-Encoding", "gzip"),))
    if route in ("/loop/a", "/loop/b"):
        return Response(
            302, b"", headers=(("Location", "/loop/b" if route[-1] == "a" else "/loop/a"),)
        )
    if route == "/reset":
        return Response(200, mode="reset")
    if route == "/garbage":
        return Response(200, mode="garbage")
    return None


def _behaviour(site: Site, index: int, route: str, hit: int = 0) -> Response:
    special = _stateful(route, hit) or _hostile(route)
    if special is not None:
        return special
    if route == "/old-page":
        return Response(301, b"", headers=(("Location", "/page/3"),))
    if route.startswith("/print/") and route[7:].isdigit():
        # Different text, but it names /page/k as its canonical URL.
        canonical = f'<link rel="canonical" href="/page/{route[7:]}">'
        return Response(200, _html_bytes("Printable", [], _words(index, 500), canonical))
    if route == "/nofollow/meta":
        robots = '<meta name="robots" content="nofollow">'
        links = [("/nf/meta-target", "not to follow"), ("/page/4", "not either")]
        return Response(200, _html_bytes("Meta nofollow", links, "meta", robots))
    if route == "/nofollow/rel":
        links = [("/nf/rel-target", "sponsored", "nofollow"), ("/page/4", "followed")]
        return Response(200, _html_bytes("Rel nofollow", links, "rel"))
    if route == "/nofollow/header":
        links = [("/nf/header-target", "not to follow")]
        page = _html_bytes("Header noindex nofollow", links, "header")
        return Response(200, page, headers=(("X-Robots-Tag", "noindex, nofollow"),))
    if route == "/data.txt":
        return Response(200, f"plain text of host {index}\n".encode(), "text/plain")
    if route in documents.ROUTES:
        body, kind = documents.document(site.base(index), route)
        return Response(200, body, kind)
    if route.startswith("/status/") and route[8:].isdigit():
        return Response(int(route[8:]), f"status {route[8:]}".encode(), "text/plain")
    if route.startswith("/redirect/") and route[10:].isdigit():
        hops = int(route[10:])
        target = f"/redirect/{hops - 1}" if hops > 1 else "/page/1"
        return Response(302, b"", headers=(("Location", target),))
    if route == "/gzip":
        return Response(200, _html_bytes("Compressed", [], _words(index, 99)), gzip=True)
    if route == "/large":
        return Response(200, b"<html><body>" + b"x" * 3_000_000 + b"</body></html>")
    if route.startswith("/delay/") and route[7:].isdigit():
        return Response(200, _html_bytes("Slow", [], "slow"), delay_ms=int(route[7:]))
    return Response(404, b"<html><body>not found</body></html>")


_SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "da", "ge", "hu", "zo", "fi")


def _vocabulary(size: int) -> tuple[str, ...]:
    """``size`` words of one to three syllables, made once: drawing a page's words from
    them is one ``choices`` call (syllable by syllable cost the server 1.4 ms a page, more
    than all of its HTTP work, and throttled the fetch benchmark's references)."""
    rng = random.Random(0)
    return tuple(
        "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(size)
    )


_VOCABULARY = _vocabulary(4096)


def _words(index: int, page: int, edit: bool = False, size: int = 800) -> str:
    """``size`` words of deterministic pseudo-text, distinct per (host, page); ``edit``
    changes one phrase (three words), for near-duplicates."""
    words = random.Random(index * 100_003 + page).choices(_VOCABULARY, k=size)
    if edit:
        words[100:103] = ["a", "changed", "phrase"]
    return " ".join(words)


def _html(title: str, links: list[tuple[str, str]], text: str, delay_ms: int = 0) -> Response:
    return Response(200, _html_bytes(title, links, text), delay_ms=delay_ms)


def _html_bytes(title: str, links: list[tuple[str, ...]], text: str, head: str = "") -> bytes:
    """A page; a link is ``(href, label)`` or ``(href, label, rel)``."""
    anchors = "\n".join(
        f'<li><a href="{href}"{f" rel={rel[0]}" if rel else ""}>{label}</a></li>'
        for href, label, *rel in links
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">{head}'
        f'<title>{title}</title></head>\n<body><nav><a href="/">home</a></nav>'
        f"<h1>{title}</h1><p>{text}</p>\n<ul>\n{anchors}\n</ul>"
        "<script>var x = '<a href=\"/never\">';</script></body></html>\n"
    ).encode()
