"""The JSON Lines exporter (``lib.export.jsonl:JsonLines``): one file per task in
``export.jsonl.dir``, one document a line, visible under its final name (``.jsonl``)
once the task's documents are all written (``.jsonl.inprogress`` until then)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from lib.plugins import PluginError


class JsonLines:
    """Writes each document as a JSON object on a line of the task's file."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.path = self.folder / f"trawl-{uuid.uuid4().hex}.jsonl"
        self.handle = None

    @classmethod
    def from_conf(cls, conf) -> JsonLines:
        """The exporter of a task; ``export.jsonl.dir`` must be set."""
        if not conf["export.jsonl.dir"]:
            raise PluginError("export.plugins: lib.export.jsonl:JsonLines needs export.jsonl.dir")
        return cls(conf["export.jsonl.dir"])

    def export(self, documents: list[dict[str, Any]]) -> None:
        """Append the documents."""
        if self.handle is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.handle = open(f"{self.path}.inprogress", "w", encoding="utf-8")  # noqa: SIM115
        for document in documents:
            self.handle.write(json.dumps(document, ensure_ascii=False, default=str) + "\n")

    def close(self) -> None:
        """Make the file visible under its final name."""
        if self.handle is not None:
            self.handle.close()
            os.replace(f"{self.path}.inprogress", self.path)
            self.handle = None
