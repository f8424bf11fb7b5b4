"""Publish, micro-batches and facts — the same runs on every engine, against one oracle.

The landing feed of tests/engines/test_incremental.py (three waves of files with
duplicates across waves, corrupt lines and failing rows) is run as micro-batches, one
wave at a time; every record's outcome is compared with the oracle computed from the
files by plain Python, not by an engine. A batch rerun of a date must replace its rows
(publish), and the facts table must hold exactly the run's facts.
"""

from __future__ import annotations

from pathlib import Path

from sqlglot import exp

from sluicegate.compile.contract_check import load_contract
from sluicegate.compile.facts import RUNS_TABLE
from sluicegate.run.incremental import FILES_TABLE
from sluicegate.run.pipeline import run_contract
from tests.engines.test_incremental import ALL_FILES, DAY, drop_wave, oracle, stream_contract


def _warehouse(engine_name: str) -> str:
    return "inc.duckdb" if engine_name == "duckdb" else "inc_wh"


def _outcomes(eng) -> dict[str, set]:  # noqa: ANN001
    clean = {
        (r[0], r[1], int(r[2]))
        for r in eng.fetch(exp.select("id", "_source_file", "_source_line").from_("clean"))
    }
    dlq = {
        (r[0], r[1], int(r[2]))
        for r in eng.fetch(exp.select("id", "_source_file", "_source_line").from_("dlq"))
    }
    dups = {
        (r[0], int(r[1]), r[2], int(r[3]))
        for r in eng.fetch(
            exp.select(
                "_source_file", "_source_line", "_kept_source_file", "_kept_source_line"
            ).from_("dups")
        )
    }
    return {"clean": clean, "dlq": dlq, "dups": dups}


def test_micro_batches_route_every_record_as_the_oracle(engine_name, open_test_engine, tmp_path):
    contract = stream_contract(tmp_path, warehouse=_warehouse(engine_name))
    landing = tmp_path / "landing"
    statuses = []
    for wave in range(3):
        drop_wave(landing, wave)
        r = run_contract(
            load_contract(contract, logical_date=DAY), engine_name=engine_name, incremental=True
        )
        statuses.append(r.status)
        assert r.metrics["ledger"]["balanced"], r.metrics
    again = run_contract(
        load_contract(contract, logical_date=DAY), engine_name=engine_name, incremental=True
    )
    assert again.status == "empty" and again.exit_code == 0
    assert "fail" not in statuses and "ledger_violation" not in statuses

    eng = open_test_engine(tmp_path / _warehouse(engine_name))
    assert _outcomes(eng) == oracle(landing, ALL_FILES)
    files = eng.fetch(exp.select("path").from_(FILES_TABLE).order_by("path"))
    assert [Path(p).name for (p,) in files] == sorted(ALL_FILES)


def test_a_rerun_of_a_date_replaces_its_rows(engine_name, open_test_engine, tmp_path):
    contract = stream_contract(tmp_path, warehouse=_warehouse(engine_name))
    landing = tmp_path / "landing"
    for wave in range(3):
        drop_wave(landing, wave)
    first = run_contract(load_contract(contract, logical_date=DAY), engine_name=engine_name)
    second = run_contract(load_contract(contract, logical_date=DAY), engine_name=engine_name)
    assert first.metrics["run_id"] == second.metrics["run_id"]
    assert first.metrics["ledger"] == second.metrics["ledger"]

    eng = open_test_engine(tmp_path / _warehouse(engine_name))
    assert _outcomes(eng) == oracle(landing, ALL_FILES)
    runs = eng.fetch(exp.select("run_id").from_(RUNS_TABLE))
    assert runs == [(first.metrics["run_id"],)]


def test_the_facts_table_holds_exactly_the_runs_facts(engine_name, open_test_engine, tmp_path):
    contract = stream_contract(tmp_path, warehouse=_warehouse(engine_name))
    drop_wave(tmp_path / "landing", 0)
    r = run_contract(load_contract(contract, logical_date=DAY), engine_name=engine_name)
    eng = open_test_engine(tmp_path / _warehouse(engine_name))
    stored = eng.fetch(exp.select("check_id", "status").from_("facts").order_by("check_id"))
    assert stored == sorted((f["check_id"], f["status"]) for f in r.metrics["facts"])
    checks = {f["check_id"] for f in r.metrics["facts"]}
    assert {"ledger_conserved", "output_readback", "quarantine_share"} <= checks
