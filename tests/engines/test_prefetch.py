"""The source's lines are split by DuckDB while the bind hashes and counts the same files.

The overlap must not change what a run does: the lines table is built exactly once, by
the bind stage, the raw count still comes from the bind's own byte count, and an error
of the bind (the independent count) is reported rather than the engine's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sluicegate.contract.loader import load_contract
from sluicegate.engines.duckdb_engine import DuckDBEngine
from sluicegate.errors import InputError
from sluicegate.run import bind as bind_s
from sluicegate.run.pipeline import run_contract
from tests.conftest import REPO

pytestmark = pytest.mark.duckdb


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    shutil.copytree(
        REPO / "examples/orders",
        tmp_path / "orders",
        ignore=shutil.ignore_patterns("*.duckdb*", "*.runs"),
    )
    return tmp_path / "orders"


def _lines_statements(profile: list[dict]) -> list[dict]:
    return [
        p for p in profile if p["sql"].startswith('CREATE OR REPLACE TEMPORARY TABLE "_sg_lines"')
    ]


def test_source_lines_are_built_once_during_the_bind(orders: Path):
    loaded = load_contract(orders / "contract.yml", logical_date="2024-01-01")
    result = run_contract(loaded, engine_options={"profile": True})
    built = _lines_statements(result.metrics["profile"])
    assert [p["stage"] for p in built] == ["bind"]
    led = result.metrics["ledger"]
    raw_lines = sum(
        1 for line in (orders / "data/orders.json").read_text().splitlines() if line.strip()
    )
    assert led["raw"] == raw_lines == led["clean"] + led["quarantined"] + led["duplicates"]


def test_a_bind_error_wins_over_the_engine(orders: Path, monkeypatch):
    """Bind and engine both fail: the user sees the bind's error, and the engine's work
    has finished before the run goes on (no statement left running on the connection)."""

    def broken_bind(loaded, files=None):  # noqa: ANN001, ANN202
        raise InputError("cannot read the source (bind)")

    def broken_lines(self, files, table):  # noqa: ANN001, ANN202
        raise RuntimeError("the engine failed too")

    monkeypatch.setattr(bind_s, "bind", broken_bind)
    monkeypatch.setattr(DuckDBEngine, "load_lines", broken_lines)
    loaded = load_contract(orders / "contract.yml", logical_date="2024-01-01")
    with pytest.raises(InputError, match=r"\(bind\)"):
        run_contract(loaded)
