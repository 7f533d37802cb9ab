"""Spider-trap defences over URLs that are not on the crawldb yet (data flow step 5).

A URL *pattern* is the URL with what varies in generated URL spaces abstracted:
query values, long hexadecimal ids, and digit runs (so dates and page numbers). A
calendar ``/cal?y=2031&m=4`` and ``/cal?y=1802&m=11`` share one pattern, and
``db.max.urls.per.pattern`` caps how many URLs of one pattern a host may have.

The rules are regular expressions, applied by Python's ``re`` to one URL
(``url_pattern``: in-round link following) and by Arrow's RE2 to a column of them
(``url_patterns``: updatedb's admission, a million links a round); the rules use only
what the two engines read alike (classes, greedy quantifiers, leftmost matches).
"""

from __future__ import annotations

import re

# (regex, replacement), applied in order.
PATTERN_RULES: tuple[tuple[str, str], ...] = (
    (r"=[^&#]*", "="),  # query values
    (r"[0-9a-fA-F]{8,}", "{id}"),  # hashes, uuids without dashes, hex ids
    (r"[0-9]+", "{n}"),  # numbers, dates, page counters
)


_COMPILED_RULES = tuple((re.compile(regex), replacement) for regex, replacement in PATTERN_RULES)


def url_pattern(url: str) -> str:
    """The pattern of a URL (see the module docstring)."""
    for regex, replacement in _COMPILED_RULES:
        url = regex.sub(replacement, url)
    return url


def url_patterns(urls):
    """The patterns of an Arrow array of URLs (``url_pattern``'s, computed by column)."""
    import pyarrow.compute as pc

    for regex, replacement in PATTERN_RULES:
        urls = pc.replace_substring_regex(urls, pattern=regex, replacement=replacement)
    return urls
