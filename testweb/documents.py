"""Pages of other types than HTML on every ring host, for the parser plugins:

- ``/doc.pdf``: a one-page PDF (``application/pdf``) with a title, text, and a link
  annotation to ``/page/3``;
- ``/feed.xml``: an RSS feed (``application/rss+xml``) whose two entries link to
  ``/page/4`` and ``/page/5``;
- ``/thing.trawl``: a made-up type (``application/x-trawl-thing``, lines ``title: ...``
  and ``link: PATH``), which only the tests' plugin package parses (links ``/page/6``);
- ``/blob.xyz``: a type no parser knows (``application/x-trawl-unknown``).
"""

from __future__ import annotations

ROUTES = ("/doc.pdf", "/feed.xml", "/thing.trawl", "/blob.xyz")
THING_TYPE = "application/x-trawl-thing"
UNKNOWN_TYPE = "application/x-trawl-unknown"


def document(base: str, route: str) -> tuple[bytes, str]:
    """``(body, content type)`` of one of ``ROUTES`` on the host at ``base``."""
    if route == "/doc.pdf":
        return pdf(
            f"PDF of {base}", "Portable text about the crawl", f"{base}/page/3"
        ), "application/pdf"
    if route == "/feed.xml":
        return feed(base), "application/rss+xml"
    if route == "/thing.trawl":
        return f"title: A thing of {base}\nlink: /page/6\n".encode(), THING_TYPE
    return b"\x00\x01\x02 binary", UNKNOWN_TYPE


def feed(base: str) -> bytes:
    """An RSS 2.0 feed of two entries."""
    items = "".join(
        f"<item><title>Entry {k}</title><link>{base}/page/{k}</link>"
        f"<description>Summary of entry {k}</description>"
        f"<pubDate>Tue, 0{k} Dec 2026 10:00:00 GMT</pubDate></item>"
        for k in (4, 5)
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>Feed of {base}</title><link>{base}/</link><language>en</language>"
        f"<description>News</description>{items}</channel></rss>"
    ).encode()


def pdf(title: str, text: str, link: str) -> bytes:
    """A minimal PDF 1.4: one page of Helvetica text, a URI link annotation, a title."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> /Annots [6 0 R] >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Annot /Subtype /Link /Rect [72 700 300 720] "
        b"/A << /S /URI /URI (" + link.encode() + b") >> >>",
        b"<< /Title (" + title.encode() + b") >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 7 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
