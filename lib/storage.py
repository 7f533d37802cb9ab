"""The files of a data directory outside Delta tables, on a local disk or on HDFS.

Delta tables go through Spark (which reads ``hdfs://`` itself); everything else Trawl
writes beside them -- stage markers, the lock, WARC files -- goes through a ``Storage``:

* ``LocalStorage`` for plain paths (and ``file://``), with ``os`` calls;
* ``WebHdfsStorage`` for ``hdfs://NAMENODE:PORT/path``, through the NameNode's WebHDFS
  REST API (the ``hdfs`` package). Executors stream WARC records to HDFS this way
  without a Hadoop client library or JVM in the Python worker, and without holding a
  whole file in memory (the package sends the upload in chunks as it is written).

Paths are full strings as the data directory spells them (``hdfs://nn:8020/crawl/x``);
each storage maps them to its own namespace.
"""

from __future__ import annotations

import getpass
import os
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import BinaryIO, Protocol
from urllib.parse import urlsplit


class StorageError(RuntimeError):
    """A path that cannot be used as asked (no WebHDFS address, unknown scheme)."""


class Storage(Protocol):
    """What the data directory needs of a file system."""

    def exists(self, path: str) -> bool:
        """Whether a file or folder is at ``path``."""

    def is_dir(self, path: str) -> bool:
        """Whether a folder is at ``path``."""

    def list_dirs(self, path: str) -> list[str]:
        """Names of the folders in ``path``, sorted; none when it does not exist."""

    def list_files(self, path: str) -> list[str]:
        """Names of the files in ``path``, sorted; none when it does not exist."""

    def makedirs(self, path: str) -> None:
        """Create the folder ``path`` and its parents, if missing."""

    def read_bytes(self, path: str) -> bytes:
        """The whole (small) file; FileNotFoundError when it does not exist."""

    def write_atomic(self, path: str, data: bytes) -> None:
        """Write a small file under a temporary name, then move it to ``path``."""

    def create_new(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if nothing is there (atomically); False when
        something is."""

    def delete(self, path: str) -> None:
        """Remove a file or a folder tree; nothing when it does not exist."""

    def rename(self, source: str, target: str) -> None:
        """Move ``source`` to ``target``, replacing a file there."""

    def open_write(self, path: str) -> AbstractContextManager[BinaryIO]:
        """A stream writing a new file at ``path`` (parents created), complete on exit."""

    def open_read(self, path: str) -> AbstractContextManager[BinaryIO]:
        """A stream reading the file at ``path``."""


class CountingWriter:
    """A write-only stream that knows its offset (a WebHDFS upload cannot ``tell()``;
    the WARC writer and pyarrow's Parquet writer ask it)."""

    closed = False

    def __init__(self, raw):
        self.raw = raw
        self.offset = 0

    def write(self, data) -> int:
        self.raw.write(data)
        self.offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self.offset

    def flush(self) -> None:
        """Flushed when the file is closed."""


def join(root: str, *parts: str) -> str:
    """``root/part/...`` for local paths and URLs alike."""
    return "/".join([root.rstrip("/"), *parts])


def basename(path: str) -> str:
    """The last component of a path or URL."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def storage_for(path: str, webhdfs_url: str = "", user: str = "") -> Storage:
    """The storage of ``path``: local, or WebHDFS for ``hdfs://`` (``webhdfs_url`` empty:
    ``http://NAMENODE-HOST:9870``, Hadoop 3's default NameNode HTTP port)."""
    scheme = urlsplit(path).scheme
    if scheme in ("", "file"):
        return LocalStorage()
    if scheme == "hdfs":
        host = urlsplit(path).hostname
        if not webhdfs_url and not host:
            raise StorageError(f"{path}: name the NameNode (hdfs://HOST:PORT/...)")
        return WebHdfsStorage(webhdfs_url or f"http://{host}:9870", user or getpass.getuser())
    raise StorageError(
        f"{path}: unsupported file system {scheme!r}; data directories are local or hdfs://"
    )


def absolute(path: str | os.PathLike) -> str:
    """A data directory path made absolute: URLs as given, local paths resolved."""
    text = os.fspath(path)
    if urlsplit(text).scheme in ("", "file"):
        local = text[len("file://") :] if text.startswith("file://") else text
        return os.path.abspath(local)
    return text.rstrip("/")


class LocalStorage:
    """A local (or NFS) file system."""

    def exists(self, path: str) -> bool:
        return os.path.exists(_local(path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(_local(path))

    def list_dirs(self, path: str) -> list[str]:
        return self._entries(path, os.path.isdir)

    def list_files(self, path: str) -> list[str]:
        return self._entries(path, os.path.isfile)

    def _entries(self, path: str, keep) -> list[str]:
        folder = _local(path)
        if not os.path.isdir(folder):
            return []
        return sorted(n for n in os.listdir(folder) if keep(os.path.join(folder, n)))

    def makedirs(self, path: str) -> None:
        os.makedirs(_local(path), exist_ok=True)

    def read_bytes(self, path: str) -> bytes:
        with open(_local(path), "rb") as handle:
            return handle.read()

    def write_atomic(self, path: str, data: bytes) -> None:
        target = _local(path)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        temp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.tmp")
        with open(temp, "wb") as handle:
            handle.write(data)
        os.replace(temp, target)

    def create_new(self, path: str, data: bytes) -> bool:
        """Create ``path`` only if it does not exist (atomic: O_EXCL)."""
        try:
            handle = os.open(_local(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        return True

    def delete(self, path: str) -> None:
        target = _local(path)
        if os.path.isdir(target):
            shutil.rmtree(target)
        elif os.path.exists(target):
            os.remove(target)

    def rename(self, source: str, target: str) -> None:
        os.replace(_local(source), _local(target))

    @contextmanager
    def open_write(self, path: str) -> Iterator[BinaryIO]:
        target = _local(path)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        with open(target, "wb") as handle:
            yield handle

    @contextmanager
    def open_read(self, path: str) -> Iterator[BinaryIO]:
        with open(_local(path), "rb") as handle:
            yield handle


class WebHdfsStorage:
    """HDFS through WebHDFS; ``hdfs://nn:port/a/b`` is the HDFS path ``/a/b``."""

    def __init__(self, url: str, user: str):
        from hdfs import InsecureClient

        self.url = url
        self.user = user
        self.client = InsecureClient(url, user=user)

    def __reduce__(self):
        # Rebuilt on the executors from its address (its client holds a lock).
        return (WebHdfsStorage, (self.url, self.user))

    def exists(self, path: str) -> bool:
        return self.client.status(_hdfs(path), strict=False) is not None

    def is_dir(self, path: str) -> bool:
        status = self.client.status(_hdfs(path), strict=False)
        return status is not None and status["type"] == "DIRECTORY"

    def list_dirs(self, path: str) -> list[str]:
        return self._entries(path, "DIRECTORY")

    def list_files(self, path: str) -> list[str]:
        return self._entries(path, "FILE")

    def _entries(self, path: str, kind: str) -> list[str]:
        if not self.is_dir(path):
            return []
        listing = self.client.list(_hdfs(path), status=True)
        return sorted(name for name, status in listing if status["type"] == kind)

    def makedirs(self, path: str) -> None:
        self.client.makedirs(_hdfs(path))

    def read_bytes(self, path: str) -> bytes:
        from hdfs.util import HdfsError

        try:
            with self.client.read(_hdfs(path)) as reader:
                return reader.read()
        except HdfsError as exc:
            if self.client.status(_hdfs(path), strict=False) is None:
                raise FileNotFoundError(path) from exc
            raise

    def write_atomic(self, path: str, data: bytes) -> None:
        # HDFS rename does not replace an existing file: a rewritten file is removed
        # first, so readers see the old file, then none, then the new one.
        target = _hdfs(path)
        temp = f"{target.rsplit('/', 1)[0]}/.{target.rsplit('/', 1)[1]}.tmp"
        self.client.write(temp, data=data, overwrite=True)
        self.client.delete(target)
        self.client.rename(temp, target)

    def create_new(self, path: str, data: bytes) -> bool:
        """Create ``path`` only if it does not exist (atomic at the NameNode)."""
        from hdfs.util import HdfsError

        try:
            self.client.write(_hdfs(path), data=data, overwrite=False)
        except HdfsError as exc:
            if "already exists" in str(exc):
                return False
            raise
        return True

    def delete(self, path: str) -> None:
        self.client.delete(_hdfs(path), recursive=True)

    def rename(self, source: str, target: str) -> None:
        self.client.delete(_hdfs(target))
        self.client.rename(_hdfs(source), _hdfs(target))

    @contextmanager
    def open_write(self, path: str) -> Iterator[BinaryIO]:
        with self.client.write(_hdfs(path), overwrite=True) as writer:
            yield writer

    @contextmanager
    def open_read(self, path: str) -> Iterator[BinaryIO]:
        with self.client.read(_hdfs(path)) as reader:
            yield reader


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def _hdfs(path: str) -> str:
    return urlsplit(path).path or "/"
