"""Quality facts: one per rule and built-in reason, one per governed check; each governed
check is driven to warn or fail here, and metrics are reconciled with Python's Decimal."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run import pipeline
from sluicegate.run.bind import schema_fingerprint
from sluicegate.run.facts import CHECKS
from tests.engines.engine_params import warehouse_name
from tests.engines.test_publish import facts_of, feed, govern_contract, query, run, write_rows

pytestmark = pytest.mark.duckdb

ISSUE_COLUMNS = {
    "run_id",
    "check_id",
    "logical_date",
    "kind",
    "version",
    "owner",
    "threshold_warn",
    "threshold_fail",
    "severity",
    "status",
    "metric",
    "diagnostic",
}


def test_facts_table_has_the_issue_columns_and_every_check(tmp_path, engine):
    c = govern_contract(tmp_path, engine=engine)
    write_rows(tmp_path / "data.json", feed(80, bad=1))
    r = run(c)
    f = facts_of(tmp_path / warehouse_name(engine))
    cols = set(next(iter(f.values())))  # the table's columns, as the engine reads them
    assert ISSUE_COLUMNS <= cols and {"evaluated_at", "run_started_at", "failed"} <= cols
    assert set(CHECKS) <= set(f)
    assert {"rule:a_pos", "builtin:corrupt_record", "builtin:type_mismatch"} <= set(f)
    # 1 of 80 → exactly 0.0125 (Decimal), not float noise
    assert f["quarantine_share"]["metric"] == str(Decimal(1) / Decimal(80)) == "0.0125"
    assert f["rule:a_pos"]["metric"] == "0.0125" and f["rule:a_pos"]["failed"] == 1
    assert f["quarantine_share"]["threshold_warn"] == "0.1"
    assert all(v["logical_date"] == dt.date(2024, 1, 1) for v in f.values())
    assert all(v["status"] in ("pass", "warn", "fail") for v in f.values())
    assert r.status == "pass"


@pytest.mark.parametrize("bad, status", [(0, "pass"), (1, "warn"), (3, "fail")])
def test_rule_fact_reconciles_with_an_independent_count(tmp_path, bad, status):
    c = govern_contract(tmp_path, gate={"warn_above": 0.1, "fail_above": 0.3})
    rows = feed(10, bad=bad) + [{"id": 50 + i, "a": None, "k": "x"} for i in range(bad)]
    write_rows(tmp_path / "data.json", rows)
    run(c)
    failing = sum(1 for r in rows if not (r["a"] is not None and r["a"] > 0))
    share = Decimal(failing) / Decimal(len(rows))
    f = facts_of(tmp_path / "wh.duckdb")["rule:a_pos"]
    assert f["failed"] == failing and f["evaluated"] == len(rows)
    assert Decimal(f["metric"]) == share.quantize(Decimal("0.000001"))
    assert f["status"] == status


def test_source_available_fails_on_an_empty_source_folder(tmp_path):
    (tmp_path / "in").mkdir()
    c = govern_contract(tmp_path, path="in")
    r = run(c)
    f = facts_of(tmp_path / "wh.duckdb")
    assert f["source_available"]["status"] == "fail"
    assert f["source_available"]["diagnostic"] == "SOURCE_NO_FILES"
    assert (r.status, r.exit_code) == ("fail", 1)  # an error-severity check decides the run


def test_schema_exact_fails_on_a_fingerprint_other_than_the_expected(tmp_path):
    c = govern_contract(tmp_path, source={"expected_fingerprint": "0" * 64})
    write_rows(tmp_path / "data.json", feed(10, bad=0))
    r = run(c)
    f = facts_of(tmp_path / "wh.duckdb")["schema_exact"]
    assert (f["status"], f["diagnostic"]) == ("fail", "SCHEMA_FINGERPRINT_MISMATCH")
    assert r.status == "fail"
    assert query(tmp_path / "wh.duckdb", "SELECT count(*) FROM clean") == [(0,)]


def test_schema_exact_passes_with_the_right_expected_fingerprint(tmp_path):
    c = govern_contract(tmp_path)
    fp = schema_fingerprint(load_contract(c).contract.source)
    c = govern_contract(tmp_path, source={"expected_fingerprint": fp})
    write_rows(tmp_path / "data.json", feed(10, bad=0))
    assert run(c).status == "pass"
    assert facts_of(tmp_path / "wh.duckdb")["schema_exact"]["status"] == "pass"


def test_schema_exact_warns_on_drift_and_on_a_changed_schema(tmp_path):
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", [{**r, "extra": 1} for r in feed(10, bad=0)])
    r = run(c)
    f = facts_of(tmp_path / "wh.duckdb")["schema_exact"]
    assert (f["status"], f["diagnostic"]) == ("warn", "SCHEMA_DRIFT") and "extra" in f["detail"]
    assert r.status == "warn" and r.exit_code == 0
    # a changed declaration (same table shape): the fingerprint differs from the last run's
    c = govern_contract(
        tmp_path,
        columns={"id": "BIGINT", "a": {"type": "INTEGER", "nullable": False}, "k": "VARCHAR"},
    )
    r2 = run(c, "2024-01-02")
    f2 = facts_of(tmp_path / "wh.duckdb", r2.metrics["run_id"])["schema_exact"]
    assert (f2["status"], f2["diagnostic"]) == ("warn", "SCHEMA_CHANGED")


@pytest.mark.parametrize("on_stale, status", [("warn", "warn"), ("fail", "fail")])
def test_freshness_judged_at_the_end_of_the_logical_date(tmp_path, on_stale, status):
    cols = {"id": "BIGINT", "a": "INTEGER", "k": "VARCHAR", "ts": "TIMESTAMP"}
    fresh = {"freshness": {"column": "ts", "max_age": "36h", "on_stale": on_stale}}
    c = govern_contract(tmp_path, columns=cols, source=fresh)
    rows = [{**r, "ts": "2024-01-01 06:00:00"} for r in feed(10, bad=0)]
    rows[0]["ts"] = "2099-01-01 00:00:00"  # a quarantined future value must not count …
    rows[0]["a"] = -1
    write_rows(tmp_path / "data.json", rows)
    r = run(c, "2024-01-01")
    f = facts_of(tmp_path / "wh.duckdb", r.metrics["run_id"])["freshness"]
    assert f["status"] == "pass" and f["metric"] == str(18 * 3600)  # 06:00 → 24:00
    r = run(c, "2024-01-03")  # the same data two days later: 66 h > 36 h
    f = facts_of(tmp_path / "wh.duckdb", r.metrics["run_id"])["freshness"]
    assert (f["status"], f["diagnostic"], f["metric"]) == (
        status,
        "FRESHNESS_STALE",
        str(66 * 3600),
    )
    assert r.status == status
    assert f[f"threshold_{on_stale}"] == str(36 * 3600)


def test_freshness_with_no_values_is_stale(tmp_path):
    cols = {"id": "BIGINT", "a": "INTEGER", "k": "VARCHAR", "ts": "TIMESTAMP"}
    c = govern_contract(
        tmp_path, columns=cols, source={"freshness": {"column": "ts", "max_age": "1d"}}
    )
    write_rows(tmp_path / "data.json", feed(5, bad=0))
    run(c)
    f = facts_of(tmp_path / "wh.duckdb")["freshness"]
    assert (f["status"], f["diagnostic"]) == ("warn", "FRESHNESS_NO_VALUES")


def test_invalid_share_fails_on_unreadable_records(tmp_path):
    c = govern_contract(tmp_path, gate={"warn_above": 0.1, "fail_above": 0.3})
    rows = feed(6, bad=0) + ["{not json", '{"id": "x1", "a": 1, "k": "x"}', "[1,2]", "{"]
    write_rows(tmp_path / "data.json", rows)
    r = run(c)
    f = facts_of(tmp_path / "wh.duckdb")
    assert f["invalid_share"]["failed"] == 4 and f["invalid_share"]["metric"] == "0.4"
    assert f["invalid_share"]["status"] == "fail" and r.status == "fail"
    assert f["builtin:corrupt_record"]["failed"] == 3


def test_invalid_share_excludes_rule_failures(tmp_path):
    c = govern_contract(tmp_path, gate={"warn_above": 0.1, "fail_above": 0.3})
    write_rows(tmp_path / "data.json", feed(10, bad=2))
    run(c)
    f = facts_of(tmp_path / "wh.duckdb")
    assert f["invalid_share"]["status"] == "pass" and f["quarantine_share"]["status"] == "warn"


def test_quarantine_share_warns(tmp_path):
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(10, bad=2))
    r = run(c)
    f = facts_of(tmp_path / "wh.duckdb")["quarantine_share"]
    assert (f["status"], f["metric"], r.status) == ("warn", "0.2", "warn")


def test_clean_nonempty_fails_without_failing_the_run(tmp_path):
    c = govern_contract(tmp_path, gate={"warn_above": 1.0, "fail_above": 1.0})
    write_rows(tmp_path / "data.json", feed(5, bad=5))
    r = run(c)
    f = facts_of(tmp_path / "wh.duckdb")["clean_nonempty"]
    assert (f["status"], f["severity"], f["diagnostic"]) == ("fail", "warning", "CLEAN_EMPTY")
    assert r.status == "pass"  # severity warning: reported, never decides the run


def test_output_readback_fails_when_computed_counts_disagree(tmp_path, monkeypatch, engine):
    """Counts computed in the route stage that disagree with the tables read back."""
    c = govern_contract(tmp_path, engine=engine)
    write_rows(tmp_path / "data.json", feed(10, bad=1))
    real_route = pipeline.stage_route

    def stage_route(ctx):  # same name: the stage's timing key stays "route"
        real_route(ctx)
        ctx.counts.clean += 1
        ctx.counts.quarantined -= 1

    stages = tuple(stage_route if s is real_route else s for s in pipeline.STAGES)
    assert stages != pipeline.STAGES
    monkeypatch.setattr(pipeline, "STAGES", stages)
    r = run(c)
    assert r.status == "ledger_violation"
    got = {f["check_id"]: f["status"] for f in r.metrics["facts"]}
    assert got["output_readback"] == "fail" and got["ledger_conserved"] == "pass"


def test_abort_rule_fact_fails_on_one_violation(tmp_path):
    rules = [{"name": "a_pos", "expect": "a > 0", "on_fail": "abort"}]
    c = govern_contract(tmp_path, rules=rules, gate={"warn_above": 0.5, "fail_above": 0.9})
    write_rows(tmp_path / "data.json", feed(10, bad=1))
    r = run(c)
    f = facts_of(tmp_path / "wh.duckdb")["rule:a_pos"]
    assert (f["status"], f["diagnostic"], f["threshold_fail"], f["owner"]) == (
        "fail",
        "RULE_ABORT_VIOLATED",
        "0",
        "team@example.com",  # the contract's owner when the rule names none
    )
    assert r.status == "fail"
