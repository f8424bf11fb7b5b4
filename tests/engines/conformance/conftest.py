"""One conformance suite, every engine (ibis style): tests take ``engine_name``.

Each test here runs once per engine — ``duckdb`` in the ordinary invocation, ``spark``
(marked ``spark``) in its own ``pytest -m spark`` run that shares one SparkSession
(``tests/conftest.py::spark``; the engine opens a private ``newSession()`` of it).

A known gap of one engine is declared on the test, never skipped::

    @pytest.mark.gap("spark", "why it differs", raises=AssertionError)

and becomes a *strict* xfail for that engine only, which must fail with exactly the named
exception there: a fixed gap turns red until the marker goes, and a gap that starts
failing some other way is reported as the error it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sluicegate.engines import Engine, open_engine
from tests.engines.engine_params import apply_gaps

ENGINES = ["duckdb", pytest.param("spark", marks=pytest.mark.spark)]
"""The engines every conformance test runs on."""

STORAGE_ENGINES = ["duckdb", "duckdb-delta", pytest.param("spark", marks=pytest.mark.spark)]
"""The storage suite also runs ``duckdb-delta``: the embedded engine storing Delta tables
(delta-rs); the table format changes storage, not reading or routing."""


@pytest.fixture(params=ENGINES)
def engine_name(request: pytest.FixtureRequest) -> str:
    """The engine under test; applies the test's ``gap`` markers for it as strict xfails."""
    name = request.param
    apply_gaps(request, name)  # the gap marker is registered in tests/engines/conftest.py
    if name == "spark":
        request.getfixturevalue("spark")  # the run's one SparkSession, started on demand
    return name


def open_named(engine_name: str, warehouse: str, **options: Any) -> Engine:
    """Open the engine a conformance param names (``duckdb-delta`` = DuckDB storing Delta)."""
    if engine_name == "duckdb-delta":
        return open_engine("duckdb", warehouse, table_format="delta", **options)
    return open_engine(engine_name, warehouse, **options)


@pytest.fixture
def open_test_engine(engine_name: str, tmp_path: Path) -> Iterator[Callable[..., Engine]]:
    """Open ``engine_name`` on a warehouse in ``tmp_path`` (closed after the test)."""
    opened: list[Engine] = []

    def _open(warehouse: Path | None = None, **options: Any) -> Engine:
        if warehouse is None:
            warehouse = tmp_path / ("wh.duckdb" if engine_name == "duckdb" else "warehouse")
        eng = open_named(engine_name, str(warehouse), **options)
        opened.append(eng)
        return eng

    yield _open
    for eng in opened:
        eng.close()
