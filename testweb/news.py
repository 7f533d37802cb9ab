"""A news web of realistic text, for de-duplication: articles made of sentences drawn
from a shared pool (so that distinct pages share phrases, as real pages do), each host
with its own site chrome, and near and exact copies whose right answer is known.

Host ``h`` serves ``/news/<k>`` (k = 1 .. ``articles``): article ``(h, k)`` in host h's
chrome (header, navigation, a related-links box, footer): even hosts in HTML5 sectioning
elements (``<main><article>``, ``<nav>``, ``<aside>`` ...), odd hosts in plain ``<div>``s,
as older templates have it. Its copies:

- exact copies: ``/news/<k>?ref=feed`` and ``/news/<k>/index.html`` are the same bytes;
- near copies, case ``sentence`` (articles with ``k % SENTENCE_EVERY == 0``):
  ``/news/<k>/changed``, ``/added`` and ``/removed`` are the article with one sentence
  replaced, one added, one removed;
- near copies, case ``chrome`` (``k % CHROME_EVERY == 1``): ``/syndicated/<g>/<k>`` on
  the next two hosts is host g's article k under their own chrome (another header,
  navigation, related box and footer).

Everything is a pure function of the host index and the path: ``NewsWeb.clusters()``
lists every copy group with the URLs that should be marked duplicate of one kept copy.
"""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass

SENTENCE_EVERY = 40  # one article in 40 has sentence-edited copies
CHROME_EVERY = 40  # one in 40 (another residue) is syndicated on two other hosts
COMMON_SHARE = 0.15  # share of an article's sentences from the pool every site uses
_POOL = 60_000  # distinct sentences articles draw from
_COMMON = 600  # sentences every site uses ("did not respond to a request for comment")
_VOCABULARY_SIZE = 6_000


def _zipf_words(rng: random.Random, size: int) -> list[str]:
    """Pseudo-words of two to four syllables; the earlier ones are drawn more often."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    return ["".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(size)]


@functools.cache
def _sentences() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The shared pool and the common sentences, made once."""
    rng = random.Random(7)
    words = _zipf_words(rng, _VOCABULARY_SIZE)
    # Cumulative weights, summed once: rng.choices would sum plain ones every call.
    cumulative = list(itertools.accumulate(1.0 / (rank + 10) for rank in range(len(words))))

    def sentence() -> str:
        chosen = rng.choices(words, cum_weights=cumulative, k=rng.randint(8, 22))
        return " ".join(chosen).capitalize() + "."

    return tuple(sentence() for _ in range(_POOL)), tuple(sentence() for _ in range(_COMMON))


@dataclass(frozen=True)
class Article:
    """An article's title and sentences."""

    title: str
    sentences: tuple[str, ...]


@functools.lru_cache(maxsize=100_000)
def _article(host: int, number: int) -> Article:
    """Article ``number`` of host ``host`` (cached: a page names five others)."""
    pool, common = _sentences()
    rng = random.Random(host * 1_000_003 + number)
    count = rng.randint(35, 60)
    chosen = [
        rng.choice(common) if rng.random() < COMMON_SHARE else rng.choice(pool)
        for _ in range(count)
    ]
    title = " ".join(rng.choice(pool).split()[:6]).rstrip(".")
    return Article(title, tuple(chosen))


class NewsWeb:
    """The news pages of ``hosts`` hosts (``bases``: their ``http://host:port``)."""

    def __init__(self, bases: tuple[str, ...], articles: int):
        self.bases = bases
        self.articles = articles

    def article(self, host: int, number: int) -> Article:
        """Article ``number`` of host ``host``: 35 to 60 sentences."""
        return _article(host, number)

    def page(self, host: int, route: str) -> bytes | None:
        """The body of ``route`` (query left out) on host ``host``; None if not a page."""
        parts = route.strip("/").split("/")
        if parts[0] == "news" and len(parts) >= 2 and parts[1].isdigit():
            number = int(parts[1])
            if not 1 <= number <= self.articles:
                return None
            article = self.article(host, number)
            variant = parts[2] if len(parts) > 2 else ""
            if variant in ("changed", "added", "removed") and number % SENTENCE_EVERY == 0:
                article = _edited(article, variant, host, number)
            elif variant not in ("", "index.html"):
                return None
            return self._html(host, article, number)
        if parts[0] == "syndicated" and len(parts) == 3 and parts[1].isdigit():
            origin, number = int(parts[1]), int(parts[2]) if parts[2].isdigit() else 0
            if number % CHROME_EVERY == 1 and host in self.syndicators(origin):
                return self._html(host, self.article(origin, number), number)
        return None

    def syndicators(self, origin: int) -> tuple[int, int]:
        """The two hosts that republish host ``origin``'s syndicated articles."""
        count = len(self.bases)
        return (origin + 1) % count, (origin + 2) % count

    def distinct_urls(self) -> list[str]:
        """Every article's own URL: pages no other is a copy of, but those of clusters."""
        return [f"{base}/news/{k}" for base in self.bases for k in range(1, self.articles + 1)]

    def all_urls(self) -> list[str]:
        """Every page of the news web once: the articles, then their copies."""
        copies = [url for group in self.clusters().values() for c in group for url in c]
        return list(dict.fromkeys(self.distinct_urls() + copies))

    def clusters(self) -> dict[str, list[list[str]]]:
        """Copy groups by case (``exact``, ``sentence``, ``chrome``): each a list of
        URLs of which exactly one should be kept, the others marked duplicate."""
        found: dict[str, list[list[str]]] = {"exact": [], "sentence": [], "chrome": []}
        for host, base in enumerate(self.bases):
            for k in range(1, self.articles + 1):
                own = f"{base}/news/{k}"
                if k % 15 == 7:
                    found["exact"].append([own, f"{own}?ref=feed", f"{own}/index.html"])
                if k % SENTENCE_EVERY == 0:
                    edits = [f"{own}/{edit}" for edit in ("changed", "added", "removed")]
                    found["sentence"].append([own, *edits])
                if k % CHROME_EVERY == 1:
                    copies = [
                        f"{self.bases[g]}/syndicated/{host}/{k}" for g in self.syndicators(host)
                    ]
                    found["chrome"].append([own, *copies])
        return found

    def _html(self, host: int, article: Article, number: int) -> bytes:
        """The article in host ``host``'s chrome."""
        rng = random.Random(host)
        site = f"The {article_word(rng)} {article_word(rng)} Herald"
        _, common = _sentences()
        nav = "".join(
            f'<li><a href="/section/{i}">{article_word(rng).capitalize()}</a></li>'
            for i in range(9)
        )
        related = "".join(
            f'<li><a href="/news/{(number + i) % self.articles + 1}">'
            f"{self.article(host, (number + i) % self.articles + 1).title}</a></li>"
            for i in range(1, 6)
        )
        footer = " ".join(random.Random(host * 7 + 1).choices(common, k=3))
        paragraphs = "".join(
            f"<p>{' '.join(article.sentences[i : i + 4])}</p>"
            for i in range(0, len(article.sentences), 4)
        )
        story = f"<h1>{article.title}</h1>{paragraphs}"
        story = (
            f"<main><article>{story}</article></main>"
            if host % 2 == 0
            else f'<div class="story">{story}</div>'
        )
        tagline = common[host % len(common)]
        if host % 2 == 0:  # chrome in HTML5 sectioning elements
            chrome = (
                f'<header><a href="/">{site}</a> <span>{tagline}</span></header>'
                f"<nav><ul>{nav}</ul></nav>{story}"
                f'<aside class="related"><h2>Read next</h2><ul>{related}</ul></aside>'
                f"<footer><p>{footer}</p><p>Copyright {site}. All rights reserved.</p></footer>"
            )
        else:  # chrome in plain divs, as older templates have it
            chrome = (
                f'<div id="top"><a href="/">{site}</a> <span>{tagline}</span></div>'
                f'<div class="menu"><ul>{nav}</ul></div>{story}'
                f'<div class="sidebar"><h2>Read next</h2><ul>{related}</ul></div>'
                f'<div id="bottom"><p>{footer}</p><p>Copyright {site}. All rights reserved.</p>'
                "</div>"
            )
        return (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{article.title} - {site}</title></head><body>{chrome}</body></html>\n"
        ).encode()


def article_word(rng: random.Random) -> str:
    """A word of the site's name or navigation."""
    return rng.choice(["daily", "evening", "river", "north", "city", "valley", "coast", "metro"])


def _edited(article: Article, edit: str, host: int, number: int) -> Article:
    """The article with one sentence changed, added or removed (near the middle)."""
    pool, _ = _sentences()
    other = random.Random(host * 31 + number).choice(pool)
    sentences = list(article.sentences)
    middle = len(sentences) // 2
    if edit == "changed":
        sentences[middle] = other
    elif edit == "added":
        sentences.insert(middle, other)
    else:
        del sentences[middle]
    return Article(article.title, tuple(sentences))
