"""Which Spark table store serves a table format.

A registry apart from :mod:`spark_store` (the store protocol) so that the stores, which
import the protocol, are never imported back by it.
"""

from __future__ import annotations

from .spark_store import SparkTableStore


def store_class(table_format: str) -> type[SparkTableStore]:
    """The store class of ``table_format`` (imported on demand)."""
    if table_format == "delta":
        from .delta_spark import DeltaStore

        return DeltaStore
    if table_format == "iceberg":
        from .iceberg_spark import IcebergSparkStore

        return IcebergSparkStore
    raise ValueError(f"no Spark store for table format {table_format!r}")
