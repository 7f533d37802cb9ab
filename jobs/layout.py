"""The data directory layout, a public contract (README, "Data directory").

::

    DIR/crawldb/                      Delta table, one row per normalized URL
    DIR/robots/                       Delta table, the robots.txt cache, one row per host
    DIR/segments/<segment>/fetchlist  Delta table written by generate
    DIR/segments/<segment>/fetch      Delta table written by fetch
    DIR/segments/<segment>/parse      Delta table written by parse
    DIR/segments/<segment>/warc/      *.warc.gz written by fetch
    DIR/segments/<segment>/_<stage>.done   JSON summary, written when a stage completes

Segment names are the UTC time of generate, ``yyyyMMddHHmmss`` as in Nutch, so they
sort in creation order. A stage's marker is written after its table, so a segment
without the marker of a stage has to run (or rerun) that stage.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

STAGES = ("generated", "fetched", "parsed", "updated")


@dataclass(frozen=True)
class DataDir:
    """Paths inside one data directory."""

    root: Path

    @classmethod
    def at(cls, path: str | os.PathLike) -> DataDir:
        """The data directory at ``path`` (made absolute)."""
        return cls(Path(path).absolute())

    @property
    def crawldb(self) -> str:
        """Path of the crawldb Delta table."""
        return str(self.root / "crawldb")

    @property
    def robots(self) -> str:
        """Path of the robots.txt cache Delta table."""
        return str(self.root / "robots")

    @property
    def segments(self) -> Path:
        """Folder of all segments."""
        return self.root / "segments"

    def segment(self, name: str) -> Segment:
        """One segment by name."""
        return Segment(self.segments / name)

    def segment_names(self) -> list[str]:
        """All segments, oldest first."""
        if not self.segments.is_dir():
            return []
        return sorted(p.name for p in self.segments.iterdir() if p.is_dir())

    def new_segment_name(self) -> str:
        """A fresh segment name (waits a second rather than reuse a name)."""
        while True:
            name = time.strftime("%Y%m%d%H%M%S", time.gmtime())
            if not (self.segments / name).exists():
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

    path: Path

    @property
    def name(self) -> str:
        """The segment's name."""
        return self.path.name

    def table(self, name: str) -> str:
        """Path of one of the segment's tables (fetchlist, fetch, parse)."""
        return str(self.path / name)

    @property
    def warc_dir(self) -> str:
        """Folder of the segment's WARC files."""
        return str(self.path / "warc")

    def done(self, stage: str) -> bool:
        """True when ``stage`` completed for this segment."""
        return (self.path / f"_{stage}.done").is_file()

    def mark(self, stage: str, summary: dict) -> None:
        """Record that ``stage`` completed, with its summary figures (atomic rename)."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
        self.path.mkdir(parents=True, exist_ok=True)
        temp = self.path / f"._{stage}.done.tmp"
        temp.write_text(json.dumps(summary, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temp, self.path / f"_{stage}.done")

    def summary(self, stage: str) -> dict:
        """The figures recorded when ``stage`` completed."""
        return json.loads((self.path / f"_{stage}.done").read_text(encoding="utf-8"))


def run_on_segment(args, stage: str, work) -> int:
    """Run ``work(data, segment)`` on the segment named by ``--segment``, else the oldest
    segment waiting for ``stage``; exit code 1 when there is none."""
    data = DataDir.at(args.data)
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
        if not segment.path.is_dir():
            raise FileNotFoundError(f"segment {name} not found under {data.segments}")
        return segment
    pending = data.pending(stage)
    return data.segment(pending[0]) if pending else None
