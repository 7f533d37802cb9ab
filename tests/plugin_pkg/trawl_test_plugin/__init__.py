"""A Trawl plugin package kept with the tests: what a user adds without forking Trawl."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

TRAWL_DEFAULTS = str(Path(__file__).with_name("defaults.toml"))
REFUSED = "test_plugin_refused"


class RefusePath:
    """A URL filter: refuses URLs whose path contains ``testplugin.refuse``."""

    def __init__(self, needle: str):
        self.needle = needle

    @classmethod
    def from_conf(cls, conf):
        return cls(conf["testplugin.refuse"])

    def filter(self, url: str) -> str | None:
        return REFUSED if self.needle in url else None


class ThingParser:
    """A parser of application/x-trawl-thing: lines ``title: ...`` and ``link: PATH``."""

    def parse(self, url, body, content_type, headers):
        fields = {"outlinks": [], "metadata": {"parsed_by": "trawl_test_plugin"}}
        for line in body.decode("utf-8").splitlines():
            name, _, value = line.partition(": ")
            if name == "title":
                fields["title"] = value
                fields["text"] = f"The thing called {value}"
            elif name == "link":
                fields["outlinks"].append((value, "a thing's link"))
        return fields


class Recorder:
    """An exporter: the documents as JSON lines, one file per task."""

    def __init__(self, folder: str):
        self.path = Path(folder) / f"recorded-{uuid.uuid4().hex}.jsonl"
        self.lines: list[str] = []

    @classmethod
    def from_conf(cls, conf):
        return cls(conf["testplugin.export.path"])

    def export(self, documents):
        self.lines += [
            json.dumps({"url": d["url"], "parse_status": d["parse_status"]}) for d in documents
        ]

    def close(self):
        if self.lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp = self.path.with_suffix(".inprogress")
            temp.write_text("\n".join(self.lines) + "\n")
            os.replace(temp, self.path)
