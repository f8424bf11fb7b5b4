"""The gate: pass/warn/fail on the quarantined share, per-rule fail_above, warn and abort rules."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.conftest import run_cli
from tests.engines.routing_harness import make_contract, run, write_rows

pytestmark = pytest.mark.duckdb


def setup(root: Path, n_bad: int, n: int = 100, rules=None, gate=None) -> Path:
    rows = [{"id": i, "a": (-1 if i < n_bad else 1), "b": 1, "k": "x"} for i in range(n)]
    write_rows(root / "data.json", rows)
    write_rows(root / "ref.json", [{"k": "x"}])
    return make_contract(
        root,
        rules or [{"name": "a_pos", "expect": "a > 0"}],
        gate=gate or {"warn_above": 0.01, "fail_above": 0.05},
    )


@pytest.mark.parametrize(
    "n_bad, status, code", [(1, "pass", 0), (2, "warn", 0), (5, "warn", 0), (6, "fail", 1)]
)
def test_share_thresholds(tmp_path, n_bad, status, code):
    r = run(setup(tmp_path, n_bad))
    assert (r.status, r.exit_code) == (status, code)


def test_failed_gate_withholds_clean_but_publishes_quarantine(tmp_path):
    r = run(setup(tmp_path, 50))
    assert r.status == "fail"
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM clean").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM dlq").fetchone()[0] == 50
    assert r.metrics["ledger"]["balanced"] and r.metrics["ledger"]["clean"] == 50
    assert r.metrics["clean_published"] == 0


def test_per_rule_fail_above(tmp_path):
    rules = [{"name": "a_pos", "expect": "a > 0", "fail_above": 0.001}]
    r = run(setup(tmp_path, 1, rules=rules))  # 1% overall passes the share gate …
    assert r.status == "fail"  # … but the rule's own threshold fails the run
    assert any(
        lv["check"] == "rule:a_pos" and lv["status"] == "fail" for lv in r.metrics["gate"]["levels"]
    )


def test_warn_rule_keeps_row_clean_and_flags_it(tmp_path):
    rules = [{"name": "a_pos", "expect": "a > 0", "on_fail": "warn"}]
    r = run(setup(tmp_path, 30, rules=rules))
    assert r.status == "pass"
    assert r.metrics["rules"]["a_pos"]["failed"] == 30
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM clean").fetchone()[0] == 100
    assert (
        con.execute(
            "SELECT count(*) FROM clean WHERE list_contains(_warnings, 'a_pos')"
        ).fetchone()[0]
        == 30
    )


def test_abort_rule_fails_on_any_violation(tmp_path):
    rules = [{"name": "a_pos", "expect": "a > 0", "on_fail": "abort"}]
    r = run(setup(tmp_path, 1, rules=rules, gate={"warn_above": 0.5, "fail_above": 0.9}))
    assert r.status == "fail" and r.exit_code == 1


def test_cli_exit_codes_and_warn_line(tmp_path):
    c = setup(tmp_path, 3)
    r = run_cli("run", str(c), "--logical-date", "2024-01-01")
    assert r.returncode == 0 and "warning: gate WARN" in r.stderr
    c2 = setup(tmp_path / "f", 10)
    r2 = run_cli("run", str(c2), "--json")
    assert r2.returncode == 1 and json.loads(r2.stdout)["status"] == "fail"
    assert "gate FAILED" in r2.stderr
