"""Table layouts of the crawldb and of a segment, as Spark DDL (no pyspark import).

Times are ``TIMESTAMP`` in the tables, for analysts; the plain-Python code below Spark
works in epoch milliseconds (as Nutch's CrawlDatum does), and the jobs convert at the
boundary (``python_ddl`` has ``BIGINT`` where the table has ``TIMESTAMP``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Table:
    """Ordered columns of one table: ``(name, spark_sql_type)`` pairs."""

    name: str
    columns: tuple[tuple[str, str], ...]

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return [name for name, _ in self.columns]

    @property
    def ddl(self) -> str:
        """DDL of the stored table."""
        return ", ".join(f"{name} {kind}" for name, kind in self.columns)

    @property
    def python_ddl(self) -> str:
        """DDL of the same rows as plain Python produces them (times in epoch ms)."""
        return ", ".join(
            f"{name} {'BIGINT' if kind == 'TIMESTAMP' else kind}" for name, kind in self.columns
        )

    @property
    def time_columns(self) -> list[str]:
        """Columns stored as TIMESTAMP and handled in Python as epoch milliseconds."""
        return [name for name, kind in self.columns if kind == "TIMESTAMP"]

    @cached_property
    def name_tuple(self) -> tuple[str, ...]:
        """Column names in order, computed once (``empty_row`` runs once a new URL)."""
        return tuple(self.names)

    def empty_row(self) -> dict[str, object]:
        """A row with every column set to None (a copy of one made once)."""
        return self._empty.copy()

    @cached_property
    def _empty(self) -> dict[str, object]:
        return dict.fromkeys(self.name_tuple)


CRAWLDB = Table(
    "crawldb",
    (
        ("url", "STRING"),  # normalized URL: the key, one row per URL, fetched as is
        ("dedup_key", "STRING"),  # aggressive form (sorted query, no www., no slash)
        ("host", "STRING"),
        ("status", "STRING"),  # lib.vocabulary names
        ("reason", "STRING"),  # why the status: http_404, robots_denied, timeout ...
        ("fetch_time", "TIMESTAMP"),  # next time the URL is due (Nutch's name)
        ("next_fetch_time", "TIMESTAMP"),  # the same, under a name that says it
        ("last_fetch_time", "TIMESTAMP"),  # when it was last fetched (any outcome)
        ("modified_time", "TIMESTAMP"),  # when its content was last seen to change
        ("fetch_interval", "INT"),  # seconds between fetches
        ("fixed_interval", "BOOLEAN"),  # interval set by the seed, not adapted
        ("retries", "INT"),  # consecutive transient failures
        ("fetch_count", "INT"),  # fetches attempted, any outcome
        ("score", "DOUBLE"),  # OPIC cash from inlinks (injected: the seed's score)
        ("pagerank", "DOUBLE"),  # from the rank job (sums to 1 over the crawldb), else NULL
        ("depth", "INT"),  # link distance from a seed
        ("http_status", "INT"),  # last HTTP status, NULL when no response
        ("content_hash", "STRING"),  # SHA-256 of the last body, hex
        ("simhash", "BIGINT"),  # 64-bit SimHash of the visible text, signed
        ("minhash", "BINARY"),  # MinHash sketch of the same text, 64 bytes (dedup)
        ("etag", "STRING"),
        ("last_modified", "STRING"),  # Last-Modified header as sent by the server
        ("last_modified_time", "TIMESTAMP"),  # the same as a time (NULL: none, or no date)
        ("content_type", "STRING"),
        ("title", "STRING"),
        ("redirect_to", "STRING"),  # target of a redirect status
        ("duplicate_of", "STRING"),  # the URL kept in place of this duplicate
        ("canonical", "STRING"),  # another URL of the same site the page names canonical
        ("change_count", "INT"),  # re-fetches that found the content changed
        ("revisit_count", "INT"),  # re-fetches that compared content (200 or 304)
        ("generate_time", "TIMESTAMP"),  # in a fetch list not applied yet (generate.update.crawldb)
        ("segment", "STRING"),  # segment whose fetch last updated the row
        # The latest capture with a body: DIR/segments/<capture_segment>/warc/<warc_file>,
        # its response record at warc_offset (so the crawldb joins to the archive).
        # A re-fetch of the same payload leaves them (and the two below) as they were.
        ("capture_segment", "STRING"),
        ("warc_file", "STRING"),
        ("warc_offset", "BIGINT"),
        ("capture_record_id", "STRING"),  # that record's WARC-Record-ID (WARC-Refers-To)
        ("capture_time", "TIMESTAMP"),  # that record's WARC-Date
        ("payload_digest", "STRING"),  # its WARC-Payload-Digest (sha1:BASE32)
        ("discovered_time", "TIMESTAMP"),  # when the URL entered the crawldb
        ("metadata", "MAP<STRING, STRING>"),  # seed metadata
    ),
)

FETCHLIST = Table(
    "fetchlist",
    (
        ("url", "STRING"),
        ("host", "STRING"),
        ("status", "STRING"),  # crawldb status at generate time
        ("score", "DOUBLE"),
        ("depth", "INT"),
        ("etag", "STRING"),
        ("last_modified", "STRING"),
        ("payload_digest", "STRING"),  # of the archived capture (crawldb), for a revisit
        ("capture_time", "TIMESTAMP"),  # its WARC-Date
        ("capture_segment", "STRING"),  # its segment (whose WARC files may be gone)
        ("capture_record_id", "STRING"),  # its WARC-Record-ID
        ("priority", "DOUBLE"),  # crawldb.priority, when generated
        ("tier", "STRING"),  # high, medium, low
        ("partition", "INT"),  # fetch partition of its host (crawldb.partitioning)
    ),
)

FETCH = Table(
    "fetch",
    (
        ("url", "STRING"),
        ("host", "STRING"),
        ("fetch_status", "STRING"),  # lib.vocabulary fetch outcome names
        ("reason", "STRING"),
        ("http_status", "INT"),
        ("fetched_at", "TIMESTAMP"),  # start of the request
        ("duration_ms", "INT"),
        ("content_type", "STRING"),
        ("content", "BINARY"),  # body after Content-Encoding is undone, up to the limit
        ("content_length", "INT"),
        ("truncated", "BOOLEAN"),
        ("headers", "MAP<STRING, STRING>"),
        ("etag", "STRING"),
        ("last_modified", "STRING"),
        ("redirect_to", "STRING"),  # normalized target of a redirect
        ("depth", "INT"),
        ("score", "DOUBLE"),
        ("origin", "STRING"),  # fetchlist, redirect, outlink (followed), robots, sitemap, probe
        ("attempts", "INT"),  # requests made for the URL this round (429/503 retries)
        ("error_detail", "STRING"),  # the exception or limit behind a failure
        ("ip", "STRING"),  # address the fetcher connected to
        ("warc_file", "STRING"),  # file name under the segment's warc/ folder
        ("warc_offset", "BIGINT"),  # byte offset of the response (or revisit) record
        ("warc_record_id", "STRING"),  # that record's WARC-Record-ID
        ("payload_digest", "STRING"),  # WARC-Payload-Digest of the answer (sha1:BASE32)
    ),
)

SITEMAPS = Table(
    "sitemaps",
    (
        ("url", "STRING"),  # normalized, filtered, on the sitemap's own host
        ("lastmod", "TIMESTAMP"),
        ("changefreq", "INT"),  # seconds (daily: 86400)
        ("priority", "DOUBLE"),  # 0-1, NULL when not given
        ("sitemap", "STRING"),  # the sitemap that lists it
    ),
)

ROBOTS = Table(
    "robots",
    (
        ("host", "STRING"),  # the key, one row per host
        ("url", "STRING"),  # the robots.txt URL asked first
        ("fetched_at", "TIMESTAMP"),
        ("http_status", "INT"),  # final status after redirects (2xx or 4xx: 5xx is not kept)
        ("content", "BINARY"),  # the body, up to robots.content.limit
    ),
)

SOFT404 = Table(
    "soft404",
    (
        ("host", "STRING"),  # the key, one row per host
        ("url", "STRING"),  # the made-up path asked
        ("probed_at", "TIMESTAMP"),
        ("http_status", "INT"),  # 200: the host's "not found" page is a soft 404
        ("content_hash", "STRING"),  # of the answer, as parse computed it
        ("simhash", "BIGINT"),
    ),
)

# metadata: what a parser knows of the link (a feed entry's "updated" date, lib.content.feeds)
OUTLINK_TYPE = "STRUCT<url: STRING, anchor: STRING, rel: STRING, metadata: MAP<STRING, STRING>>"

LINKDB = Table(
    "linkdb",
    (
        ("url", "STRING"),  # the link's target, normalized
        ("from_url", "STRING"),  # the page that links to it
        ("from_host", "STRING"),
        ("anchor", "STRING"),  # the link's anchor text, as last seen
        ("first_segment", "STRING"),  # the segments whose parse found it first and last
        ("last_segment", "STRING"),
        ("first_seen", "TIMESTAMP"),  # when updatedb applied those segments
        ("last_seen", "TIMESTAMP"),
    ),
)

HOSTDB = Table(
    "hostdb",
    (
        ("host", "STRING"),  # the key, one row per host of the crawldb
        ("urls", "BIGINT"),  # its URLs in the crawldb
        ("urls_unfetched", "BIGINT"),  # of them, by crawldb status (lib.vocabulary)
        ("urls_fetched", "BIGINT"),
        ("urls_gone", "BIGINT"),
        ("urls_redir_temp", "BIGINT"),
        ("urls_redir_perm", "BIGINT"),
        ("urls_notmodified", "BIGINT"),
        ("urls_duplicate", "BIGINT"),
        ("fetches_success", "BIGINT"),  # its pages' fetches in the rounds applied, by outcome
        ("fetches_temp_moved", "BIGINT"),
        ("fetches_moved", "BIGINT"),
        ("fetches_not_modified", "BIGINT"),
        ("fetches_not_found", "BIGINT"),
        ("fetches_robots_denied", "BIGINT"),
        ("fetches_retry", "BIGINT"),
        ("fetches_skipped", "BIGINT"),
        ("responses", "BIGINT"),  # answers to its requests (pages, robots.txt, sitemaps, probes)
        ("mean_response_ms", "DOUBLE"),  # their mean time from request to answer
        ("held_back", "BIGINT"),  # pages the last round that asked it left to retry or skipped
        ("circuit_open", "BOOLEAN"),  # whether its circuit breaker opened in that round
        ("robots_status", "INT"),  # its robots.txt's last answer (NULL: no answer came)
        ("robots_time", "TIMESTAMP"),  # when that robots.txt was asked
        ("crawl_delay", "DOUBLE"),  # its Crawl-delay for Trawl's agent, seconds (NULL: none)
        ("delay", "DOUBLE"),  # the pause kept between its requests, seconds (from robots.txt)
        ("last_fetch_time", "TIMESTAMP"),  # its latest request
        ("last_segment", "STRING"),  # the last segment that asked it
    ),
)

PARSE = Table(
    "parse",
    (
        ("url", "STRING"),
        ("parse_status", "STRING"),  # success, not_parsed (no parser for its type), failed
        ("reason", "STRING"),
        ("title", "STRING"),
        ("description", "STRING"),  # meta description
        ("language", "STRING"),  # html lang, else Content-Language
        ("canonical", "STRING"),  # link rel=canonical, else the HTTP Link header's
        ("feeds", "ARRAY<STRING>"),  # feeds and sitemaps the page advertises
        ("encoding", "STRING"),  # the encoding the body was decoded with
        ("encoding_source", "STRING"),  # bom, header, meta, detected, default
        ("text", "STRING"),  # visible text, whitespace folded
        ("content_hash", "STRING"),
        ("simhash", "BIGINT"),
        ("minhash", "BINARY"),  # MinHash sketch of the text (lib.content.fingerprint)
        ("outlinks", f"ARRAY<{OUTLINK_TYPE}>"),  # normalized, filtered, in document order
        ("links_rejected", "MAP<STRING, INT>"),  # links dropped, by reason
        ("robots", "STRING"),  # noindex,nofollow from meta robots and X-Robots-Tag
        ("metadata", "MAP<STRING, STRING>"),  # from parser plugins and parse filters
    ),
)
