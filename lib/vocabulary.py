"""The crawl vocabulary every layer shares: crawldb statuses, fetch outcomes, the reasons
beside them and the origins of fetch rows.

Statuses are Nutch's CrawlDatum statuses in lower case, stored as readable names. A
crawldb row's ``reason`` column says why it has its status (``http_404``,
``robots_denied``, ``timeout`` ...); it is empty for plain success.
"""

from __future__ import annotations

# ---- crawldb statuses (column lib.vocabulary)
UNFETCHED = "unfetched"  # known, never fetched successfully yet
FETCHED = "fetched"  # fetched successfully; content hash and fingerprints are set
GONE = "gone"  # permanent failure: 4xx, robots denied, too many retries
REDIR_TEMP = "redir_temp"  # answered with a temporary redirect (302, 303, 307)
REDIR_PERM = "redir_perm"  # answered with a permanent redirect (301, 308)
NOTMODIFIED = "notmodified"  # re-fetch answered 304, or the same content again
DUPLICATE = "duplicate"  # same content as another URL that is kept

DB_STATUSES = (UNFETCHED, FETCHED, GONE, REDIR_TEMP, REDIR_PERM, NOTMODIFIED, DUPLICATE)

# ---- fetch outcomes (column fetch.fetch_status), one per URL and round
SUCCESS = "success"  # 2xx with a body
TEMP_MOVED = "temp_moved"  # 302, 303, 307
MOVED = "moved"  # 301, 308
NOT_MODIFIED = "not_modified"  # 304
NOT_FOUND = "not_found"  # 4xx other than 429, and invalid URLs
ROBOTS_DENIED = "robots_denied"  # disallowed by robots.txt: never requested
RETRY = "retry"  # transient: 429, 5xx, timeout, connection error, robots.txt unreachable
SKIPPED = "skipped"  # not attempted this round (e.g. host asks for too long a crawl delay)

FETCH_OUTCOMES = (
    SUCCESS,
    TEMP_MOVED,
    MOVED,
    NOT_MODIFIED,
    NOT_FOUND,
    ROBOTS_DENIED,
    RETRY,
    SKIPPED,
)

# ---- reasons that are not an HTTP status (those are spelled http_<code>)
REASON_ROBOTS_DENIED = "robots_denied"
REASON_ROBOTS_UNAVAILABLE = "robots_unavailable"  # robots.txt answered 5xx or unreachable
REASON_TIMEOUT = "timeout"
REASON_CONNECTION = "connection_error"
REASON_INVALID_URL = "invalid_url"
REASON_REDIRECT_LIMIT = "redirect_limit"
REASON_CRAWL_DELAY = "crawl_delay_too_long"
# Not asked this round: its host's queue would have held the round long after the rest
# (lib.fetching.roundtail); generated first in the next round.
REASON_DEFERRED = "deferred"
REASON_RETRIES_EXHAUSTED = "retries_exhausted"
REASON_EXCEPTION = "exception"
REASON_TLS = "tls_error"
REASON_MALFORMED = "malformed_response"
REASON_TIME_LIMIT = "time_limit"  # the fetch's time limit ended it (fetcher.timelimit.mins)
REASON_PRIVATE = "private_address"  # the host resolved to an address Trawl may not ask
REASON_DNS = "dns_error"
REASON_AGENT = "agent_unnamed"  # a host beyond loopback, the agent left at its defaults
REASON_CIRCUIT = "host_circuit_open"  # the host failed too often this round

# ---- origins (column fetch.origin): why a row of the fetch table was requested
ORIGIN_FETCHLIST = "fetchlist"  # a URL of the fetch list (others: what fetching it added)
ORIGIN_ROBOTS = "robots"
ORIGIN_PROBE = "probe"  # a made-up path, to learn the host's answer for missing pages
ORIGIN_SITEMAP = "sitemap"  # named by robots.txt (else /sitemap.xml), or by a sitemap index
ORIGIN_REDIRECT = "redirect"  # the target of a redirect, followed in the round
ORIGIN_OUTLINK = "outlink"  # a link followed in the round (fetcher.follow.outlinks.depth)


def http_reason(code: int) -> str:
    """The reason recorded for an HTTP status code."""
    return f"http_{code}"


def outcome_of_http(code: int) -> str:
    """Fetch outcome for an HTTP status code (redirects are recorded, not followed, here)."""
    if code == 304:
        return NOT_MODIFIED
    if code in (301, 308):
        return MOVED
    if code in (302, 303, 307):
        return TEMP_MOVED
    if 200 <= code < 300:
        return SUCCESS
    if code == 429 or code >= 500:
        return RETRY
    return NOT_FOUND
