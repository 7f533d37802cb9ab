from lib.config import load_config
from lib.url.filter import UrlFilter
from lib.url.seeds import Seed, SeedError, read_seeds

SEED_FILE = """# seeds for the test
http://Example.com/a#top
\t
https://example.org/\tscore=2.5\tfetchInterval=3600\tcategory=news
not-a-url
http://example.net/\tscore=high
http://example.net/x\tnutch.score=0.5\tnutch.fetchInterval.fixed=true\tnutch.fetchInterval=60
mailto:someone@example.com
http://example.com/a b c
http://example.net/y\tbroken-field
"""


def test_seed_file_lines():
    results = list(read_seeds(SEED_FILE.splitlines(True), UrlFilter(load_config())))
    seeds = [r for r in results if isinstance(r, Seed)]
    errors = [r for r in results if isinstance(r, SeedError)]
    assert [s.url for s in seeds] == [
        "http://example.com/a",
        "https://example.org/",
        "http://example.net/x",
    ]
    assert seeds[1].score == 2.5 and seeds[1].fetch_interval == 3600
    assert seeds[1].metadata == {"category": "news"}
    assert seeds[2].score == 0.5 and seeds[2].fixed_interval and seeds[2].fetch_interval == 60
    assert [e.line for e in errors] == [5, 6, 8, 9, 10]
    assert "line 6" in str(errors[1]) and "high" in str(errors[1])
    assert "scheme" in errors[2].reason


def test_the_first_line_of_a_url_counts_whichever_comes_first():
    """crawldb.injection.earlier, the reduce both executors fold a URL's lines with."""
    from functools import reduce

    from crawldb.injection import changed_row, earlier, seed_rows

    conf = load_config().as_dict()
    given = [Seed("http://a.test/", line, score=float(line)) for line in (7, 3, 9, 5)]
    rows = list(seed_rows(conf, 1_000, given))
    for order in (rows, rows[::-1], rows[1:] + rows[:1]):
        assert reduce(earlier, order)["line"] == 3
    first = reduce(earlier, rows)
    fresh = changed_row(None, first, update=False)
    assert "line" not in fresh and fresh["score"] == 3.0
    assert changed_row(fresh, first, update=True) is None  # injected again: nothing changes
    assert changed_row(fresh, rows[0], update=True)["score"] == 7.0
    assert changed_row(fresh, rows[0], update=False) is None
