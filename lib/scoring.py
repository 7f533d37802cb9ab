"""Link scores: OPIC-style cash passed from a fetched page to its outlinks.

A page with score ``s`` and ``n`` kept outlinks gives each outlink ``s / n`` times
``db.score.link.internal`` (same host) or ``db.score.link.external`` (other host). A URL
first seen in a round starts with the sum of what it received; the score of a URL
already known is not changed by new inlinks (so that updatedb stays idempotent).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def outlink_shares(
    score: float, source_host: str, target_hosts: Sequence[str], conf: Mapping[str, Any]
) -> list[float]:
    """Score passed to each outlink, in the order given."""
    if not target_hosts:
        return []
    share = (score or 0.0) / len(target_hosts)
    internal = conf["db.score.link.internal"]
    external = conf["db.score.link.external"]
    return [share * (internal if host == source_host else external) for host in target_hosts]
