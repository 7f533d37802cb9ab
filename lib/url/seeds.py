"""Seed files: one URL per line, ``#`` comments, optional tab-separated ``key=value`` metadata.

Known metadata keys (Nutch's ``nutch.``-prefixed spellings are accepted too):

- ``score=FLOAT``: the injected score instead of ``db.score.injected``;
- ``fetchInterval=SECONDS``: the page's fetch interval instead of ``db.fetch.interval.default``;
- ``fixedInterval=true``: keep that interval fixed (no adaptive scheduling).

Other keys are kept as the URL's metadata. A malformed line is reported with its line
number and skipped; it never stops the rest of the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from lib.url.filter import UrlFilter, clean

_ALIASES = {
    "nutch.score": "score",
    "nutch.fetchInterval": "fetchInterval",
    "nutch.fetchInterval.fixed": "fixedInterval",
}


@dataclass(frozen=True)
class Seed:
    """One accepted seed line."""

    url: str
    line: int
    score: float | None = None
    fetch_interval: int | None = None
    fixed_interval: bool = False
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SeedError:
    """One rejected seed line, with the reason a user can act on."""

    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}: {self.text!r}"


def read_seeds(lines: Iterable[str], url_filter: UrlFilter) -> Iterator[Seed | SeedError]:
    """Parse seed lines; yields a ``Seed`` or a ``SeedError`` for every non-blank line."""
    for number, raw in enumerate(lines, start=1):
        parsed = parse_seed_line(number, raw, url_filter)
        if parsed is not None:
            yield parsed


def parse_seed_line(number: int, text: str, url_filter: UrlFilter) -> Seed | SeedError | None:
    """One line of a seed file; ``None`` for a blank or comment line."""
    text = text.rstrip("\r\n")
    if not text.strip() or text.lstrip().startswith("#"):
        return None
    url_text, *fields = text.strip().split("\t")
    if not url_text or " " in url_text.strip():
        return SeedError(number, text, "expected one URL, then tab-separated key=value fields")
    key, reason = clean(url_text.strip(), url_filter)
    if key is None:
        return SeedError(number, text, f"URL rejected ({reason})")
    try:
        metadata = _parse_fields(fields)
        score = float(metadata.pop("score")) if "score" in metadata else None
        interval = int(metadata.pop("fetchInterval")) if "fetchInterval" in metadata else None
        fixed = metadata.pop("fixedInterval", "false").lower() == "true"
    except ValueError as exc:
        return SeedError(number, text, str(exc))
    if interval is not None and interval <= 0:
        return SeedError(number, text, "fetchInterval must be a positive number of seconds")
    return Seed(key, number, score, interval, fixed, metadata)


def _parse_fields(fields: list[str]) -> dict[str, str]:
    metadata: dict[str, str] = {}
    for item in fields:
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"metadata field {item!r} is not key=value")
        name = _ALIASES.get(name.strip(), name.strip())
        metadata[name] = value.strip()
    return metadata
