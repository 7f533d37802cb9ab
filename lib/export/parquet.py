"""The Parquet exporter (``lib.export.parquet:ParquetFiles``): one file per task in
``export.parquet.dir`` (readable by pyarrow, polars, DuckDB, Spark), visible under its
final name once the task's documents are all written."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from lib.plugins import PluginError


def _schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("url", pa.string()),
            ("fetch_status", pa.string()),
            ("http_status", pa.int32()),
            ("fetched_at", pa.timestamp("ms", tz="UTC")),
            ("content_type", pa.string()),
            ("parse_status", pa.string()),
            ("title", pa.string()),
            ("text", pa.string()),
            ("language", pa.string()),
            ("description", pa.string()),
            ("metadata", pa.map_(pa.string(), pa.string())),
            ("content_hash", pa.string()),
            ("simhash", pa.int64()),
            ("outlinks", pa.list_(pa.string())),
        ]
    )


class ParquetFiles:
    """Writes the task's documents as row groups of one Parquet file."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.path = self.folder / f"trawl-{uuid.uuid4().hex}.parquet"
        self.writer = None

    @classmethod
    def from_conf(cls, conf) -> ParquetFiles:
        """The exporter of a task; ``export.parquet.dir`` must be set."""
        if not conf["export.parquet.dir"]:
            raise PluginError(
                "export.plugins: lib.export.parquet:ParquetFiles needs export.parquet.dir"
            )
        return cls(conf["export.parquet.dir"])

    def export(self, documents: list[dict[str, Any]]) -> None:
        """Write the documents as a row group."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.writer is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(f"{self.path}.inprogress", _schema())
        rows = [{**d, "metadata": list((d["metadata"] or {}).items())} for d in documents]
        self.writer.write_table(pa.Table.from_pylist(rows, schema=_schema()))

    def close(self) -> None:
        """Make the file visible under its final name."""
        if self.writer is not None:
            self.writer.close()
            os.replace(f"{self.path}.inprogress", self.path)
            self.writer = None
