"""Fixtures for the PyFlink tests (run in .venv-flink by scripts/flink_venv.sh).

The engine-free oracle and reconciliation live in tests/sql/seedcheck.py and
are shared with the DuckDB and Spark tests, so tests/sql is put on the path.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_TESTS / "sql"))
try:  # the package may not be installed into the venv running the tests
    import sluicegate  # noqa: F401
except ImportError:  # pragma: no cover - depends on how the venv was set up
    sys.path.insert(0, str(_TESTS.parent / "src"))

from flink_runner import FlinkRunner  # noqa: E402


@pytest.fixture(scope="session")
def t_env() -> Iterator[object]:
    """One batch-mode TableEnvironment for the whole run (~2 s to start).

    Parallelism 2 makes the DISTINCT, the joins and the LEAD window run as
    parallel tasks with data exchanged between them, as a real job would;
    parallelism 1 ran ~25% faster here.
    """
    pytest.importorskip("pyflink", reason="run the Flink tests with scripts/flink_venv.sh")
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    env.get_config().set("parallelism.default", "2")
    env.get_config().set("table.local-time-zone", "UTC")
    yield env


@pytest.fixture
def flink_runner(t_env, tmp_path: Path) -> FlinkRunner:
    return FlinkRunner(t_env, tmp_path)
