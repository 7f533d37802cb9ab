"""The data directory layout, a public contract (README, "Data directory").

::

    DIR/crawldb/                      Delta table, one row per normalized URL
    DIR/robots/                       Delta table, the robots.txt cache, one row per host
    DIR/soft404/                      Delta table, the soft-404 probe answers, one per host
    DIR/metrics/                      Delta table, one row per job run (engine.tables.metrics)
    DIR/segments/<segment>/fetchlist  Delta table written by generate
    DIR/segments/<segment>/fetch      Delta table written by fetch
    DIR/segments/<segment>/parse      Delta table written by parse
    DIR/segments/<segment>/warc/      *.warc.gz written by fetch
    DIR/segments/<segment>/cdxj/      *.warc.gz.cdxj, the CDXJ index of each WARC file
    DIR/segments/<segment>/_<stage>.done   JSON summary, written when a stage completes
                                      (and _deduped.done, crawl's dedup of the round)

Segment names are the UTC time of generate, ``yyyyMMddHHmmss`` as in Nutch, so they
sort in creation order. DIR is a local path or ``hdfs://NAMENODE:PORT/path``
(``lib.storage``). A stage's marker is written after its table, so a segment
without the marker of a stage has to run (or rerun) that stage.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field

from lib.config import Config, load_config
from lib.errors import MissingInput
from lib.storage import Storage, absolute, basename, join, storage_for

STAGES = ("generated", "fetched", "parsed", "updated")
# Markers past the stages: crawl's per-round de-duplication (crawl.dedup).
DEDUPED = "deduped"  # the segment's _deduped.done: crawl marked the round's duplicates
MARKERS = (*STAGES, DEDUPED)
LOCK_NAME = "_lock"


def metrics_path(root: str) -> str:
    """Path of the metrics table of the data directory at ``root`` (executors have the
    root, not the DataDir)."""
    return join(root, "metrics")


def storage_of(root: str, conf) -> Storage:
    """The storage of a data directory, with the HDFS settings of ``conf`` (a Config or
    its dict, as executors get it)."""
    return storage_for(root, conf["hdfs.webhdfs.url"], conf["hdfs.user"])


@dataclass(frozen=True)
class DataDir:
    """Paths inside one data directory, local or ``hdfs://``."""

    root: str
    storage: Storage = field(compare=False, repr=False)

    @classmethod
    def at(cls, path: str | os.PathLike, conf: Config | None = None) -> DataDir:
        """The data directory at ``path`` (local paths made absolute); ``conf`` gives the
        HDFS settings (default: the defaults file)."""
        root = absolute(path)
        return cls(root, storage_of(root, conf if conf is not None else load_config()))

    @property
    def crawldb(self) -> str:
        """Path of the crawldb Delta table."""
        return join(self.root, "crawldb")

    @property
    def robots(self) -> str:
        """Path of the robots.txt cache Delta table."""
        return join(self.root, "robots")

    @property
    def linkdb(self) -> str:
        """Path of the linkdb Delta table (inlinks, with their anchors)."""
        return join(self.root, "linkdb")

    @property
    def hostdb(self) -> str:
        """Path of the hostdb Delta table (one row per host)."""
        return join(self.root, "hostdb")

    @property
    def soft404(self) -> str:
        """Path of the soft-404 probe cache Delta table."""
        return join(self.root, "soft404")

    @property
    def segments(self) -> str:
        """Folder of all segments."""
        return join(self.root, "segments")

    @property
    def metrics(self) -> str:
        """Path of the metrics Delta table, one row per job run."""
        return metrics_path(self.root)

    @property
    def lock(self) -> str:
        """Path of the lock file a writing job holds (engine.runtime.lock)."""
        return join(self.root, LOCK_NAME)

    def api_table(self, name: str) -> str:
        """Path of one of the crawl-job API's Delta tables (submissions, cancelled, ...)."""
        return join(self.root, "api", name)

    def path(self, name: str) -> str:
        """Path of a file or folder directly in the data directory."""
        return join(self.root, name)

    def segment(self, name: str) -> Segment:
        """One segment by name."""
        return Segment(join(self.segments, name), self.storage)

    def segment_names(self) -> list[str]:
        """All segments, oldest first."""
        return self.storage.list_dirs(self.segments)

    def new_segment_name(self) -> str:
        """A fresh segment name (waits a second rather than reuse a name)."""
        while True:
            name = time.strftime("%Y%m%d%H%M%S", time.gmtime())
            if not self.storage.exists(join(self.segments, name)):
                return name
            time.sleep(0.2)

    def pending(self, stage: str) -> list[str]:
        """Segments whose previous stage is done but ``stage`` is not, oldest first."""
        before = STAGES[STAGES.index(stage) - 1]
        return [
            name
            for name in self.segment_names()
            if self.segment(name).done(before) and not self.segment(name).done(stage)
        ]


@dataclass(frozen=True)
class Segment:
    """Paths and stage markers of one segment."""

    path: str
    storage: Storage = field(compare=False, repr=False)

    @property
    def name(self) -> str:
        """The segment's name."""
        return basename(self.path)

    def table(self, name: str) -> str:
        """Path of one of the segment's tables (fetchlist, fetch, parse)."""
        return join(self.path, name)

    @property
    def root(self) -> str:
        """The data directory the segment belongs to."""
        return self.path.rsplit("/segments/", 1)[0]

    @property
    def warc_dir(self) -> str:
        """Folder of the segment's WARC files."""
        return join(self.path, "warc")

    @property
    def cdxj_dir(self) -> str:
        """Folder of the CDXJ indexes of the segment's WARC files, one per file."""
        return join(self.path, "cdxj")

    @property
    def progress_dir(self) -> str:
        """Folder of the fetch tasks' progress files (removed when fetch ends)."""
        return join(self.path, "_progress")

    def warc_files(self) -> list[str]:
        """Paths of the segment's finished WARC files."""
        return [
            join(self.warc_dir, name)
            for name in self.storage.list_files(self.warc_dir)
            if name.endswith(".warc.gz")
        ]

    def exists(self) -> bool:
        """Whether the segment's folder exists."""
        return self.storage.is_dir(self.path)

    def done(self, stage: str) -> bool:
        """True when ``stage`` completed for this segment."""
        return self.storage.exists(join(self.path, f"_{stage}.done"))

    def mark(self, stage: str, summary: dict) -> None:
        """Record that ``stage`` completed, with its summary figures (atomic rename)."""
        if stage not in MARKERS:
            raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(MARKERS)}")
        self.storage.makedirs(self.path)
        text = json.dumps(summary, sort_keys=True) + "\n"
        self.storage.write_atomic(join(self.path, f"_{stage}.done"), text.encode("utf-8"))

    def summary(self, stage: str) -> dict:
        """The figures recorded when ``stage`` completed."""
        return json.loads(self.storage.read_bytes(join(self.path, f"_{stage}.done")))


def run_on_segment(args, conf: Config, stage: str, work) -> int:
    """Run ``work(data, segment)`` on the segment named by ``--segment``, else the oldest
    segment waiting for ``stage``; exit code 1 when there is none."""
    data = DataDir.at(args.data, conf)
    segment = choose_segment(data, stage, args.segment)
    if segment is None:
        before = STAGES[STAGES.index(stage) - 1]
        print(f"no segment is {before} and waits to be {stage}", file=sys.stderr)
        return 1
    work(data, segment)
    return 0


def add_segment_option(parser) -> None:
    """The ``--segment NAME`` option of the jobs that work on one segment."""
    parser.add_argument(
        "--segment", help="segment name (default: the oldest one waiting for this job)"
    )


def choose_segment(data: DataDir, stage: str, name: str | None) -> Segment | None:
    """The segment a stage works on: the one named, else the oldest pending one."""
    if name:
        segment = data.segment(name)
        if not segment.exists():
            raise MissingInput(f"no segment {name} in {data.segments} (readseg --list shows them)")
        return segment
    pending = data.pending(stage)
    return data.segment(pending[0]) if pending else None


FIRST_INJECT = "run inject --seeds FILE (or crawl --seeds FILE) first"


def require_crawldb(data: DataDir, hint: str = FIRST_INJECT) -> None:
    """Raise ``MissingInput`` unless the data directory has a crawldb (read from its
    storage: no Spark needed)."""
    if not data.storage.exists(join(data.crawldb, "_delta_log")):
        raise MissingInput(f"{data.root} has no crawldb: {hint}")


def require_file(path: str, conf, what: str) -> None:
    """Raise ``MissingInput`` unless the file ``path`` (local or ``hdfs://``) exists."""
    where = absolute(path)
    if not storage_of(where, conf).exists(where):
        raise MissingInput(f"{what} {path} does not exist")


def require_segment(data: DataDir, name: str | None) -> None:
    """Raise ``MissingInput`` when a segment is named and does not exist."""
    if name:
        choose_segment(data, "fetched", name)


def crawldb_required(conf, args) -> None:
    """A job's ``check``: its data directory (``--data``) has a crawldb."""
    require_crawldb(DataDir.at(args.data, conf))


def segment_required(conf, args) -> None:
    """A job's ``check``: the segment named by ``--segment``, if any, exists."""
    require_segment(DataDir.at(args.data, conf), args.segment)
