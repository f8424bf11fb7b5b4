"""The readers as one table of (format × dialect): who turns loaded records into the typed relation.

Each entry takes the loaded table (text lines, or Parquet rows), the source spec, the
partition columns and the loaded table's physical column types (Parquet only) and
returns the typed relation relation.py documents. The dialect modules import only
shared modules (relation, csv_text, parquet, the JSON pieces); only this table imports
them all, so adding a format or a dialect is one module plus one row here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from sqlglot import exp

from ...contract.models import TableSource
from . import csv_duckdb, csv_spark, ndjson_duckdb, ndjson_spark, parquet
from .duckdb_json import DUCKDB
from .spark_json import SPARK

Reader = Callable[[str, TableSource, list[str], "dict[str, str] | None"], exp.Select]


def _parquet(dialect, table, source, partitions, physical=None):  # noqa: ANN001, ANN202
    return parquet.typed_from_parquet(table, source, partitions, dialect, physical)


READERS: dict[tuple[str, str], Reader] = {
    ("ndjson", "duckdb"): ndjson_duckdb.typed_select,
    ("ndjson", "spark"): ndjson_spark.typed_select,
    ("csv", "duckdb"): csv_duckdb.typed_select,
    ("csv", "spark"): csv_spark.typed_select,
    ("parquet", "duckdb"): partial(_parquet, DUCKDB),
    ("parquet", "spark"): partial(_parquet, SPARK),
    # a Kafka message's value is read as one NDJSON line (docs/streaming.md §10)
    ("kafka", "duckdb"): ndjson_duckdb.typed_select,
    ("kafka", "spark"): ndjson_spark.typed_select,
    # an Iceberg snapshot is read as its Parquet data files (run/bind.py bind_iceberg)
    ("iceberg", "duckdb"): partial(_parquet, DUCKDB),
    ("iceberg", "spark"): partial(_parquet, SPARK),
    # a Delta version is read as its Parquet data files (run/bind_delta.py)
    ("delta", "duckdb"): partial(_parquet, DUCKDB),
    ("delta", "spark"): partial(_parquet, SPARK),
}

#: How each format is loaded before its reader runs: text lines or Parquet rows.
LOADS_PARQUET = frozenset({"parquet", "iceberg", "delta"})


def typed_select(
    table: str,
    source: TableSource,
    partitions: list[str],
    dialect: str,
    physical: dict[str, str] | None = None,
) -> exp.Select:
    """The typed relation of ``source`` (its ``format``) loaded into ``table``, in ``dialect``."""
    try:
        reader = READERS[(source.format, dialect)]
    except KeyError:
        raise NotImplementedError(
            f"{source.format} reading is not compiled for dialect '{dialect}' yet"
        ) from None
    return reader(table, source, partitions, physical)


def rereads_cheaply(
    source: TableSource, partitions: list[str], physical: dict[str, str] | None, dialect: str
) -> bool:
    """The typed relation of this loaded source is a projection with nothing to compute
    per row (Parquet columns already of their declared types): a view over it is cheaper
    than a copy."""
    return source.format in LOADS_PARQUET and parquet.taken_as_stored(
        source, partitions, physical, dialect
    )
