"""Parsing: each page by the parser of its type (HTML with lxml, built in; others by
plugins), then its fingerprints and parse filters (data flow step 4).

``parse_page`` (one page) and ``parse_pages`` (a batch) never raise on bad input: a
page they cannot read is returned with ``status="failed"`` and a reason, a type no
parser is registered for (``parse.plugins``) with ``status="not_parsed"`` and the type.
Outlinks are resolved against ``<base href>`` (else the page URL) by the WHATWG rules,
then normalized and filtered (``lib.url.normalize``); dropped links are counted.

Encoding is decided in this order: byte-order mark, the Content-Type charset, a
``<meta charset>`` in the first 1024 bytes, then detection with charset-normalizer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import lxml.html
from lxml import etree

from lib import plugins
from lib.content import pagemeta
from lib.content.encoding import decide_encoding
from lib.content.fingerprint import content_hash, fingerprints_many, without_own_address
from lib.url.filter import UrlFilter, clean
from lib.url.normalize import resolve

HTML_TYPES = ("text/html", "application/xhtml+xml")
INVISIBLE_TAGS = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside")
ANCHOR_TEXT_LIMIT = 200
_LINK_ATTRIBUTES = {"a": "href", "area": "href", "frame": "src", "iframe": "src"}


@dataclass
class Outlink:
    """One link found in a page, already normalized."""

    url: str
    anchor: str
    rel: str | None
    metadata: dict[str, str] | None = None  # what a parser plugin says of the link


@dataclass
class ParseResult:
    """What the parse stage keeps of one page."""

    status: str
    reason: str | None = None
    title: str | None = None
    text: str | None = None
    content_hash: str | None = None
    simhash: int | None = None
    minhash: bytes | None = None  # b-bit MinHash sketch of the text (near duplicates)
    encoding: str | None = None
    encoding_source: str | None = None  # bom, header, meta, detected, default
    description: str | None = None
    language: str | None = None
    canonical: str | None = None
    feeds: list[str] = field(default_factory=list)  # feeds and sitemaps advertised
    outlinks: list[Outlink] = field(default_factory=list)
    links_rejected: dict[str, int] = field(default_factory=dict)
    robots: str | None = None  # noindex / nofollow from meta robots and X-Robots-Tag
    metadata: dict[str, str] = field(default_factory=dict)  # from plugins and parse filters


def is_html(content_type: str | None, body: bytes) -> bool:
    """True for HTML types, or for an untyped body that starts like markup."""
    if content_type:
        return content_type.split(";")[0].strip().lower() in HTML_TYPES
    return body.lstrip()[:1] == b"<"


def parse_page(
    url: str,
    body: bytes,
    content_type: str | None,
    conf: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
) -> ParseResult:
    """Parse one fetched body; ``url`` is the URL it was fetched from (after redirects)."""
    return parse_pages([(url, body, content_type, headers)], conf)[0]


def parse_pages(
    pages: Sequence[tuple], conf: Mapping[str, Any], parsers: PageParsers | None = None
) -> list[ParseResult]:
    """Parse a batch of ``(url, body, content_type, headers)`` with the parser of each
    page's type (``parsers``: a task's plugins, made once; else made now)."""
    return (parsers or PageParsers(conf)).parse(pages)


class PageParsers:
    """A task's parsers by MIME type and its parse filters (``parse.plugins``,
    ``parse.filters``; ``lib.plugins``), and the URL filter of their outlinks.

    The fingerprints of a batch are computed together, in one vectorised pass
    (``fingerprints_many``), each without the page's own address where its text names
    it. ``noindex`` (meta robots or X-Robots-Tag) keeps the text out of the result (the
    fingerprints are still computed, for de-duplication); ``nofollow`` drops the outlinks.
    """

    def __init__(self, conf: Mapping[str, Any]):
        self.conf = conf
        self.url_filter = UrlFilter(conf)
        self.by_type = plugins.parsers(conf)
        self.filters = [(path, made) for path, made in _filters(conf)]

    def parse(self, pages: Sequence[tuple]) -> list[ParseResult]:
        """Parse a batch of ``(url, body, content_type, headers)``."""
        parsed = [self._parse_one(*page) for page in pages]
        texts = [
            without_own_address(text, page[0])
            for page, (_, text) in zip(pages, parsed, strict=True)
        ]
        values = fingerprints_many(texts)
        for (result, _), (simhash, minhash) in zip(parsed, values, strict=True):
            result.simhash, result.minhash = simhash, minhash
        for page, (result, text) in zip(pages, parsed, strict=True):
            if result.status == "success" and self.filters:
                self._filter(page, result, text)
        return [result for result, _ in parsed]

    def _parse_one(self, url, body, content_type, headers) -> tuple[ParseResult, str | None]:
        """The page's result without its fingerprints, and the text to fingerprint."""
        mime = _mime(content_type, body)
        parser = self.by_type.get(mime)
        if parser is None:
            digest = content_hash(body)
            return ParseResult("not_parsed", reason=mime or "unknown", content_hash=digest), None
        if isinstance(parser, HtmlParser):
            return _parse_one(
                url, body, content_type, headers, conf=self.conf, url_filter=self.url_filter
            )
        try:
            fields = parser.parse(url, body, content_type, dict(headers or {})) or {}
        except Exception as exc:  # a plugin's failure is the page's, recorded
            reason = f"{type(parser).__name__}: {exc}"[:200]
            return ParseResult("failed", reason=reason, content_hash=content_hash(body)), None
        return _from_fields(url, body, fields, self.url_filter), fields.get("text")

    def _filter(self, fetched: tuple, result: ParseResult, text: str | None) -> None:
        """Run the parse filters: each adds to the page's metadata. A filter is given the
        page's fields, its body and its content type."""
        url, body, content_type = fetched[0], fetched[1], fetched[2]
        page = {
            "title": result.title,
            "text": text,
            "language": result.language,
            "body": body,
            "content_type": content_type,
        }
        for path, made in self.filters:
            try:
                added = made.filter(url, {**page, "metadata": dict(result.metadata)}) or {}
            except Exception as exc:
                raise RuntimeError(f"parse filter {path} failed on {url}: {exc}") from exc
            result.metadata.update({str(k): str(v) for k, v in added.items() if v is not None})


def _filters(conf: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [
        (path, plugins.instance("parse.filters", path, conf))
        for path in conf.get("parse.filters") or ()
    ]


def _mime(content_type: str | None, body: bytes) -> str | None:
    """The page's MIME type, lower case: its Content-Type's, else HTML by its first byte."""
    if content_type:
        return content_type.split(";")[0].strip().lower() or None
    return "text/html" if body.lstrip()[:1] == b"<" else None


def _from_fields(url: str, body: bytes, fields: Mapping[str, Any], url_filter) -> ParseResult:
    """A plugin parser's fields as a ParseResult: outlinks resolved against the page's
    URL, normalized and filtered as the HTML parser's are."""
    outlinks, dropped, seen = [], Counter(), set()
    for link in fields.get("outlinks") or ():
        href, anchor, known = _link_parts(link)
        absolute = resolve(href, url)
        key, reason = clean(absolute, url_filter, resolved=True) if absolute else (None, "invalid")
        if key is None:
            dropped[reason] += 1
        elif key not in seen:
            seen.add(key)
            outlinks.append(Outlink(key, fold_space(anchor)[:ANCHOR_TEXT_LIMIT], None, known))
    canonical = fields.get("canonical")
    return ParseResult(
        "success",
        title=fields.get("title"),
        text=fields.get("text"),
        content_hash=content_hash(body),
        description=fields.get("description"),
        language=fields.get("language"),
        canonical=clean(canonical, url_filter)[0] if canonical else None,
        outlinks=outlinks,
        links_rejected=dict(dropped),
        metadata={str(k): str(v) for k, v in (fields.get("metadata") or {}).items()},
    )


def _link_parts(link) -> tuple[str, str, dict[str, str] | None]:
    """A plugin's outlink, given as a URL, ``(url, anchor)`` or ``(url, anchor, metadata)``."""
    if isinstance(link, str):
        return link, "", None
    known = link[2] if len(link) > 2 else None
    metadata = {str(k): str(v) for k, v in known.items()} if known else None
    return link[0], link[1] or "", metadata


class HtmlParser:
    """The built-in HTML parser (lxml), registered as every parser is, by MIME type in
    ``parse.plugins``; ``PageParsers`` calls it directly, with the batch's fingerprints."""

    def __init__(self, conf: Mapping[str, Any]):
        self.conf = conf

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> HtmlParser:
        """The parser of a task."""
        return cls(conf)

    def parse(self, url, body, content_type, headers=None) -> dict[str, Any]:
        """The plugin contract's fields of one page."""
        result, text = _parse_one(
            url, body, content_type, headers, conf=self.conf, url_filter=UrlFilter(self.conf)
        )
        links = [(link.url, link.anchor) for link in result.outlinks]
        return {"title": result.title, "text": text, "outlinks": links, "language": result.language}


def _parse_one(url, body, content_type, headers, *, conf, url_filter):
    """A page's ParseResult without its SimHash, and the visible text to fingerprint."""
    digest = content_hash(body)
    encoding, source = decide_encoding(body, content_type)
    try:
        doc = _document(body, encoding)
    except (etree.ParserError, ValueError) as exc:
        failed = ParseResult(
            "failed",
            reason=str(exc)[:200],
            content_hash=digest,
            encoding=encoding,
            encoding_source=source,
        )
        return failed, None
    headers = headers or {}
    base = _base_url(doc, url)
    directives = robots_directives(doc, headers.get("x-robots-tag"), conf["http.agent.name"])
    outlinks, dropped = extract_outlinks(doc, base, url_filter, conf)
    if "nofollow" in directives and outlinks:
        dropped["nofollow"] += len(outlinks)
        outlinks = []
    text = visible_text(doc)
    result = ParseResult(
        "success",
        title=_title(doc),
        text=None if "noindex" in directives else text,
        content_hash=digest,
        encoding=encoding,
        encoding_source=source,
        description=pagemeta.description(doc),
        language=pagemeta.language(doc, headers),
        canonical=pagemeta.canonical(doc, headers, base, url_filter),
        feeds=pagemeta.advertised(doc, base, url_filter),
        outlinks=outlinks,
        links_rejected=dict(dropped),
        robots=",".join(sorted(directives)) or None,
    )
    return result, text


def followable_links(
    url: str,
    body: bytes,
    content_type: str | None,
    headers: Mapping[str, str],
    conf: Mapping[str, Any],
    url_filter: UrlFilter,
) -> list[str]:
    """The outlinks ``parse_page`` would keep, found cheaply (no text, no fingerprints):
    what a fetcher following links right away may follow. Empty for a page that is not
    HTML, cannot be read, or says nofollow."""
    decisions = _html_decisions(url, body, content_type, headers, conf, url_filter) or []
    return [link.url for link, reason in decisions if reason is None]


def outlink_decisions(
    page: tuple, conf: Mapping[str, Any], url_filter: UrlFilter
) -> list[tuple[Outlink, str | None]]:
    """Every link of a page (``(url, body, content_type, headers)``, as ``parse_pages``
    takes) with why ``parse_page`` drops it (None: kept; ``nofollow`` for all under an
    HTML page's nofollow): what parsechecker shows. A page that is not HTML gives its
    parser plugin's outlinks, all kept."""
    url, body, content_type, headers = page
    if not is_html(content_type, body):
        result = parse_page(url, body, content_type, conf, headers)
        return [(link, None) for link in result.outlinks]
    return _html_decisions(url, body, content_type, headers, conf, url_filter) or []


def _html_decisions(url, body, content_type, headers, conf, url_filter):
    """``link_decisions`` of an HTML page, every link dropped under its nofollow; None
    for a page that is not HTML or cannot be read."""
    if not is_html(content_type, body):
        return None
    try:
        doc = _document(body, decide_encoding(body, content_type)[0])
    except (etree.ParserError, ValueError):
        return None
    decisions = list(link_decisions(doc, _base_url(doc, url), url_filter, conf))
    if "nofollow" in robots_directives(doc, headers.get("x-robots-tag"), conf["http.agent.name"]):
        return [(link, reason or "nofollow") for link, reason in decisions]
    return decisions


def _document(body: bytes, encoding: str) -> lxml.html.HtmlElement:
    """The page's document tree; raises ParserError or ValueError when there is none."""
    markup = body.decode(encoding, errors="replace").replace("\x00", "")
    return lxml.html.document_fromstring(markup)


def robots_directives(doc, header: str | None, agent: str) -> set[str]:
    """``noindex``/``nofollow`` from ``<meta name="robots|AGENT">`` and ``X-Robots-Tag``.

    ``none`` means both. An X-Robots-Tag value prefixed with another crawler's name
    (``otherbot: noindex``) does not apply to us.
    """
    values = []
    for meta in doc.iter("meta"):
        name = (meta.get("name") or "").strip().lower()
        if name in ("robots", agent.lower()):
            values.append(meta.get("content") or "")
    if header:
        for part in header.split(","):
            target, sep, rest = part.partition(":")
            if sep and target.strip().lower() not in ("noindex", "nofollow", "none"):
                if target.strip().lower() != agent.lower() and target.strip():
                    continue
                part = rest
            values.append(part)
    found = set()
    for value in values:
        for token in value.replace(",", " ").lower().split():
            if token == "none":
                found |= {"noindex", "nofollow"}
            elif token in ("noindex", "nofollow"):
                found.add(token)
    return found


def _title(doc: lxml.html.HtmlElement) -> str | None:
    node = doc.find(".//title")
    if node is None:
        return None
    return fold_space(node.text_content()) or None


def fold_space(text: str) -> str:
    """Runs of whitespace become one space; ends are trimmed. (``str.split`` knows the
    same whitespace as the regex ``\\s+``, at a fifth of its cost on a page's text.)"""
    return " ".join(text.split())


def visible_text(doc: lxml.html.HtmlElement) -> str:
    """Text a reader sees: invisible and boilerplate elements removed, whitespace folded."""
    body = doc.find(".//body")
    root = body if body is not None else doc
    for element in list(root.iter(*INVISIBLE_TAGS)):
        element.drop_tree()
    return fold_space(" ".join(root.itertext()))


def extract_outlinks(
    doc: lxml.html.HtmlElement, base: str, url_filter: UrlFilter, conf: Mapping[str, Any]
) -> tuple[list[Outlink], Counter]:
    """Links of the page resolved against ``base`` (``<base href>`` or the page URL),
    normalized and filtered; and the dropped ones counted by
    reason (``nofollow``, ``invalid``, a ``lib.url.filter`` reason, ``outlink_limit``)."""
    links: list[Outlink] = []
    dropped: Counter = Counter()
    for link, reason in link_decisions(doc, base, url_filter, conf):
        if reason is None:
            links.append(link)
        else:
            dropped[reason] += 1
    return links, dropped


def link_decisions(
    doc: lxml.html.HtmlElement, base: str, url_filter: UrlFilter, conf: Mapping[str, Any]
) -> Iterator[tuple[Outlink, str | None]]:
    """The page's links, each with why it is dropped (None: kept), in document order: an
    ``Outlink`` whose ``url`` is the normalized target (the href resolved, or as written
    when it cannot be). A target kept once is not given again; a dropped link is given
    each time it appears (each is counted)."""
    limit = conf["db.max.outlinks.per.page"]
    follow_nofollow = conf["parse.follow.nofollow"]
    kept: set[str] = set()
    for element in doc.iter(*_LINK_ATTRIBUTES):
        href = element.get(_LINK_ATTRIBUTES[element.tag])
        rel = element.get("rel")
        if href is None:
            continue
        anchor = fold_space(element.text_content() or element.get("alt", ""))[:ANCHOR_TEXT_LIMIT]
        if not follow_nofollow and rel and "nofollow" in rel.lower().split():
            yield Outlink(resolve(href, base) or href, anchor, rel), "nofollow"
            continue
        absolute = resolve(href, base)
        key, reason = clean(absolute, url_filter, resolved=True) if absolute else (None, "invalid")
        if key is None:
            yield Outlink(absolute or href, anchor, rel), reason
        elif key not in kept:
            over = limit >= 0 and len(kept) >= limit
            kept.update(() if over else (key,))
            yield Outlink(key, anchor, rel), "outlink_limit" if over else None


def _base_url(doc: lxml.html.HtmlElement, url: str) -> str:
    base = doc.find(".//base[@href]")
    if base is not None:
        resolved = resolve(base.get("href"), url)
        if resolved:
            return resolved
    return url
