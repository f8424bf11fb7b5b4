"""What each engine can do, declared once and readable without importing its driver.

The pipeline asks these questions instead of comparing engine names (ibis's
``supports_*`` flags, SQLMesh's class constants): a new engine declares its record here
and the layers above need no new branch. ``Engine.capabilities`` is the same object.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineCapabilities:
    """A flat record of what an engine can do (dlt style)."""

    transactions: bool
    asof_join: bool
    dialect: str
    #: CREATE TABLE AS writes the rows now (DuckDB), so the relation it was built from
    #: may be dropped at once; a lazy engine (Spark) may still read it later
    eager_tables: bool = False
    #: times every statement when opened with ``profile=True`` (``run --profile``)
    statement_profile: bool = False
    #: a streaming file source that hands each micro-batch's new files to a callback
    #: (``watch`` and ``run --incremental`` use it instead of polling)
    file_stream: bool = False
    #: a streaming Kafka source that hands each micro-batch's records to a callback
    #: (engines/spark_kafka.py); without it a Kafka contract is read by the embedded
    #: bounded consumer (engines/kafka_consumer.py) in polled micro-batches
    kafka_stream: bool = False
    #: runs on a cluster the contract or the CLI names (``engine.master``/``remote``)
    cluster: bool = False
    #: a TEMP table can be copied out into the process (``Engine.snapshot_table``) and
    #: back into a later engine of the same process (``restore_table``): what lets a
    #: long-lived ``watch`` keep its typed references across micro-batches (run/reuse.py)
    relation_snapshots: bool = False
    #: ``BITSTRING_AGG``/``BIT_COUNT``: the ledger proves lineage disjoint with one bitmap
    #: of line numbers per file instead of a hash table of every (file, line) pair
    bitmap_aggregate: bool = False
    #: ``BITMAP_BUCKET_NUMBER``/``BITMAP_CONSTRUCT_AGG``/``BITMAP_COUNT`` (Spark 3.5+): the
    #: same proof with one bitmap per (file, bucket of 32,768 lines), nothing to size first
    bucket_bitmaps: bool = False
    #: its own table format keeps the whole warehouse in one file (a DuckDB database), so
    #: the warehouse path names a file even without a suffix; a folder otherwise
    warehouse_file: bool = False
    #: its memory is fixed when it starts (a local Spark driver's heap): a run tells it the
    #: input's size as it opens (``input_bytes``) where the size is known before the
    #: bind; an engine without it resizes after the bind (``Engine.size_for_input``)
    memory_at_start: bool = False


DUCKDB = EngineCapabilities(
    transactions=True,
    asof_join=True,
    dialect="duckdb",
    eager_tables=True,
    statement_profile=True,
    relation_snapshots=True,
    bitmap_aggregate=True,
    warehouse_file=True,
)
SPARK = EngineCapabilities(
    transactions=True,
    asof_join=False,
    dialect="spark",
    statement_profile=True,
    file_stream=True,
    kafka_stream=True,
    cluster=True,
    bucket_bitmaps=True,
    memory_at_start=True,
)

BY_NAME: dict[str, EngineCapabilities] = {"duckdb": DUCKDB, "spark": SPARK}


def capabilities_of(name: str) -> EngineCapabilities:
    """The declared capabilities of engine ``name`` (no driver is imported)."""
    from ..errors import EngineUnavailable

    try:
        return BY_NAME[name]
    except KeyError:
        raise EngineUnavailable(
            f"unknown engine '{name}'", hint=f"choose one of: {', '.join(BY_NAME)}"
        ) from None
