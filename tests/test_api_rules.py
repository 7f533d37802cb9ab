"""The crawl-job API's rules without a server: URL cleaning, states, rate limit,
callback targets and back-off."""

from api.app import RateLimiter, owner_of
from api.callbacks import CallbackSender
from crawldb import status as st
from lib.apijobs import clean_urls, job_status, retry_delay, url_state
from lib.config import load_config
from lib.urlfilter import UrlFilter


def test_urls_are_cleaned_like_links_and_refusals_say_why():
    conf = load_config()
    accepted, rejected = clean_urls(
        ["HTTP://Example.COM:80/a/../b#frag", "http://example.com/b", "mailto:x@y.z", "nonsense"],
        UrlFilter(conf),
    )
    assert accepted == ["http://example.com/b"]  # normalized, once
    assert [r["url"] for r in rejected] == ["mailto:x@y.z", "nonsense"]
    assert all(r["reason"] for r in rejected)


def test_url_states_and_job_status():
    assert url_state(st.FETCHED, None) == "fetched"
    assert url_state(st.NOTMODIFIED, None) == "fetched"
    assert url_state(st.GONE, st.REASON_ROBOTS_DENIED) == "blocked_by_robots"
    assert url_state(st.GONE, "http_404") == "failed"
    assert url_state(st.REDIR_PERM, None) == "redirected"
    assert url_state(st.UNFETCHED, None) == "queued"
    assert url_state(None, None, cancelled=True) == "cancelled"
    running = job_status([("fetched", None), ("queued", None)], cancelled=False)
    assert running["status"] == "running" and running["counts"]["fetched"] == 1
    done = job_status([("fetched", None), ("failed", "http_404")], cancelled=False)
    assert done["status"] == "done" and done["failed_reasons"] == {"http_404": 1}
    assert job_status([("queued", None)], cancelled=False)["status"] == "queued"
    assert job_status([("queued", None)], cancelled=True)["status"] == "cancelled"


def test_rate_limit_is_per_key_and_per_minute():
    limiter = RateLimiter(3)
    assert [limiter.wait_time("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert 59 < limiter.wait_time("a") <= 60  # the fourth call within a minute waits
    assert limiter.wait_time("b") == 0.0
    assert owner_of("secret") != "secret" and len(owner_of("secret")) == 16


def test_callback_targets_obey_the_fetchers_address_rules():
    strict = CallbackSender(None, load_config(), status_of=None)
    assert "loopback" in strict._refused("http://127.0.0.1:9/done")
    assert "link-local" in strict._refused("http://169.254.169.254/latest")
    assert "private" in strict._refused("http://10.1.2.3/")
    assert strict._refused("ftp://example.com/") is not None
    lenient = CallbackSender(
        None, load_config(overrides=["fetcher.allow.private.networks=true"]), status_of=None
    )
    assert lenient._refused("http://127.0.0.1:9/done") is None


def test_callback_retries_back_off_doubling_up_to_a_cap():
    assert [retry_delay(n, 2.0, 10.0) for n in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 10.0, 10.0]
