"""Fixtures for the seed-helper tests: a DuckDB runner and a lazy SparkSession.

The SparkSession is session-scoped and only built when a Spark test asks for
it (~5 s), so `pytest -m duckdb` never starts a JVM.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

try:  # the package may not be installed into the venv running the tests
    import sluicegate  # noqa: F401
except ImportError:  # pragma: no cover - depends on how the venv was set up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from runners import DuckDBRunner, SparkRunner  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession for the whole run (ANSI on, UTC, no UI)."""
    pytest.importorskip("pyspark", reason="PySpark is needed for the spark tests")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.ansi.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture
def duckdb_runner() -> DuckDBRunner:
    return DuckDBRunner()


@pytest.fixture
def spark_runner(spark) -> SparkRunner:
    return SparkRunner(spark)


@pytest.fixture
def runner(request: pytest.FixtureRequest):
    """The runner for the engine named by the test's ``engine`` parameter."""
    return request.getfixturevalue(f"{request.param}_runner")
