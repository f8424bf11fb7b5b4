"""The storage seam: which table format holds an engine's durable tables.

An engine computes; a table format stores (``docs/lakehouse.md``). The two are chosen
apart: ``engine.name`` picks who runs the SQL, ``outputs.format`` picks where the tables
live — ``duckdb`` (one DuckDB file, one transaction across every table) or ``delta``
(one Delta Lake table per output under ``<warehouse>/<table>``, local or ``s3://``), and
later ``iceberg``. A format is never a new engine: the pipeline, the DLQ and the facts
keep calling the same :class:`~sluicegate.engines.base.Engine` methods
(``begin`` / ``execute`` / ``fetch`` / ``commit``) and read what a format can promise from
:class:`StorageCapabilities`, never from its name.

Each engine declares the formats it can store (``Engine.formats``, first = its default);
:func:`choose_format` turns the contract's choice into one of them or a one-line error.
Inside an engine, a format is a *table store* (for Spark: ``spark_store.SparkTableStore``;
the Delta implementation is ``delta_spark.py``): it lists, reads, stages and publishes
tables, and says which version each commit produced, so the run record can name them
(``sluicegate snapshot``).

Pure standard library: no driver is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

FORMATS = ("duckdb", "delta", "iceberg")
"""Every table format a contract may name in ``outputs.format``."""

SNAPSHOTS_TABLE = "_sluicegate_snapshots"
"""One row per (run, table): the version a run's publish gave each table it wrote."""


@dataclass(frozen=True)
class StorageCapabilities:
    """What a table format promises, read by the pipeline instead of the format's name.

    ``atomic_across_tables``: one commit makes every table's change visible at once (a
    DuckDB file); False means each table commits on its own and the run record, written
    last, names each table's version (``versions``). ``time_travel``: a reader can open
    a table as of a version. ``change_feed``: row-level changes between versions can be
    read (the DLQ history). ``object_store``: the warehouse may be an ``s3://`` URI.
    """

    format: str
    atomic_across_tables: bool
    versions: bool
    time_travel: bool
    change_feed: bool
    object_store: bool


DUCKDB_FILE = StorageCapabilities(
    format="duckdb",
    atomic_across_tables=True,
    versions=False,
    time_travel=False,
    change_feed=False,
    object_store=False,
)

DELTA = StorageCapabilities(
    format="delta",
    atomic_across_tables=False,
    versions=True,
    time_travel=True,
    change_feed=True,
    object_store=True,
)

ICEBERG = StorageCapabilities(
    format="iceberg",
    atomic_across_tables=False,
    versions=True,
    time_travel=True,
    change_feed=False,
    object_store=True,
)

CAPABILITIES = {c.format: c for c in (DUCKDB_FILE, DELTA, ICEBERG)}


@dataclass
class CommitResult:
    """What one engine commit published: each changed table's new version (a format
    with versions) and what the commit repaired or noticed on the way."""

    versions: dict[str, int] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)


@runtime_checkable
class ParquetRows(Protocol):
    """Rows to publish that the computing engine can write as a Parquet file itself,
    for a table store that commits files it did not write (Iceberg's ``add_files``):
    the rows then never pass through Python."""

    def schema(self, name: str) -> Any:
        """The Arrow schema of ``name``'s rows."""

    def write_parquet(self, name: str, path: str) -> int | None:
        """Write ``name``'s rows as one Parquet file without field ids at ``path``; the
        rows written, or None when these rows cannot be written so. A store treats 0
        like None: it removes the file and writes the (no) rows its own way, which still
        replaces what they replace."""


def choose_format(requested: str | None, engine: str, supported: tuple[str, ...]) -> str:
    """The table format an engine opens: the contract's choice, else the engine's default.

    >>> choose_format(None, "spark", ("delta",))
    'delta'
    >>> choose_format("delta", "duckdb", ("duckdb", "delta"))
    'delta'
    """
    from ..errors import UsageError

    if requested is None:
        return supported[0]
    if requested not in FORMATS:
        raise UsageError(
            f"unknown table format '{requested}'",
            hint=f"outputs.format is one of: {', '.join(FORMATS)}",
        )
    if requested not in supported:
        raise UsageError(
            f"the {engine} engine cannot store outputs.format: {requested}",
            hint=f"the {engine} engine stores: {', '.join(supported)}",
        )
    return requested


def is_object_store(warehouse: str) -> bool:
    """True for a URI such as ``s3://bucket/wh`` (the warehouse is not a local folder)."""
    scheme, sep, _rest = warehouse.partition("://")
    return bool(sep) and scheme.lower() in ("s3", "s3a", "gs", "abfss", "file") and scheme != ""


def spark_uri(warehouse: str) -> str:
    """``s3://`` as Hadoop's S3A file system reads it (``s3a://``); other paths unchanged."""
    if warehouse.startswith("s3://"):
        return "s3a://" + warehouse[len("s3://") :]
    return warehouse
