"""The links a parsed page gives the crawldb: its kept outlink targets with the score
share each gets, and the dates its links' metadata carry (a feed entry's). Plain Python,
for updatedb's Spark tasks (``jobs.updatedb``) and for updatedb in the driver
(``engine.executors.driver_links``).
"""

from __future__ import annotations

from crawldb.merge import site_canonical
from lib import vocabulary as st
from lib.content.feeds import entry_updated_ms
from lib.scoring import outlink_shares
from lib.url.domains import same_site
from lib.url.normalize import host_of
from lib.vocabulary import ORIGIN_PROBE


def page_links(conf: dict, page: dict) -> tuple[list[str], list[float]]:
    """The kept outlink targets of a parsed page (``targets``: its outlinks' URLs) and
    the score share each one gets."""
    targets = list(page["targets"] or [])
    canonical = site_canonical(page["url"], page["host"], page["canonical"])
    if conf["dedup.canonical"] and canonical and canonical not in targets:
        targets.append(canonical)  # the page is a duplicate of it: crawl it
    if conf["db.ignore.external.links"]:
        mode = conf["db.ignore.external.links.mode"]
        targets = [url for url in targets if same_site(host_of(url), page["host"], mode)]
    shares = outlink_shares(page["score"], page["host"], [host_of(u) for u in targets], conf)
    return targets, shares


def entry_dates(page: dict) -> dict[str, int]:
    """Target -> the date its link's metadata carries (a feed entry's), in epoch ms."""
    pairs = zip(page["targets"] or (), page["link_metadata"] or (), strict=False)
    dated = {url: entry_updated_ms(dict(known or ())) for url, known in pairs}
    return {url: ms for url, ms in dated.items() if ms is not None}


# What a round's links to one URL fold to (each ignoring nulls): the least depth, the
# summed score, whether a redirect led to it, a sitemap's newest lastmod and shortest
# changefreq.
FOLDS = (
    ("depth", "min"),
    ("score", "sum"),
    ("redirect", "max"),
    ("lastmod", "max"),
    ("changefreq", "min"),
)


def fold(links):
    """The links (an Arrow table: url, depth, score, redirect, lastmod, changefreq), one
    row per target URL, folded by ``FOLDS``; folding parts and then their folds gives
    the fold of the whole."""
    import pyarrow.compute as pc

    links = links.filter(pc.is_valid(links.column("url")))
    folded = links.group_by("url", use_threads=False).aggregate(list(FOLDS))
    names = {f"{name}_{how}": name for name, how in FOLDS}
    folded = folded.rename_columns([names.get(name, name) for name in folded.column_names])
    return folded.select(["url", *(name for name, _ in FOLDS)]).cast(links.schema)


def keyed(links, normalizer, known=None):
    """The folded links with their ``dedup_key`` and ``host`` after ``url``; null for
    the URLs in ``known`` (an Arrow array of the crawldb's: their row has its own)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    urls = links.column("url").to_pylist()
    fresh = [True] * len(urls)
    if known is not None:
        fresh = pc.invert(pc.is_in(links.column("url"), value_set=known)).to_pylist()
    keys = [normalizer.dedup(url) if new else None for url, new in zip(urls, fresh, strict=True)]
    hosts = [host_of(url) if new else None for url, new in zip(urls, fresh, strict=True)]
    links = links.add_column(1, "dedup_key", pa.array(keys, pa.string()))
    return links.add_column(2, "host", pa.array(hosts, pa.string()))


def link_schema():
    """The Arrow schema of a round's links before they are folded."""
    import pyarrow as pa

    return pa.schema(
        [
            ("url", pa.string()),
            ("depth", pa.int32()),
            ("score", pa.float64()),
            ("redirect", pa.bool_()),
            ("lastmod", pa.int64()),
            ("changefreq", pa.int32()),
        ]
    )


def followed(page: dict) -> bool:
    """Whether a parsed page's links are followed: fetched as a page (not a soft-404
    probe), and not one of the crawldb's duplicates, whose links were followed from the
    copy kept (``origin``: its fetch row's, ``old_status``: its crawldb row's)."""
    return page["origin"] != ORIGIN_PROBE and page["old_status"] != st.DUPLICATE


def outlinks(conf: dict, pages: list[dict]):
    """The links of parsed pages, each joined with a fetch row of its URL (url, targets,
    link_metadata, canonical, host, depth, score, origin, old_status): of the pages
    ``followed``, one row per kept outlink (``page_links``), a depth below the page's;
    a feed entry's date is the link's ``lastmod``, as a sitemap's is."""
    import pyarrow as pa

    urls, depths, scores, lastmods = [], [], [], []
    for page in filter(followed, pages):
        targets, shares = page_links(conf, page)
        dated = entry_dates(page)
        urls += targets
        scores += shares
        depths += [page["depth"] + 1] * len(targets)
        lastmods += [dated.get(url) for url in targets]
    count = len(urls)
    columns = [
        pa.array(urls, pa.string()),
        pa.array(depths, pa.int32()),
        pa.array(scores, pa.float64()),
        pa.array([False] * count, pa.bool_()),
        pa.array(lastmods, pa.int64()),
        pa.nulls(count, pa.int32()),
    ]
    return pa.Table.from_arrays(columns, schema=link_schema())


def redirect_links(fetched):
    """The links of a fetch table's redirects (url, redirect_to, depth, score): to each
    target, at the redirect's depth and score (0 when it has none)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    hops = fetched.filter(pc.is_valid(fetched.column("redirect_to")))
    count = hops.num_rows
    columns = [
        hops.column("redirect_to"),
        hops.column("depth"),
        pc.fill_null(hops.column("score"), 0.0),
        pa.array([True] * count, pa.bool_()),
        pa.nulls(count, pa.int64()),
        pa.nulls(count, pa.int32()),
    ]
    return pa.Table.from_arrays(columns, schema=link_schema())


def sitemap_links(entries, conf: dict):
    """The links of sitemap entries (url, lastmod in epoch ms, changefreq, priority): a
    link from the host's home page (depth 1), scored like a seed times its priority (0.5
    when the sitemap gives none, the protocol's default)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = entries.num_rows
    priority = pc.fill_null(entries.column("priority").cast(pa.float64()), 0.5)
    columns = [
        entries.column("url"),
        pa.array([1] * count, pa.int32()),
        pc.multiply(priority, float(conf["db.score.injected"])),
        pa.array([False] * count, pa.bool_()),
        entries.column("lastmod"),
        entries.column("changefreq"),
    ]
    return pa.Table.from_arrays(columns, schema=link_schema())
