"""THE engine boundary: the only package that imports duckdb or pyspark.

Everything above builds sqlglot expressions and calls the narrow :class:`Engine`
interface; engines render them in their dialect and execute them.
"""

from __future__ import annotations

from typing import Any

from ..errors import EngineUnavailable
from .base import Engine, EngineCapabilities

ENGINES = ("duckdb", "spark")


def open_engine(name: str, warehouse: str, **options: Any) -> Engine:
    """Open the engine ``name`` on ``warehouse`` (a DuckDB file, or a directory for Spark)."""
    if name == "duckdb":
        from .duckdb_engine import DuckDBEngine

        return DuckDBEngine(warehouse, **options)
    if name == "spark":
        try:
            from .spark_engine import SparkEngine
        except ImportError as exc:
            raise EngineUnavailable(
                f"the Spark engine is not available: {exc}",
                hint="pip install 'sluicegate[spark]'  (needs Java 17 on PATH or JAVA_HOME)",
            ) from None
        return SparkEngine(warehouse, **options)
    raise EngineUnavailable(f"unknown engine '{name}'", hint=f"choose one of: {', '.join(ENGINES)}")


__all__ = ["Engine", "EngineCapabilities", "open_engine", "ENGINES"]
