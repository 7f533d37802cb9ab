"""Crawls run as a user runs them: ``./submit.sh crawl`` in its own process, with the
test web's settings, each with a User-Agent of its own so that its requests can be told
apart in the request log."""

import subprocess
from pathlib import Path

from conftest import web_conf_args

ROOT = Path(__file__).resolve().parent.parent
AGENT = "https://trawl.invalid/test-run-{}".format


def web_crawl_args(data: Path | str, agent_url: str, *settings: str) -> list[str]:
    """``--data`` and the ``--conf`` settings of a crawl of the test web: its delay, its
    loopback addresses allowed, a User-Agent URL of its own, then ``settings``."""
    return ["--data", str(data), *web_conf_args(agent_url, *settings)]


def crawl_args(web, data: Path | str, name: str, rounds: int) -> list[str]:
    """``./submit.sh crawl`` of the failure and cluster tests, depth 1."""
    command = [str(ROOT / "submit.sh"), "crawl", "--rounds", str(rounds)]
    return command + web_crawl_args(data, AGENT(name), "db.max.depth=1")


def seeds_file(web, folder: Path) -> Path:
    seeds = folder / "seeds.txt"
    seeds.write_text(f"{web.seeds[0]}\n{web.seeds[3]}\n")
    return seeds


def run_to_end(args: list[str], log: Path) -> None:
    with open(log, "a") as out:
        done = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, timeout=600, check=False)
    assert done.returncode == 0, log.read_text()[-3000:]


def crawldb_summary(spark, data: Path | str) -> dict:
    rows = spark.read.format("delta").load(f"{data}/crawldb").collect()
    return {r["url"]: (r["status"], r["content_hash"]) for r in rows}
