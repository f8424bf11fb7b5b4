"""THE engine boundary: the only package that imports duckdb or pyspark.

Everything above builds sqlglot expressions and calls the narrow :class:`Engine`
interface; engines render them in their dialect and execute them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import EngineUnavailable
from .base import Engine
from .capabilities import EngineCapabilities, capabilities_of
from .storage import FORMATS, StorageCapabilities, choose_format

ENGINES = ("duckdb", "spark")


def open_engine(
    name: str, warehouse: str, *, table_format: str | None = None, **options: Any
) -> Engine:
    """Open the engine ``name`` on ``warehouse`` (a DuckDB file, or a folder / ``s3://`` URI
    of Delta tables), storing tables in ``table_format`` (``outputs.format``; None = the
    engine's default). See engines/storage.py for the seam between engine and format."""
    if name == "duckdb":
        from .duckdb_engine import DuckDBEngine

        fmt = choose_format(table_format, name, DuckDBEngine.formats)
        if fmt == "delta":
            from .duckdb_delta import DuckDBDeltaEngine

            return DuckDBDeltaEngine(warehouse, **options)
        if fmt == "iceberg":
            from .duckdb_iceberg import DuckDBIcebergEngine

            return DuckDBIcebergEngine(warehouse, **_iceberg_options(options))
        options.pop("iceberg", None)
        return DuckDBEngine(warehouse, **options)
    if name == "spark":
        try:
            from .spark_engine import SparkEngine
        except ImportError as exc:
            raise EngineUnavailable(
                f"the Spark engine is not available: {exc}",
                hint="pip install 'sluicegate[spark]'  (needs Java 17 on PATH or JAVA_HOME)",
            ) from None
        fmt = choose_format(table_format, name, SparkEngine.formats)
        if fmt == "iceberg":
            return SparkEngine(warehouse, table_format=fmt, **_iceberg_options(options))
        options.pop("iceberg", None)
        return SparkEngine(warehouse, table_format=fmt, **options)
    raise EngineUnavailable(f"unknown engine '{name}'", hint=f"choose one of: {', '.join(ENGINES)}")


def _iceberg_options(options: dict[str, Any]) -> dict[str, Any]:
    if "iceberg" not in options:
        from ..errors import UsageError

        raise UsageError(
            "outputs.format: iceberg needs a catalog",
            hint="set outputs.catalog (a key of catalogs:) and outputs.namespace",
        )
    return options


def file_stream(name: str) -> Callable[..., bool] | None:
    """The streaming file source of engine ``name`` (``capabilities.file_stream``), else None.

    Called as ``stream(landing, checkpoint, on_files, stop=, name=, interval=,
    until_idle=, **engine options)``; engines/spark_stream.py documents the contract.
    """
    if not capabilities_of(name).file_stream:
        return None
    from .spark_stream import stream_files

    return stream_files


def kafka_stream(name: str) -> Callable[..., bool] | None:
    """The streaming Kafka source of engine ``name`` (``capabilities.kafka_stream``), else
    None. Called as ``stream(kafka_spec, contract, checkpoint, on_batch, stop=, name=,
    interval=, until_idle=, **engine options)``; engines/spark_kafka.py documents it."""
    if not capabilities_of(name).kafka_stream:
        return None
    from .spark_kafka import stream_kafka

    return stream_kafka


__all__ = [
    "ENGINES",
    "Engine",
    "EngineCapabilities",
    "capabilities_of",
    "file_stream",
    "kafka_stream",
    "open_engine",
    "StorageCapabilities",
    "FORMATS",
]
