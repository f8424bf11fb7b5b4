"""One engine parameter for the publish, DLQ, incremental and facts tests (both engines).

``ENGINES`` is ``duckdb`` and ``spark``; the spark param carries the ``spark`` mark, so it
runs in the Spark invocation (``pytest -m spark``) with the run's one SparkSession
(tests/conftest.py ``spark``). A known gap of one engine is declared on the test, never
skipped::

    @pytest.mark.gap("spark", "why it differs", raises=AssertionError)

and becomes a *strict* xfail for that engine only, expecting exactly the named exception.

The warehouse is read back with the engine's own SQL: plain DuckDB on a DuckDB file, the
shared SparkSession's catalog on a Spark warehouse (the statement written once in DuckDB
SQL and transpiled by sqlglot, parameters bound as literals).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from sluicegate.engines import open_engine

ENGINES = ["duckdb", pytest.param("spark", marks=pytest.mark.spark)]


def apply_gaps(request: pytest.FixtureRequest, name: str) -> None:
    """The test's ``gap`` markers for engine ``name`` become strict xfails."""
    for mark in request.node.iter_markers("gap"):
        engine, reason = mark.args
        raises = mark.kwargs.get("raises")
        if raises is None:
            raise pytest.UsageError(f"gap({engine!r}, {reason!r}) must name raises=<exception>")
        if engine == name:
            request.applymarker(pytest.mark.xfail(strict=True, reason=reason, raises=raises))


def warehouse_name(engine: str, stem: str = "wh") -> str:
    """A DuckDB file for the embedded engine, a folder for Spark."""
    return f"{stem}.duckdb" if engine == "duckdb" else stem


def engine_of(warehouse: Path) -> str:
    return "duckdb" if warehouse.suffix == ".duckdb" else "spark"


def _bound(sql: str, params: list | None, dialect: str) -> str:
    tree = sqlglot.parse_one(sql, read="duckdb")
    if params:
        tree = exp.replace_placeholders(tree, *params)
    return tree.sql(dialect=dialect)


def read_dicts(warehouse: Path, sql: str, params: list | None = None) -> list[dict[str, Any]]:
    """Rows of a read-only query on ``warehouse`` (DuckDB SQL), as dicts in column order."""
    if engine_of(warehouse) == "duckdb":
        con = duckdb.connect(str(warehouse), read_only=True)
        try:
            cur = con.execute(sql, params or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        finally:
            con.close()
    eng = open_engine("spark", str(warehouse))
    try:
        return eng.fetch_dicts(_bound(sql, params, "spark"))
    finally:
        eng.close()


def read_rows(warehouse: Path, sql: str, params: list | None = None) -> list[tuple]:
    """Rows of a read-only query on ``warehouse`` (DuckDB SQL), as tuples."""
    return [tuple(r.values()) for r in read_dicts(warehouse, sql, params)]
