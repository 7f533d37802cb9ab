"""readseg: list segments, dump a segment's records, or show one URL's (as Nutch's readseg).

Usage: ``submit.sh readseg --data DIR (--list [--json] | --dump SEGMENT OUT [--content]
| --get SEGMENT URL)``.
``--list``: every segment with the stages done and their main figures;
``--dump SEGMENT OUT``: one JSON line per URL of the segment under OUT -- its fetch list
entry, fetch result and parse (title, text, outlinks), the body only with ``--content``;
``--get SEGMENT URL``: the same record for one URL, printed as JSON.
"""

from __future__ import annotations

import json
import sys

from engine.runtime.cli import job_main, job_parser
from engine.runtime.layout import STAGES, DataDir, Segment
from engine.tables.frames import print_record
from lib.errors import MissingInput
from lib.vocabulary import ORIGIN_ROBOTS

LISTED = {  # figure shown by --list: (stage, key in its marker)
    "generated": ("generated", "urls"),
    "fetched": ("fetched", "pages"),
    "errors": ("fetched", "errors"),
    "parsed": ("parsed", "pages"),
    "outlinks": ("parsed", "outlinks"),
    "new": ("updated", "new"),
}


def build_parser():
    """Command line of the job."""
    parser = job_parser("readseg", __doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list the segments")
    action.add_argument("--dump", nargs=2, metavar=("SEGMENT", "OUT"), help="dump a segment")
    action.add_argument("--get", nargs=2, metavar=("SEGMENT", "URL"), help="one URL's record")
    parser.add_argument("--content", action="store_true", help="--dump: include the bodies")
    parser.add_argument("--json", action="store_true", help="--list as JSON")
    return parser


def run(spark, conf, args) -> int:
    """Run the chosen action."""
    data = DataDir.at(args.data, conf)
    if args.list:
        listing = list_segments(data)
        print(json.dumps(listing, indent=2) if args.json else format_listing(listing))
        return 0
    name = (args.dump or args.get)[0]
    segment = data.segment(name)
    records = segment_records(spark, segment, with_content=args.content)
    if args.dump:
        records.write.mode("overwrite").json(args.dump[1])
        print(f"readseg: segment {name} written as JSON lines to {args.dump[1]}")
        return 0
    return print_record(records, args.get[1], "readseg", f"segment {name}")


def list_segments(data: DataDir) -> list[dict]:
    """Every segment, oldest first: the stages done and their main figures."""
    listing = []
    for name in data.segment_names():
        segment = data.segment(name)
        done = [stage for stage in STAGES if segment.done(stage)]
        entry = {"segment": name, "stages": done}
        for label, (stage, key) in LISTED.items():
            if stage in done:
                entry[label] = segment.summary(stage).get(key)
        listing.append(entry)
    return listing


def format_listing(listing: list[dict]) -> str:
    """Segments as readable lines."""
    lines = []
    for entry in listing:
        shown = [f"{label} {entry[label]}" for label in LISTED if label in entry]
        stage = entry["stages"][-1] if entry["stages"] else "empty"
        lines.append(f"{entry['segment']}\t{stage}\t{', '.join(shown)}")
    return "\n".join(lines)


def segment_records(spark, segment: Segment, with_content: bool):
    """One row per URL of the segment: ``fetchlist``, ``fetch`` and ``parse`` structs
    (NULL for the stages not run yet or that did not reach the URL)."""
    from pyspark.sql import functions as F

    def table(name: str, dropped: tuple[str, ...] = ()):
        if not segment.done({"fetchlist": "generated", "fetch": "fetched"}.get(name, "parsed")):
            return None
        frame = spark.read.format("delta").load(segment.table(name)).drop(*dropped)
        return frame.select("url", F.struct(*[c for c in frame.columns if c != "url"]).alias(name))

    records = table("fetchlist")
    fetched = table("fetch", () if with_content else ("content",))
    if fetched is not None:
        records = records.join(
            fetched.where(F.col("fetch.origin") != ORIGIN_ROBOTS), "url", "full_outer"
        )
    parsed = table("parse")
    if parsed is not None:
        records = records.join(parsed, "url", "left")
    return records


def check(conf, args) -> None:
    """Before Spark starts: the data directory exists, and the segment named, if any."""
    data = DataDir.at(args.data, conf)
    if not data.storage.exists(data.root):
        raise MissingInput(f"no data directory {data.root}")
    if not args.list:
        name = (args.dump or args.get)[0]
        if not data.segment(name).done("generated"):
            raise MissingInput(f"no segment {name} in {data.segments} (readseg --list shows them)")


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and submit.sh."""
    return job_main("readseg", build_parser(), run, argv, check)


if __name__ == "__main__":
    sys.exit(main())
