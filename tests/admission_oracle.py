"""The oracle of tests/test_admission.py: updatedb's admission (crawldb.admission's
docstring) written link by link over dicts, an ascending null first and a descending
null last."""

from __future__ import annotations

from collections import Counter, defaultdict

from lib.url.traps import url_pattern


def ascending(value) -> tuple:
    """A sort key of ``value`` ascending, a null first (Spark's ``ASC NULLS FIRST``)."""
    return (value is not None, value if value is not None else 0)


def descending(value) -> tuple:
    """A sort key of a number descending, a null last (Spark's ``DESC NULLS LAST``)."""
    return (value is None, -value if value is not None else 0)


def admit(links: list[dict], crawldb: list[dict], conf: dict) -> list[dict]:
    """``links`` (url, dedup_key, host, depth, score, redirect) each with its ``reason``:
    None to keep it, else why it is refused. ``crawldb``: its rows' url, dedup_key and
    host."""
    known_urls = {row["url"] for row in crawldb}
    known = [{**link, "reason": None} for link in links if link["url"] in known_urls]
    new = [{**link} for link in links if link["url"] not in known_urls]
    tag_variants(new, {row["dedup_key"] for row in crawldb} - {None}, conf["db.max.depth"])
    hosts = Counter(row["host"] for row in crawldb)
    cap(new, hosts, lambda link: link["host"], conf["db.max.urls.per.host"], "host_cap")
    # Patterns are counted (a regex a URL) only on the hosts with more URLs, known and
    # still open, than a pattern may have: on the others no pattern can reach its cap.
    limit = conf["db.max.urls.per.pattern"]
    still_open = Counter(link["host"] for link in new if link["reason"] is None)
    hosts_open = {host for host, count in still_open.items() if 0 <= limit < count + hosts[host]}
    patterns = Counter(
        (row["host"], url_pattern(row["url"])) for row in crawldb if row["host"] in hosts_open
    )
    by_pattern = lambda link: (link["host"], url_pattern(link["url"]))  # noqa: E731
    crowded = [link for link in new if link["host"] in hosts_open]
    cap(crowded, patterns, by_pattern, limit, "pattern_cap")
    return known + new


def variant_order(link: dict) -> tuple:
    """The best of a dedup key's new links first: a redirect target, the shallowest,
    the least URL."""
    return (descending(link["redirect"]), ascending(link["depth"]), link["url"])


def tag_variants(new: list[dict], taken: set, max_depth: int) -> None:
    """Set ``reason`` of each new link: ``depth`` beyond ``max_depth``, else
    ``duplicate_variant`` when its dedup key is ``taken`` by the crawldb or by a better
    new link (a redirect target first, then the shallowest, then the least URL)."""
    ranked = defaultdict(list)
    for link in new:
        ranked[link["dedup_key"]].append(link)
    first = {key: min(group, key=variant_order)["url"] for key, group in ranked.items()}
    for link in new:
        deep = max_depth >= 0 and link["depth"] is not None and link["depth"] > max_depth
        taken_by = link["dedup_key"] in taken or first[link["dedup_key"]] != link["url"]
        if deep:
            link["reason"] = "depth"
        elif link["redirect"] is not None and not link["redirect"] and taken_by:
            link["reason"] = "duplicate_variant"
        else:
            link["reason"] = None


def cap(new: list[dict], existing: Counter, group_of, limit: int, reason: str) -> None:
    """Refuse with ``reason`` the open links beyond ``limit`` URLs per group, counting
    the crawldb's URLs of the group (``existing``) first; the shallowest, then the best
    scored, then the least URL, are admitted first."""
    if limit < 0:
        return
    groups = defaultdict(list)
    for link in new:
        if link["reason"] is None:
            groups[group_of(link)].append(link)
    for group, members in groups.items():
        if len(members) + existing[group] <= limit:
            continue  # room for all of them
        members.sort(
            key=lambda link: (ascending(link["depth"]), descending(link["score"]), link["url"])
        )
        for place, link in enumerate(members, start=1):
            if place + existing[group] > limit:
                link["reason"] = reason
