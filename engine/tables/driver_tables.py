"""Delta tables read into the driver through delta-rs, as Arrow tables and Python rows with
times in epoch milliseconds (as the plain-Python rules take them), without a Spark job.

For the small tables and small crawldbs a round reads whole: a Spark read of them costs
a job per step (the snapshot, the file listing, the scan), a second a table, where
delta-rs and pyarrow read them in milliseconds. Only tables whose files hold their whole
rows (``engine.tables.delta_files.plain_files``) are read so.
"""

from __future__ import annotations

from crawldb.schema import Table


def is_plain(path: str) -> bool:
    """Whether the Delta table at ``path`` exists and its Parquet files alone give its rows."""
    from deltalake import DeltaTable

    from engine.tables.delta_files import is_delta_table, plain_files

    return is_delta_table(path) and plain_files(DeltaTable(path))


def arrow_table(path: str, table: Table, columns: list[str] | None = None):
    """The current rows of the Delta table at ``path`` (``table``'s layout) as an Arrow
    table: ``columns`` of it that the table has (all when None), times in epoch ms."""
    from deltalake import DeltaTable

    delta = DeltaTable(path)
    present = [field.name for field in delta.schema().fields]
    wanted = [name for name in (columns or table.names) if name in present]
    return as_millis(delta.to_pyarrow_table(columns=wanted), table)


def as_millis(rows, table: Table):
    """The Arrow table ``rows`` with ``table``'s TIMESTAMP columns as epoch-ms BIGINT."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for column in table.time_columns:
        if column in rows.column_names:
            index = rows.column_names.index(column)
            micros = rows.column(column).cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
            millis = pc.floor(pc.divide(micros.cast(pa.float64()), 1000)).cast(pa.int64())
            rows = rows.set_column(index, column, millis)
    return rows


def rows_by_url(rows, urls) -> dict[str, dict]:
    """url -> row (a dict, a MAP column as a dict) of the Arrow table ``rows``' rows whose
    URL is one of ``urls``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = pa.array(sorted(urls), pa.string())
    found = rows.filter(pc.is_in(rows.column("url"), value_set=wanted)).to_pylist()
    for row in found:
        if row.get("metadata") is not None:
            row["metadata"] = dict(row["metadata"])
    return {row["url"]: row for row in found}


def python_rows(path: str, table: Table, columns: list[str] | None = None) -> list[dict]:
    """``arrow_table``'s rows as dicts (a MAP column as key-value pairs)."""
    return arrow_table(path, table, columns).to_pylist()
