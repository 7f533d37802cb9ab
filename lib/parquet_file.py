"""One Parquet file written from Arrow record batches, streamed to any ``Storage``.

Batches are gathered into row groups of up to ``ROW_GROUP_BYTES`` (in memory as Arrow),
so that a file of small batches does not become thousands of tiny row groups, while a
task never holds more than one row group of pages.
"""

from __future__ import annotations

from collections.abc import Iterable

from lib.storage import CountingWriter, Storage

ROW_GROUP_BYTES = 64 * 1024 * 1024

# Spark's codec names that pyarrow spells otherwise (the others are the same).
_CODECS = {"uncompressed": "none", "lz4_raw": "lz4"}


def write_parquet(
    storage: Storage, path: str, batches: Iterable, schema, compression: str
) -> tuple[int, int]:
    """Write ``batches`` (of ``schema``) to a new Parquet file at ``path``; returns
    ``(rows, bytes of the file)``. ``compression`` is a Parquet codec name as Spark's
    ``spark.sql.parquet.compression.codec`` spells it (``zstd``, ``snappy``, ...)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    codec = _CODECS.get(compression, compression)
    rows = 0
    with storage.open_write(path) as raw:
        stream = CountingWriter(raw)
        with pq.ParquetWriter(stream, schema, compression=codec) as writer:
            group: list = []
            size = 0
            for batch in batches:
                group.append(batch)
                size += batch.nbytes
                rows += batch.num_rows
                if size >= ROW_GROUP_BYTES:
                    writer.write_table(pa.Table.from_batches(group, schema))
                    group, size = [], 0
            if group:
                writer.write_table(pa.Table.from_batches(group, schema))
    return rows, stream.offset
