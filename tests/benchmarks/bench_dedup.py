"""De-duplication quality and cost, side by side: the rules before issue 38 (SHA-256 and
SimHash within 3 bits, a full ``dedup`` pass after the crawl) against today's (MinHash
resemblance too, marked by crawl every round), on the news web of ``testweb.news``.

For each, one crawl round over every page of the web (inject, generate, fetch,
updatedb and, today, the round's dedup), then the full ``dedup`` pass. Prints, by case
(exact copies, one sentence changed/added/removed, the same article under other sites'
chrome), the share of copy groups that keep exactly one page, the distinct pages marked
duplicate, and the seconds of the round's dedup (run inside updatedb's commit) against
the rest of updatedb's (metrics table).

Run: ``.venv/bin/python tests/benchmarks/bench_dedup.py [--hosts 50] [--articles 205]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from deltalake import DeltaTable  # noqa: E402

from jobs import crawl, dedup  # noqa: E402
from testweb.server import TestWeb, loopback_hosts  # noqa: E402

CODES = {
    "before": ["dedup.minhash.threshold=-1", "crawl.dedup=false"],
    "after": [],
}


def run(code: str, web: TestWeb, work: Path) -> dict:
    """Crawl the web once with ``code``'s settings, then the full pass; the figures."""
    corpus = web.site.news
    clusters = corpus.clusters()
    urls = corpus.all_urls()
    folder = work / code
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    seeds = folder / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in urls))
    settings = [
        "fetcher.server.delay=0",
        "fetcher.allow.private.networks=true",
        "http.agent.url=https://trawl.invalid/bench-dedup",
        "db.max.depth=0",
        "fetcher.soft404.probe=false",
        "fetcher.round.tail.defer=false",  # every page in the one round
        *CODES[code],
    ]
    conf = [part for item in settings for part in ("--conf", item)]
    data = folder / "data"
    assert crawl.main(["--seeds", str(seeds), "--rounds", "1", "--data", str(data), *conf]) == 0
    assert dedup.main(["--data", str(data), *conf]) == 0
    rows = DeltaTable(str(data / "crawldb")).to_pyarrow_table(
        columns=["url", "status", "duplicate_of"]
    )
    state = {r["url"]: (r["status"], r["duplicate_of"]) for r in rows.to_pylist()}
    figures = {"code": code}
    for case, groups in clusters.items():
        figures[case] = sum(_kept_one(group, state) for group in groups) / len(groups)
    copies = {u for g in clusters.values() for c in g for u in c[1:]}
    distinct = [u for u in corpus.distinct_urls() if u not in copies]
    figures["false"] = sum(state[u][0] == "duplicate" for u in distinct) / len(distinct)
    figures.update(_seconds(data))
    return figures


def _kept_one(group: list[str], state: dict) -> bool:
    kept = [u for u in group if state[u][0] != "duplicate"]
    return len(kept) == 1 and all(state[u][1] == kept[0] for u in group if u != kept[0])


def _seconds(data: Path) -> dict:
    """The round's updatedb and dedup seconds (metrics table; the full pass apart)."""
    rows = DeltaTable(str(data / "metrics")).to_pyarrow_table(columns=["job", "segment", "seconds"])
    found = {"updatedb_s": 0.0, "round_dedup_s": 0.0, "full_dedup_s": 0.0}
    for row in rows.to_pylist():
        if row["job"] == "updatedb":
            found["updatedb_s"] = row["seconds"]
        elif row["job"] == "dedup":
            found["round_dedup_s" if row["segment"] else "full_dedup_s"] = row["seconds"]
    # crawl's pass runs inside updatedb (its commit): updatedb's own time is the rest.
    found["updatedb_s"] -= found["round_dedup_s"]
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--articles", type=int, default=205)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-dedup-"))
    web = TestWeb(
        loopback_hosts(args.hosts, subnet=70),
        0,
        work / "requests.jsonl",
        crawl_delay=0.0,
        news_articles=args.articles,
    ).start()
    try:
        results = [run(code, web, work) for code in CODES]
    finally:
        web.stop()
    groups = {case: len(g) for case, g in web.site.news.clusters().items()}
    print(
        f"\n{args.hosts} hosts x {args.articles} articles; copy groups: "
        + ", ".join(f"{n} {case}" for case, n in groups.items())
    )
    print(
        "| code | exact | sentence | chrome | false duplicates | updatedb s | round dedup s "
        "| share | full pass s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        share = r["round_dedup_s"] / r["updatedb_s"] if r["updatedb_s"] else 0.0
        print(
            f"| {r['code']} | {r['exact']:.1%} | {r['sentence']:.1%} | {r['chrome']:.1%} | "
            f"{r['false']:.3%} | {r['updatedb_s']:.1f} | {r['round_dedup_s']:.1f} | "
            f"{share:.0%} | {r['full_dedup_s']:.1f} |"
        )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
