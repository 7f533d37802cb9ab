"""A mistake of the user's gets one line naming the input and what to do, exit code 2, no
stack trace, and leaves nothing behind but the job's log: each case through submit.sh."""

import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

ROOT = Path(__file__).resolve().parent.parent


def submit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ROOT / "submit.sh"), *args],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def trawl_lines(done: subprocess.CompletedProcess) -> list[str]:
    """What the job printed, but for submit.sh's line naming Spark's log. (spark-submit
    hands a Python driver's stderr to its own stdout: both are read.)"""
    printed = (done.stdout + done.stderr).splitlines()
    return [line for line in printed if not line.startswith("submit.sh: Spark's log")]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A data directory with a crawldb (a Delta table of one URL, written by delta-rs:
    the mistakes below are found before Spark starts)."""
    root = tmp_path_factory.mktemp("usage") / "data"
    write_deltalake(str(root / "crawldb"), pa.table({"url": ["http://a.test/"]}))
    return root


CASES = {
    "missing seed file": (
        ["crawl", "--seeds", "/nonexistent/seeds.txt", "--rounds", "1"],
        "crawl: seed file /nonexistent/seeds.txt does not exist",
    ),
    "missing segment": (
        ["fetch", "--segment", "20200101000000"],
        "fetch: no segment 20200101000000 in {data}/segments (readseg --list shows them)",
    ),
    "missing segment to read": (
        ["readseg", "--get", "20200101000000", "http://a.test/"],
        "readseg: no segment 20200101000000 in {data}/segments (readseg --list shows them)",
    ),
    "unreadable conf file": (
        ["generate", "--conf-file", "/nonexistent/site.toml"],
        "generate: cannot read configuration file /nonexistent/site.toml",
    ),
    "unknown conf key": (
        ["generate", "--conf", "fetcher.no.such.key=1"],
        "generate: --conf: unknown configuration key 'fetcher.no.such.key'",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_mistake_gets_one_plain_line_and_exit_code_2(data, case):
    args, expected = CASES[case]
    done = submit(*args, "--data", str(data))
    lines = trawl_lines(done)
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith(expected.format(data=data)), done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_data_directory_without_a_crawldb_is_named(tmp_path):
    for job in ("readdb", "generate", "dedup"):
        done = submit(job, "--data", str(tmp_path / "nothing"), *(["--stats"] * (job == "readdb")))
        assert done.returncode == 2, done.stderr
        assert trawl_lines(done) == [
            f"{job}: {tmp_path / 'nothing'} has no crawldb: run inject --seeds FILE"
            " (or crawl --seeds FILE) first"
        ]
    assert not (tmp_path / "nothing").exists()  # a mistyped path is not made
    done = submit("crawl", "--data", str(tmp_path / "empty"), "--rounds", "1")
    assert done.returncode == 2
    assert trawl_lines(done) == [
        f"crawl: {tmp_path / 'empty'} has no crawldb: give --seeds FILE (or submit URLs to"
        " the API) for the first round"
    ]


@pytest.mark.spark
def test_a_seed_file_without_a_usable_line_stops_inject_and_crawl_with_exit_code_2(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# two lines, neither a URL Trawl can crawl\nnot a url\nftp://a.test/x\n")
    data = tmp_path / "data"
    expected = f"{seeds} holds no usable seed line (2 malformed): nothing injected"
    for job, extra in (("inject", []), ("crawl", ["--rounds", "1"])):
        done = submit(job, "--seeds", str(seeds), "--data", str(data), *extra)
        lines = trawl_lines(done)
        assert done.returncode == 2, done.stdout + done.stderr
        assert lines[-1] == f"{job}: {expected}", lines
        assert sum("line skipped" in line for line in lines) == 2, lines
        assert "Traceback" not in done.stdout + done.stderr
        assert not (data / "crawldb").exists()  # nothing written, no empty crawldb


@pytest.mark.spark
def test_a_crawl_beyond_loopback_with_the_default_agent_stops_before_any_request(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://agent-check.test/\n")
    data = tmp_path / "data"
    # The private networks allowed, as the tests' webs do: the agent alone refuses.
    done = submit(
        "crawl",
        "--seeds",
        str(seeds),
        "--data",
        str(data),
        "--rounds",
        "1",
        "--conf",
        "fetcher.allow.private.networks=true",
    )
    lines = trawl_lines(done)
    assert done.returncode == 2, done.stdout + done.stderr
    assert lines[-1].startswith("crawl: http.agent.name (now 'Trawl') and http.agent.url"), lines
    assert lines[-1].endswith("before fetching agent-check.test"), lines
    assert "Traceback" not in done.stdout + done.stderr
    # Generated, never fetched: a rerun with the agent named fetches that segment.
    (segment,) = (data / "segments").iterdir()
    assert (segment / "_generated.done").exists()
    assert not (segment / "fetch").exists() and not (segment / "_fetched.done").exists()
