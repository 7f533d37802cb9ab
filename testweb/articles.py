"""Article pages in templates unlike the news web's, whose main text is known: for
measuring main-content extraction (``lib.content.main_text``) on more than one web.

Each page is an article of the news web's text pool (``testweb.news``: its title and
35 to 60 sentences) under one of four templates, with what real pages put around and
inside an article:

- ``table``: an old table layout (navigation and an ad column in table cells);
- ``blog``: a byline, a comment section of three to eight comments, a tag list;
- ``docs``: breadcrumbs, a table-of-contents sidebar, an "edit this page" footer;
- ``magazine``: a cookie banner, a newsletter box and a "related" box inside the
  article's body, a figure with its caption (the caption is not main text here).

``page(template, number)`` gives ``(html, main_text)``: the main text is the title and
the article's sentences, in order.
"""

from __future__ import annotations

import random
from html import escape

from testweb.news import NewsWeb, article_word

TEMPLATES = ("table", "blog", "docs", "magazine")
_TEXT = NewsWeb((), articles=1)  # the text pool only: no hosts


def page(template: str, number: int) -> tuple[str, str]:
    """The HTML of article ``number`` in ``template``, and its main text."""
    article = _TEXT.article(1000 + TEMPLATES.index(template), number)
    rng = random.Random(f"{template}/{number}")
    paragraphs = _split_evenly(article.sentences, rng.randint(6, 12))
    body = _TEMPLATES[template](escape(article.title), [escape(p) for p in paragraphs], rng)
    html = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(article.title)} | {template.title()} site</title></head>"
        f"<body>{body}</body></html>\n"
    )
    return html, " ".join([article.title, *article.sentences])


def _split_evenly(sentences: tuple[str, ...], count: int) -> list[str]:
    """The sentences in ``count`` paragraphs of nearly equal length, in order."""
    size = -(-len(sentences) // count)
    return [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]


def _links(rng: random.Random, count: int, prefix: str) -> str:
    return "".join(
        f'<li><a href="/{prefix}/{i}">{article_word(rng).title()} {article_word(rng)}</a></li>'
        for i in range(count)
    )


def _other_sentences(rng: random.Random, count: int) -> list[str]:
    """Sentences of other articles (comments, boxes): not this page's main text."""
    other = _TEXT.article(2000, rng.randint(1, 10_000))
    return [escape(s) for s in rng.sample(other.sentences, min(count, len(other.sentences)))]


def _table(title: str, paragraphs: list[str], rng: random.Random) -> str:
    text = "".join(f"<p>{p}</p>" for p in paragraphs)
    ads = "".join(
        f"<p><a href='/ad/{i}'>{s}</a></p>" for i, s in enumerate(_other_sentences(rng, 3))
    )
    return (
        '<table width="100%"><tr><td colspan="3"><b>Valley Gazette</b> | '
        '<a href="/">Home</a> | <a href="/archive">Archive</a></td></tr>'
        f'<tr><td width="150" valign="top"><ul>{_links(rng, 12, "section")}</ul></td>'
        f'<td valign="top"><font size="5">{title}</font><br>{text}</td>'
        f'<td width="160" valign="top"><b>Sponsored</b>{ads}</td></tr>'
        '<tr><td colspan="3"><small>Valley Gazette, all rights reserved. '
        '<a href="/privacy">Privacy</a></small></td></tr></table>'
    )


def _blog(title: str, paragraphs: list[str], rng: random.Random) -> str:
    text = "".join(f"<p>{p}</p>" for p in paragraphs)
    comments = "".join(
        f'<li class="comment"><div class="author">{article_word(rng).title()} says:</div>'
        f"<p>{s}</p><a href='#reply'>Reply</a></li>"
        for s in _other_sentences(rng, rng.randint(3, 8))
    )
    return (
        f'<div id="header"><h3><a href="/">A {article_word(rng)} blog</a></h3>'
        f'<ul class="menu">{_links(rng, 6, "page")}</ul></div>'
        f'<div class="post"><h2 class="entry-title">{title}</h2>'
        f'<div class="byline">Posted by {article_word(rng).title()} on March 3</div>'
        f'<div class="entry-content">{text}</div>'
        f'<div class="tags">Tags: {_links(rng, 4, "tag")}</div></div>'
        f'<div id="comments"><h3>{len(comments.split("<li")) - 1} comments</h3>'
        f"<ol>{comments}</ol></div>"
        f'<div id="sidebar"><h3>Archives</h3><ul>{_links(rng, 10, "archive")}</ul></div>'
    )


def _docs(title: str, paragraphs: list[str], rng: random.Random) -> str:
    sections = "".join(
        f"<h2 id='s{i}'>Part {i + 1}</h2><p>{p}</p>" if i % 3 == 2 else f"<p>{p}</p>"
        for i, p in enumerate(paragraphs)
    )
    return (
        '<nav class="breadcrumbs"><a href="/">Docs</a> / <a href="/guide">Guide</a> / '
        f"{title}</nav>"
        f'<div class="layout"><nav class="toc"><h4>On this site</h4>'
        f"<ul>{_links(rng, 15, 'guide')}</ul></nav>"
        f'<main><h1>{title}</h1>{sections}<p class="edit"><a href="/edit">Edit this page</a>'
        " Last updated on March 3.</p></main></div>"
        '<footer><a href="/license">License</a> <a href="/contact">Contact</a></footer>'
    )


def _magazine(title: str, paragraphs: list[str], rng: random.Random) -> str:
    middle = len(paragraphs) // 2
    related = f'<aside class="related"><h3>Related</h3><ul>{_links(rng, 4, "story")}</ul></aside>'
    newsletter = (
        '<div class="newsletter"><p>Get the best of our stories in your inbox every week.</p>'
        '<form><input type="email"><button>Subscribe</button></form></div>'
    )
    caption = _other_sentences(rng, 1)[0]
    parts = [f"<p>{p}</p>" for p in paragraphs]
    parts.insert(middle, related)
    parts.insert(1, f'<figure><img src="/i.jpg"><figcaption>{caption}</figcaption></figure>')
    parts.insert(len(parts) - 1, newsletter)
    return (
        '<div class="cookie">We use cookies to improve your experience. '
        "<button>Accept</button></div>"
        f'<header><a href="/">The Monthly</a><nav><ul>{_links(rng, 8, "topic")}</ul></nav></header>'
        f"<article><h1>{title}</h1>{''.join(parts)}</article>"
        f'<section class="more"><h2>More stories</h2><ul>{_links(rng, 6, "story")}</ul></section>'
        "<footer><p>The Monthly. All rights reserved.</p></footer>"
    )


_TEMPLATES = {"table": _table, "blog": _blog, "docs": _docs, "magazine": _magazine}
