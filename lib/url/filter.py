"""URL scope filters: what Trawl crawls at all (data flow steps 1 and 5).

``UrlFilter.reject(key)`` names the first rule a normalized URL breaks, or ``None``:

- ``scheme``: not in ``urlfilter.schemes``;
- ``too_long``: longer than ``urlfilter.max.length``;
- ``suffix``: a binary type not worth fetching (``urlfilter.suffix``);
- ``host_denied``: not in ``urlfilter.hosts.allow`` (when set) or in ``urlfilter.hosts.deny``;
  an entry ``example.com`` covers the host and its subdomains;
- ``opted_out``: in ``db.optout.hosts`` (updatedb also removes such hosts' URLs);
- ``regex``: refused by the Nutch-style regex file (``urlfilter.regex.file``: ``+``/``-``
  lines, first match wins, no match refuses);
- ``query_params``: more than ``urlfilter.max.query.params`` query parameters;
- ``repeated_segments``: a path segment more than ``urlfilter.max.segment.repeats`` times
  (``/a/b/a/b/a/b/``: a spider trap).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ada_url import URL

from lib import plugins
from lib.url.normalize import UrlNormalizer, normalize_resolved, plain_parts


class RegexRules:
    """A Nutch regex-urlfilter file: ``+regex`` accepts, ``-regex`` refuses, first match wins."""

    def __init__(self, rules: list[tuple[bool, re.Pattern]]):
        self.rules = rules

    @classmethod
    def parse(cls, text: str, source: str = "<rules>") -> RegexRules:
        """Rules from the file's text; a bad line is an error naming its number."""
        rules = []
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line[0] not in "+-":
                raise ValueError(f"{source}:{number}: a rule starts with + or -: {line!r}")
            try:
                rules.append((line[0] == "+", re.compile(line[1:])))
            except re.error as exc:
                raise ValueError(f"{source}:{number}: bad regular expression: {exc}") from exc
        return cls(rules)

    def accepts(self, url: str) -> bool:
        """The verdict of the first rule whose pattern is found in the URL."""
        for accept, pattern in self.rules:
            if pattern.search(url):
                return accept
        return False


def load_regex_rules(conf: Mapping[str, Any]) -> RegexRules | None:
    """The rules of the file named by ``urlfilter.regex.file``: its content shipped in
    the settings (on an executor), else the file itself (relative to the conf folder)."""
    from lib.config import REGEX_RULES_TEXT, conf_file_text

    if REGEX_RULES_TEXT in conf:
        shipped = conf[REGEX_RULES_TEXT]
    else:
        shipped = conf_file_text(conf["urlfilter.regex.file"])
    if shipped is None:
        return None
    path, text = shipped
    return RegexRules.parse(text, path)


def _host_matches(host: str, entries: frozenset[str]) -> bool:
    labels = host.split(".")
    return any(".".join(labels[i:]) in entries for i in range(len(labels)))


class UrlFilter:
    """Scope rules over normalized URLs; holds the normalizer that makes them."""

    def __init__(self, conf: Mapping[str, Any]):
        self.normalizer = UrlNormalizer(conf)
        self.schemes = frozenset(s.lower() for s in conf["urlfilter.schemes"])
        self.max_length = conf["urlfilter.max.length"]
        self.suffixes = tuple(s.lower() for s in conf["urlfilter.suffix"])
        self.allow = frozenset(h.lower() for h in conf["urlfilter.hosts.allow"])
        self.deny = frozenset(h.lower() for h in conf["urlfilter.hosts.deny"])
        self.opted_out = frozenset(h.lower() for h in conf["db.optout.hosts"])
        self.regex = load_regex_rules(conf)
        self.max_params = conf["urlfilter.max.query.params"]
        self.max_repeats = conf["urlfilter.max.segment.repeats"]
        self.plugins = plugins.instances("urlfilter.plugins", conf)

    def reject(self, url: str) -> str | None:
        """Why the normalized URL is out of scope, or ``None`` when it is kept."""
        parts = plain_parts(url)
        if parts is not None:  # most keys: read as the parser would, without parsing
            (scheme, host, path), search = parts, ""
        else:
            parsed = URL(url)
            scheme, host = parsed.protocol.rstrip(":"), parsed.hostname
            path, search = parsed.pathname, parsed.search
        if scheme not in self.schemes:
            return "scheme"
        if len(url) > self.max_length:
            return "too_long"
        if path.lower().endswith(self.suffixes):
            return "suffix"
        if self._host_refused(host):
            return "host_denied"
        if self.opted_out and _host_matches(host, self.opted_out):
            return "opted_out"
        if self.regex is not None and not self.regex.accepts(url):
            return "regex"
        reason = self._trap(path, search)
        for plugin in self.plugins if reason is None else ():
            reason = plugin.filter(url)  # a plugin's reason is counted as given
            if reason:
                return str(reason)
        return reason

    def _host_refused(self, host: str) -> bool:
        if self.allow and not _host_matches(host, self.allow):
            return True
        return bool(self.deny) and _host_matches(host, self.deny)

    def _trap(self, path: str, search: str) -> str | None:
        if self.max_params >= 0 and search and search.count("&") + 1 > self.max_params:
            return "query_params"
        segments = [s for s in path.split("/") if s]
        if self.max_repeats >= 0 and segments:
            if max(segments.count(s) for s in set(segments)) > self.max_repeats:
                return "repeated_segments"
        return None


def clean(url: str, url_filter: UrlFilter, resolved: bool = False) -> tuple[str | None, str | None]:
    """Normalize then filter an absolute URL: ``(key, None)`` or ``(None, reason)``.
    ``resolved``: the URL is ``lib.url.normalize.resolve``'s output (normalized faster)."""
    normalizer = url_filter.normalizer
    key = normalize_resolved(url, normalizer.strip) if resolved else normalizer.key(url)
    if key is None:
        return None, "invalid"
    reason = url_filter.reject(key)
    return (None, reason) if reason else (key, None)
