"""The content of the local test web: deterministic pages of several hosts.

Host ``i`` of ``n`` serves (``P`` = ``pages_per_host``):

- ``/``: links to ``/page/1``, ``/page/2``, the next host, a disallowed ``/private/``
  page, a permanent redirect, a missing page, a text file, and links of other schemes;
- ``/page/k``: links to ``/page/k+1``, ``/page/2k`` and the next host's ``/page/k``;
  pages are only reachable by links, one level deeper each time;
- ``/robots.txt``: ``Disallow: /private/`` for everyone; host 1 asks for a Crawl-delay;
  host 2 also disallows ``/page/5`` for Trawl only; the last host has no robots.txt (404);
- behaviour endpoints in the style of Scrapy's mock server: ``/status/<code>``,
  ``/redirect/<n>`` (a chain of n hops), ``/gzip``, ``/large``, ``/delay/<ms>``.

Pages are pure functions of (host index, path), so a crawl's results can be predicted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Response:
    """What the server sends for one path."""

    status: int
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()
    gzip: bool = False
    delay_ms: int = 0


@dataclass(frozen=True)
class Site:
    """The whole test web: host names (loopback addresses) and a shared port."""

    hosts: tuple[str, ...]
    port: int
    pages_per_host: int = 8
    crawl_delay: float = 1.5

    def base(self, index: int) -> str:
        """Base URL of host ``index``."""
        return f"http://{self.hosts[index % len(self.hosts)]}:{self.port}"

    def respond(self, host: str, path: str) -> Response:
        """The response of host ``host`` for ``path`` (query string included)."""
        index = self.hosts.index(host)
        route = path.split("?", 1)[0]
        if route == "/robots.txt":
            return self._robots(index)
        if route == "/":
            return _html(f"Home of host {index}", self._home_links(index), _words(index, 0))
        if route.startswith("/page/"):
            return self._page(index, route[len("/page/") :])
        return _behaviour(self, index, route)

    def _robots(self, index: int) -> Response:
        if index == len(self.hosts) - 1 and len(self.hosts) > 1:
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
            (f"{self.base(index + 1)}/", "next host"),
        ]

    def _page(self, index: int, number: str) -> Response:
        if not number.isdigit() or not 1 <= int(number) <= self.pages_per_host:
            return Response(404, b"<html><body>not found</body></html>")
        k = int(number)
        links = [(f"{self.base(index + 1)}/page/{k}", "same page, next host")]
        for target in (k + 1, 2 * k):
            if target <= self.pages_per_host:
                links.append((f"../page/{target}", f"page {target}"))
        return _html(f"Host {index} page {k}", links, _words(index, k))


def _behaviour(site: Site, index: int, route: str) -> Response:
    if route == "/old-page":
        return Response(301, b"", headers=(("Location", "/page/3"),))
    if route == "/data.txt":
        return Response(200, f"plain text of host {index}\n".encode(), "text/plain")
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


def _words(index: int, page: int) -> str:
    vocabulary = "crawl fetch parse index rank link host page web text".split()
    return " ".join(vocabulary[(index * 7 + page * 3 + i) % len(vocabulary)] for i in range(60))


def _html(title: str, links: list[tuple[str, str]], text: str) -> Response:
    return Response(200, _html_bytes(title, links, text))


def _html_bytes(title: str, links: list[tuple[str, str]], text: str) -> bytes:
    anchors = "\n".join(f'<li><a href="{href}">{label}</a></li>' for href, label in links)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f'<title>{title}</title></head>\n<body><nav><a href="/">home</a></nav>'
        f"<h1>{title}</h1><p>{text}</p>\n<ul>\n{anchors}\n</ul>"
        "<script>var x = '<a href=\"/never\">';</script></body></html>\n"
    ).encode()
