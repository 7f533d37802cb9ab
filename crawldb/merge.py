"""Per-URL merge rules of inject and updatedb, as plain functions over row dicts.

Rows have the columns of ``crawldb.schema.CRAWLDB`` with times in epoch milliseconds.
The rules (Nutch's CrawlDbReducer, split into named steps):

- ``new_row``: a URL entering the crawldb is unfetched and due now;
- ``merge_inject``: re-injecting a known URL keeps its history (``db.injector.update``
  lets the seed's score, interval and metadata win);
- ``merge_links``: a known URL reached again keeps its score; its depth is the least seen;
- ``apply_fetch``: the fetch outcome sets status, reason, retries and next fetch time,
  and keeps the canonical URL a page names on its own site (for ``dedup``); a
  duplicate fetched again with the same body stays a duplicate and waits
  ``db.fetch.interval.duplicate.factor`` times its interval;
- ``update_row``: all of the above for one URL of a segment; ``None`` when nothing changes.

``apply_fetch`` ignores a fetch from the segment that already updated the row, which makes
updatedb idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crawldb.schedule import (
    next_fetch_time,
    next_interval,
    retries_exhausted,
    retry_fetch_time,
)
from crawldb.schema import CRAWLDB
from lib import vocabulary as st
from lib.clock import http_date_ms
from lib.url.domains import same_site
from lib.url.normalize import host_of

Row = dict[str, Any]

_REDIRECT_STATUS = {st.MOVED: st.REDIR_PERM, st.TEMP_MOVED: st.REDIR_TEMP}
_FINAL_FAILURE = {st.NOT_FOUND, st.ROBOTS_DENIED}


def new_row(
    url: str,
    host: str,
    now_ms: int,
    *,
    score: float,
    depth: int,
    fetch_interval: int,
    fixed_interval: bool = False,
    metadata: Mapping[str, str] | None = None,
    dedup_key: str | None = None,
) -> Row:
    """A URL entering the crawldb: unfetched and due at ``now_ms``."""
    row = CRAWLDB.empty_row()
    row.update(
        url=url,
        dedup_key=dedup_key or url,
        host=host,
        status=st.UNFETCHED,
        fetch_time=now_ms,
        fetch_interval=fetch_interval,
        fixed_interval=fixed_interval,
        retries=0,
        fetch_count=0,
        change_count=0,
        revisit_count=0,
        score=score,
        depth=depth,
        discovered_time=now_ms,
        metadata=dict(metadata or {}),
    )
    return with_next_fetch_time(row)


def merge_inject(old: Row | None, injected: Row, update: bool) -> Row:
    """Merge a seed into the crawldb: history is never lost."""
    if old is None:
        return dict(injected)
    merged = dict(old)
    merged["depth"] = 0
    if update:
        merged["score"] = injected["score"]
        merged["fetch_interval"] = injected["fetch_interval"]
        merged["fixed_interval"] = injected["fixed_interval"]
        merged["metadata"] = {**(old.get("metadata") or {}), **injected["metadata"]}
    return with_next_fetch_time(merged)


def merge_links(old: Row | None, url: str, host: str, links: Row, now_ms: int, conf) -> Row:
    """A URL reached by links or listed in a sitemap this round (``links``: least
    ``depth``, summed ``score``, its ``dedup_key``; from sitemaps, the newest ``lastmod``
    in epoch ms and the shortest ``changefreq`` in seconds).

    A new URL with a changefreq starts with it as its interval; a known page whose
    lastmod is newer than its last fetch is due at once."""
    changefreq, lastmod = links.get("changefreq"), links.get("lastmod")
    if old is None:
        return new_row(
            url,
            host,
            now_ms,
            score=links["score"],
            depth=links["depth"],
            fetch_interval=changefreq or conf["db.fetch.interval.default"],
            dedup_key=links.get("dedup_key"),
        )
    merged = dict(old)
    if old["depth"] is None or links["depth"] < old["depth"]:
        merged["depth"] = links["depth"]
    last_fetch = old.get("last_fetch_time")
    if lastmod and last_fetch and lastmod > last_fetch and old["fetch_time"] > now_ms:
        merged["fetch_time"] = now_ms  # changed since we fetched it, says its sitemap
    return merged


def apply_fetch(row: Row, fetch: Row, segment: str, conf: Mapping[str, Any]) -> Row:
    """Apply one fetch result (joined with its parse result, if any) to a crawldb row."""
    outcome = fetch["fetch_status"]
    if row.get("segment") == segment:
        return row
    if outcome == st.SKIPPED:  # not asked: unchanged, but a deferred URL goes first next round
        deferred = fetch["reason"] == st.REASON_DEFERRED
        return {**row, "reason": st.REASON_DEFERRED} if deferred else row
    new = dict(row)
    fetched_at = fetch["fetched_at"]
    new.update(segment=segment, last_fetch_time=fetched_at, reason=fetch["reason"])
    if outcome != st.ROBOTS_DENIED:
        new["fetch_count"] = (row["fetch_count"] or 0) + 1
        new["http_status"] = fetch["http_status"]
    if outcome == st.RETRY:
        return _apply_retry(new, fetched_at, conf)
    new["retries"] = 0
    new["fetch_time"] = next_fetch_time(fetched_at, new["fetch_interval"])
    if outcome == st.SUCCESS:
        _apply_success(new, row, fetch)
        if row.get("content_hash") is not None:
            changed = fetch.get("content_hash") != row["content_hash"]
            _adapt_interval(new, row, changed=changed, conf=conf)
        if row["status"] == st.DUPLICATE and fetch.get("content_hash") == row["content_hash"]:
            # Still the same copy: it stays a duplicate and is fetched less often.
            factor = conf["db.fetch.interval.duplicate.factor"]
            new["status"] = st.DUPLICATE
            new["duplicate_of"] = row["duplicate_of"]
            new["fetch_time"] = next_fetch_time(fetched_at, int(new["fetch_interval"] * factor))
    elif outcome in _REDIRECT_STATUS:
        new.update(status=_REDIRECT_STATUS[outcome], redirect_to=fetch["redirect_to"])
    elif outcome == st.NOT_MODIFIED:
        new["status"] = st.NOTMODIFIED
        # A 304 may repeat or update the validators; without them the old ones stand.
        new["etag"] = fetch.get("etag") or row.get("etag")
        new["last_modified"] = fetch.get("last_modified") or row.get("last_modified")
        new["last_modified_time"] = http_date_ms(new["last_modified"])
        if row.get("content_hash") is not None:
            _adapt_interval(new, row, changed=False, conf=conf)
    elif outcome in _FINAL_FAILURE:
        new["status"] = st.GONE
    else:
        raise ValueError(f"unknown fetch outcome {outcome!r} for {fetch['url']}")
    return new


def _adapt_interval(new: Row, old: Row, *, changed: bool, conf: Mapping[str, Any]) -> None:
    """A re-fetch that compared content: count it, adapt the interval, set the next time."""
    new["revisit_count"] = (old.get("revisit_count") or 0) + 1
    new["change_count"] = (old.get("change_count") or 0) + int(changed)
    if not old.get("fixed_interval"):
        new["fetch_interval"] = next_interval(
            new["fetch_interval"], changed, new["change_count"], new["revisit_count"], conf
        )
    new["fetch_time"] = next_fetch_time(new["last_fetch_time"], new["fetch_interval"])


def _apply_retry(new: Row, fetched_at: int, conf: Mapping[str, Any]) -> Row:
    new["retries"] = (new["retries"] or 0) + 1
    if retries_exhausted(new["retries"], conf):
        new["status"] = st.GONE
        new["fetch_time"] = next_fetch_time(fetched_at, new["fetch_interval"])
    else:
        new["fetch_time"] = retry_fetch_time(fetched_at, conf)
    return new


def site_canonical(url: str, host: str, canonical: str | None) -> str | None:
    """The canonical URL a page names, when it is another URL of the page's site
    (registered domain); ``None`` otherwise. Cross-site canonicals are not trusted."""
    if not canonical or canonical == url:
        return None
    return canonical if same_site(host_of(canonical), host, "byDomain") else None


def _apply_success(new: Row, old: Row, fetch: Row) -> None:
    content_hash = fetch.get("content_hash")
    if content_hash != old.get("content_hash"):
        new["modified_time"] = fetch["fetched_at"]
    new.update(
        status=st.FETCHED,
        content_hash=content_hash,
        simhash=fetch.get("simhash"),
        minhash=fetch.get("minhash"),
        title=fetch.get("title"),
        etag=fetch["etag"],
        last_modified=fetch["last_modified"],
        last_modified_time=http_date_ms(fetch["last_modified"]),
        content_type=fetch["content_type"],
        redirect_to=None,
        duplicate_of=None,
        canonical=site_canonical(new["url"], new["host"], fetch.get("canonical")),
    )
    new.update(_capture(new, old, fetch))


def _capture(new: Row, old: Row, fetch: Row) -> Row:
    """The archived capture of the fetched payload: this fetch's record, unless it
    brought the payload already archived (the earlier record, which holds the body)."""
    digest = fetch.get("payload_digest")
    if digest is not None and digest == old.get("payload_digest") and old.get("warc_file"):
        return {}
    return {
        "capture_segment": new["segment"],  # set by apply_fetch: this fetch's segment
        "warc_file": fetch.get("warc_file"),
        "warc_offset": fetch.get("warc_offset"),
        "capture_record_id": fetch.get("warc_record_id"),
        "capture_time": fetch["fetched_at"] if fetch.get("warc_file") else None,
        "payload_digest": digest,
    }


def update_row(
    url: str,
    host: str,
    old: Row | None,
    fetch: Row | None,
    links: Row | None,
    *,
    segment: str,
    now_ms: int,
    conf: Mapping[str, Any],
    dedup_key: str | None = None,
) -> Row | None:
    """The new crawldb row of one URL touched by a segment, or ``None`` if unchanged."""
    if links is None and fetch is not None:
        # A URL fetched without being in the crawldb was reached by following a redirect.
        links = {"depth": fetch["depth"], "score": fetch["score"], "dedup_key": dedup_key}
    row = old
    if links is not None:
        row = merge_links(old, url, host, links, now_ms, conf)
    if row is None:
        return None
    if fetch is not None:
        # Its fetch list is applied: generate may take it again (generate.update.crawldb).
        row = {**apply_fetch(row, fetch, segment, conf), "generate_time": None}
    row = with_next_fetch_time(row)
    return None if row == old else row


def touched_row(conf: dict, segment: str, stamp: int, normalizer, touched: dict) -> dict | None:
    """``update_row`` of one URL a segment touched (``touched``: its url, and its
    ``old`` crawldb row, ``fetch`` and ``links``, each a dict or None, as updatedb
    joins them): its new crawldb row, or None when unchanged."""
    url, old, fetch, links = touched["url"], touched["old"], touched["fetch"], touched["links"]
    if old is not None and old["metadata"] is not None:
        old["metadata"] = dict(old["metadata"])  # Arrow gives a MAP as key-value pairs
    # Each side carries the URL's host (host_of, when it was written): not parsed again.
    host = (old or links or fetch)["host"]
    # update_row needs a dedup key only for a URL fetched but neither known nor linked.
    unlinked = old is None and links is None
    return update_row(
        url,
        host,
        old,
        fetch,
        links,
        segment=segment,
        now_ms=stamp,
        conf=conf,
        dedup_key=normalizer.dedup(url) if unlinked else None,
    )


def changed_batch(conf: dict, segment: str, stamp: int, normalizer, touched: list[dict], schema):
    """``touched_row`` of each URL of ``touched``: the changed rows as one Arrow record
    batch of ``schema`` (the crawldb's, times in epoch ms), or None when none changed."""
    import pyarrow as pa

    rows = [
        row
        for one in touched
        if (row := touched_row(conf, segment, stamp, normalizer, one)) is not None
    ]
    return pa.RecordBatch.from_pylist(rows, schema=schema) if rows else None


def new_link_rows(links, now_ms: int, conf, schema):
    """``update_row`` of URLs reached by links only, new to the crawldb and not fetched
    (most of a round's touched URLs), by columns: ``links`` an Arrow table of their
    folded links (url, host, depth, score, dedup_key, changefreq), the rows an Arrow
    table of ``schema``. Every column but the links' own is the one ``new_row`` gives
    every URL entering at ``now_ms``, taken from one row it makes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = links.num_rows
    made = new_row("", "", now_ms, score=0.0, depth=0, fetch_interval=0)
    default = conf["db.fetch.interval.default"]
    given = {
        "url": links.column("url"),
        "host": links.column("host"),
        "score": links.column("score"),
        "depth": links.column("depth"),
        "fetch_interval": pc.coalesce(
            links.column("changefreq").cast(pa.int64()), pa.scalar(default, pa.int64())
        ),
        "dedup_key": pc.coalesce(links.column("dedup_key"), links.column("url")),
    }
    columns = [
        given[field.name].cast(field.type)
        if field.name in given
        else pa.array([made[field.name]] * count, field.type)
        for field in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def changed_of_touched(conf: dict, segment: str, stamp: int, normalizer, touched, schema):
    """``touched_row`` of each URL of the Arrow table ``touched`` (url, and ``old``,
    ``fetch`` and ``links`` structs, null when absent): the changed rows as an Arrow
    table of ``schema``. The URLs new and only linked to are made by columns
    (``new_link_rows``), the others one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fresh = pc.and_(pc.is_null(touched.column("old")), pc.is_null(touched.column("fetch")))
    linked = touched.filter(fresh).column("links").combine_chunks()
    parts = [new_link_rows(pa.Table.from_struct_array(linked), stamp, conf, schema)]
    rest = touched.filter(pc.invert(fresh)).to_pylist()
    changed = changed_batch(conf, segment, stamp, normalizer, rest, schema)
    if changed is not None:
        parts.append(pa.Table.from_batches([changed]))
    return pa.concat_tables(parts)


def with_next_fetch_time(row: Row) -> Row:
    """The row with ``next_fetch_time``, the name that says what ``fetch_time`` is (the
    next due time, Nutch's meaning), set to it."""
    if row.get("next_fetch_time") != row["fetch_time"]:
        row = {**row, "next_fetch_time": row["fetch_time"]}
    return row
