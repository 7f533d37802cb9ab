"""libcurl's multi interface driven by one thread through ``selectors`` (epoll on Linux).

Every transfer of a fetch task progresses in the thread that calls ``CurlLoop.wait``: no
callback of libcurl waits for Python's interpreter lock held by another thread, which
cost more CPU than the requests themselves when each transfer had its own thread.
Sockets are watched through libcurl's socket callback (``curl_multi_socket_action``)
rather than ``curl_multi_fdset``, whose ``select`` cannot watch a descriptor numbered
1024 or more, and a crawl keeps a connection open per host.

The multi handle owns the connection cache: a connection outlives the transfer that
opened it, for the next transfer to the same host and port, up to ``kept`` idle
connections (the least recently used are closed beyond). libcurl opens at most one
connection per host at a time (``CURLMOPT_MAX_HOST_CONNECTIONS``): a second transfer to
a host waits for the first, whatever the caller does.
"""

from __future__ import annotations

import selectors
import time

import pycurl

_EVENTS = {
    pycurl.POLL_IN: selectors.EVENT_READ,
    pycurl.POLL_OUT: selectors.EVENT_WRITE,
    pycurl.POLL_INOUT: selectors.EVENT_READ | selectors.EVENT_WRITE,
}


class CurlLoop:
    """Runs curl easy handles concurrently; ``wait`` returns those that finished."""

    def __init__(self, kept: int):
        """``kept``: idle connections kept open for reuse."""
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_MAXCONNECTS, kept)
        self.multi.setopt(pycurl.M_MAX_HOST_CONNECTIONS, 1)
        self.multi.setopt(pycurl.M_SOCKETFUNCTION, self._watch)
        self.multi.setopt(pycurl.M_TIMERFUNCTION, self._set_timer)
        self.selector = selectors.DefaultSelector()
        self.timer: float | None = None  # when libcurl wants its timeout action

    def add(self, curl: pycurl.Curl) -> None:
        """Start a transfer (libcurl asks for a timer at once, so it begins in ``wait``)."""
        self.multi.add_handle(curl)

    def wait(self, timeout: float) -> list[tuple[pycurl.Curl, pycurl.error | None]]:
        """Let transfers progress for up to ``timeout`` seconds, returning as soon as some
        finished: each with ``None`` or the error it failed with. Finished handles are
        removed from the loop (their connection stays in the cache)."""
        now = time.monotonic()
        if self.timer is not None:
            timeout = min(timeout, max(self.timer - now, 0.0))
        if self.selector.get_map():
            events = self.selector.select(timeout)
        else:  # nothing to watch: only the timer or the caller's wait
            events = []
            time.sleep(timeout)
        for key, mask in events:
            if key.fd not in self.selector.get_map():
                continue  # closed by libcurl while acting on an earlier socket
            action = (pycurl.CSELECT_IN if mask & selectors.EVENT_READ else 0) | (
                pycurl.CSELECT_OUT if mask & selectors.EVENT_WRITE else 0
            )
            self.multi.socket_action(key.fd, action)
        if self.timer is not None and time.monotonic() >= self.timer:
            self.timer = None
            self.multi.socket_action(pycurl.SOCKET_TIMEOUT, 0)
        return self._finished()

    def remove(self, curl: pycurl.Curl) -> None:
        """Stop a transfer under way (its connection is closed)."""
        self.multi.remove_handle(curl)

    def _finished(self) -> list[tuple[pycurl.Curl, pycurl.error | None]]:
        done = []
        while True:
            queued, succeeded, failed = self.multi.info_read()
            done += [(curl, None) for curl in succeeded]
            done += [(curl, pycurl.error(code, message)) for curl, code, message in failed]
            if not queued:
                break
        for curl, _ in done:
            self.multi.remove_handle(curl)
        return done

    def _watch(self, what: int, fd: int, _multi, _socketp) -> None:
        """libcurl's socket callback: which events to watch on a socket, or none."""
        registered = fd in self.selector.get_map()
        if what == pycurl.POLL_REMOVE:
            if registered:
                self.selector.unregister(fd)
        elif registered:
            self.selector.modify(fd, _EVENTS[what])
        else:
            self.selector.register(fd, _EVENTS[what])

    def _set_timer(self, milliseconds: int) -> None:
        """libcurl's timer callback (-1: no timeout pending)."""
        self.timer = None if milliseconds < 0 else time.monotonic() + milliseconds / 1000

    def close(self) -> None:
        """Close every cached connection."""
        for key in list(self.selector.get_map().values()):
            self.selector.unregister(key.fd)
        self.selector.close()
        self.multi.close()
