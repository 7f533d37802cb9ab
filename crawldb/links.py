"""The links a parsed page gives the crawldb: its kept outlink targets with the score
share each gets, and the dates its links' metadata carry (a feed entry's). Plain Python,
for updatedb's Spark tasks (``jobs.updatedb``) and for updatedb in the driver
(``engine.driver_links``).
"""

from __future__ import annotations

from crawldb.merge import site_canonical
from lib.content.feeds import entry_updated_ms
from lib.scoring import outlink_shares
from lib.url.domains import same_site
from lib.url.normalize import host_of


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
