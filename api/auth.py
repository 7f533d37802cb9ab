"""Who calls: the bearer key behind a call (``api_keys``), and its rate limit."""

import hashlib
import os
import secrets
import threading
import time
from collections import defaultdict, deque
from typing import Annotated

from fastapi import Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.state import ApiState, api_state


class RateLimiter:
    """At most ``limit`` calls per key in any 60 s window."""

    def __init__(self, limit: int):
        self.limit = limit
        self.calls: dict[str, deque] = defaultdict(deque)
        self.lock = threading.Lock()

    def wait_time(self, owner: str) -> float:
        """0 when the call may go, else the seconds until it may."""
        moment = time.monotonic()
        with self.lock:
            calls = self.calls[owner]
            while calls and moment - calls[0] >= 60:
                calls.popleft()
            if len(calls) >= self.limit:
                return 60 - (moment - calls[0])
            calls.append(moment)
            return 0.0


KEYS_VARIABLE = "TRAWL_API_KEYS"  # comma-separated keys, kept out of ps and shell history


class KeysFileError(ValueError):
    """The file ``api.keys.file`` names cannot be read."""


def api_keys(conf) -> list[str]:
    """The keys accepted: ``api.keys``, the lines of ``api.keys.file`` and the
    comma-separated ``TRAWL_API_KEYS`` of the environment, in that order, once each."""
    keys = list(conf["api.keys"])
    if path := conf["api.keys.file"]:
        try:
            with open(path, encoding="utf-8") as lines:
                keys += [k.strip() for k in lines if k.strip() and not k.startswith("#")]
        except OSError as exc:
            raise KeysFileError(f"api.keys.file {path}: {exc.strerror}") from exc
    keys += [k.strip() for k in os.environ.get(KEYS_VARIABLE, "").split(",") if k.strip()]
    return list(dict.fromkeys(keys))


def owner_of(key: str) -> str:
    """The owner id stored with a job: a hash of the key, never the key itself."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


bearer = HTTPBearer(auto_error=False)


def caller(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    state: Annotated[ApiState, Depends(api_state)],
) -> str:
    """The owner id of the calling key; 401 without a known key, 429 over the rate."""
    return owner_of_key(credentials.credentials if credentials else "", state)


def page_caller(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    state: Annotated[ApiState, Depends(api_state)],
    key: str | None = None,
) -> str:
    """``caller`` for a page a browser opens: the key in the header or as ``?key=``."""
    given = credentials.credentials if credentials else (key or "")
    return owner_of_key(given, state)


def owner_of_key(key: str, state: ApiState) -> str:
    """The owner id of ``key``; 401 unless it is known, 429 over the rate."""
    owner = owner_of(key)
    keys = state.keys
    if not key or owner not in keys or not secrets.compare_digest(keys[owner], key):
        raise HTTPException(
            401,
            "an API key is required: Authorization: Bearer <key>",
            headers={"WWW-Authenticate": "Bearer"},
        )
    wait = state.limiter.wait_time(owner)
    if wait:
        raise HTTPException(
            429,
            f"over {state.limiter.limit} calls a minute",
            headers={"Retry-After": str(int(wait) + 1)},
        )
    return owner


Caller = Annotated[str, Depends(caller)]
PageCaller = Annotated[str, Depends(page_caller)]
