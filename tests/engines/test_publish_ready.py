"""Upstream readiness: without the ``source.ready_when`` marker a run exits 4 and
publishes nothing — no warehouse, no metrics, no lock left behind."""

from __future__ import annotations

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import NotReadyError
from sluicegate.run import ready as ready_m
from sluicegate.run.metrics import lock_path
from tests.conftest import run_cli
from tests.engines.test_publish import feed, govern_contract, query, write_rows

pytestmark = pytest.mark.duckdb


def folder_contract(tmp_path, marker="_SUCCESS"):
    c = govern_contract(tmp_path, path="landing/${logical_date}", source={"ready_when": marker})
    write_rows(tmp_path / "landing/2024-01-01/part-0.json", feed(10, bad=0))
    return c


def test_missing_marker_exits_4_and_publishes_nothing(tmp_path):
    c = folder_contract(tmp_path)
    r = run_cli("run", str(c), "--logical-date", "2024-01-01")
    assert r.returncode == 4, r.stderr
    assert "not ready" in r.stderr and "_SUCCESS" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "wh.duckdb").exists()
    assert not (tmp_path / "wh.runs").exists()


def test_marker_present_runs_and_the_marker_is_not_a_record(tmp_path):
    c = folder_contract(tmp_path)
    (tmp_path / "landing/2024-01-01/_SUCCESS").write_text("")
    r = run_cli("run", str(c), "--logical-date", "2024-01-01", "--json")
    assert r.returncode == 0, r.stderr
    assert query(tmp_path / "wh.duckdb", "SELECT count(*) FROM clean") == [(10,)]
    assert not lock_path(load_contract(c, logical_date="2024-01-01")).exists()


def test_marker_is_per_logical_date_folder(tmp_path):
    c = folder_contract(tmp_path)
    (tmp_path / "landing/2024-01-01/_SUCCESS").write_text("")
    with pytest.raises(NotReadyError, match="2024-01-02"):
        ready_m.check_ready(load_contract(c, logical_date="2024-01-02"))


def test_marker_glob_and_marker_next_to_a_file_source(tmp_path):
    c = govern_contract(tmp_path, source={"ready_when": "data.json.done*"})
    write_rows(tmp_path / "data.json", feed(3, bad=0))
    loaded = load_contract(c)
    with pytest.raises(NotReadyError):
        ready_m.check_ready(loaded)
    (tmp_path / "data.json.done-20240101").write_text("")
    assert ready_m.check_ready(loaded).name == "data.json.done-20240101"


def test_mutant_readiness_not_checked_is_caught(tmp_path, monkeypatch):
    from sluicegate.run import pipeline  # noqa: F401 - the pipeline imports check_ready lazily

    monkeypatch.setattr(ready_m, "check_ready", lambda loaded: None)
    c = folder_contract(tmp_path)
    from tests.engines.test_publish import run

    run(c)  # without the check, a half-written folder would be published
    assert (tmp_path / "wh.duckdb").exists()


def test_airflow_example_compiles_and_retries_exactly_the_retryable_codes():
    """The DAG is not run in CI (no Airflow here); it must parse, and its retry set must
    be the codes docs/exit-codes.md says a retry helps with: not ready, locked, and an
    internal error (safe to rerun; helps when the environment was the cause)."""
    import ast

    from sluicegate.errors import EXIT_INTERNAL, EXIT_LOCKED, EXIT_NOT_READY
    from tests.conftest import REPO

    path = REPO / "examples/airflow/sluicegate_dag.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    retry = next(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "RETRY_LATER"
    )
    assert {k.value for k in retry.keys} == {EXIT_NOT_READY, EXIT_LOCKED, EXIT_INTERNAL}
