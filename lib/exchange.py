"""One HTTP request and what came back for it: made by the fetcher's client
(lib.fetching.http), written to the archive (lib.archive.warc)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PriorCapture:
    """The archived capture of a URL's current payload, from an earlier round: a 304 to
    the re-fetch is archived as a revisit of it (WARC 1.1, 6.7.3), and so is a re-fetch
    that brings the same payload when ``identical`` (6.7.2, ``warc.revisit.identical``)."""

    payload_digest: str  # its WARC-Payload-Digest, ``sha1:`` and base32
    date_ms: int  # its WARC-Date, epoch milliseconds
    record_id: str  # its WARC-Record-ID
    identical: bool  # whether a same payload is archived as a revisit of it


@dataclass
class Exchange:
    """A request and what came back for it."""

    url: str
    request_headers: list[tuple[str, str]]
    started: float  # epoch seconds, wall clock
    ended_monotonic: float = 0.0
    duration_ms: int = 0
    status: int | None = None
    reason_phrase: str = ""
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    raw_body: bytes = b""  # as received (still content-encoded)
    body: bytes = b""  # Content-Encoding undone
    truncated: bool = False  # the body was cut at a size or time limit
    error: str | None = None
    error_detail: str | None = None
    peer: str | None = None  # IP address connected to
    # Of duration_ms, how long the caller did not look at the network (STALL_THRESHOLD):
    # time the answer may have waited for the client, not the server's.
    stalled_ms: int = 0
    cut_at_size: bool = False  # truncated at http.content.limit (as received or decoded)
    first_byte_ms: int = 0  # from the request's start to the answer's first byte

    @property
    def server_seconds(self) -> float:
        """The exchange's duration less the client's stalls: the server's time as far as
        the client can tell (an answer that came in during a stall counts as quick). A
        body cut at the size limit counts until its first byte: a server sending a huge
        page is busy, not slow."""
        spent = self.first_byte_ms if self.cut_at_size else self.duration_ms
        return max(spent - self.stalled_ms, 0) / 1000.0

    def header(self, name: str) -> str | None:
        """First response header of that name (case-insensitive), or ``None``."""
        lowered = name.lower()
        for key, value in self.response_headers:
            if key.lower() == lowered:
                return value
        return None
