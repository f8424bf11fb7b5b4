"""Mutants of the compiler must be caught: a silent drop, overlapping outputs, a
mislabelled reason, and NULL-escaping predicates. Each mutant is applied by
monkeypatching one compiler function; the ledger or the reconciliation must fail."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from sqlglot import exp

from sluicegate.compile import outputs as out_c
from sluicegate.compile import render as render_c
from sluicegate.compile import route as route_c
from sluicegate.compile.contract_check import load_contract
from sluicegate.run.pipeline import run_contract
from tests.conftest import copy_orders_example
from tests.engines.test_orders_e2e import ORACLE_BAD, ORACLE_GOOD

pytestmark = pytest.mark.duckdb


def reconcile(root: Path) -> list[str]:
    """Problems between the warehouse and the independent seed-000 oracle ([] = agree)."""
    data = root / "data"
    args = [str(data / "orders.json"), str(data / "customers.json")]
    oracle = duckdb.connect()
    want_good = [r[0] for r in oracle.execute(ORACLE_GOOD, args).fetchall()]
    want_bad = oracle.execute(ORACLE_BAD, args).fetchall()
    wh = duckdb.connect(str(root / "warehouse.duckdb"), read_only=True)
    try:
        if not wh.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name='good_orders'"
        ).fetchone()[0]:
            return ["nothing published"]
        got_good = [r[0] for r in wh.execute("SELECT oid FROM good_orders ORDER BY 1").fetchall()]
        got_bad = wh.execute("SELECT oid, _reason FROM quarantine ORDER BY 1").fetchall()
    finally:
        wh.close()
    problems = []
    if got_good != want_good:
        problems.append(f"good differs: {got_good} vs {want_good}")
    if got_bad != want_bad:
        problems.append(f"quarantine differs: {got_bad} vs {want_bad}")
    return problems


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    return copy_orders_example(tmp_path / "o")


def run_orders(root: Path):
    return run_contract(load_contract(root / "contract.yml", logical_date="2024-01-01"))


def test_unmutated_compiler_reconciles(orders):
    r = run_orders(orders)
    assert r.status != "ledger_violation"
    assert reconcile(orders) == []


def test_mutant_silent_drop_is_caught(orders, monkeypatch):
    real = out_c.quarantine_select

    def dropping(*a, **kw):  # quarantine forgets the unknown_customer rows
        return real(*a, **kw).where(
            exp.NEQ(this=render_c.col("_reason"), expression=render_c.lit("unknown_customer"))
        )

    monkeypatch.setattr(out_c, "quarantine_select", dropping)
    r = run_orders(orders)
    assert r.status == "ledger_violation" and r.exit_code == 3
    assert "conservation" in r.metrics["error"]
    assert reconcile(orders) != []  # and nothing was published


def test_mutant_overlapping_outputs_is_caught(orders, monkeypatch):
    real = out_c.clean_select

    def overlapping(routed, contract, partitions, rules, run_id, day):  # clean = passes rule 1 only
        sel = real(routed, contract, partitions, rules, run_id, day)
        return sel.where(render_c.col(rules[0].flag), append=False)

    monkeypatch.setattr(out_c, "clean_select", overlapping)
    r = run_orders(orders)
    assert r.status == "ledger_violation"
    assert "disjoint" in r.metrics["error"]


def test_mutant_mislabelled_reason_is_caught(orders, monkeypatch):
    real = route_c.checks

    def swapped(rules):  # priority of the last two rules swapped
        cs = real(rules)
        cs[-1], cs[-2] = cs[-2], cs[-1]
        return cs

    monkeypatch.setattr(route_c, "checks", swapped)
    r = run_orders(orders)
    assert r.status != "ledger_violation"  # counts still add up …
    assert any("quarantine differs" in p for p in reconcile(orders))  # … but reasons are wrong


def test_mutant_null_escaping_predicate_is_caught(tmp_path, monkeypatch):
    # Without IS TRUE a NULL rule result is neither clean nor quarantined (seed 004's flaw).
    from tests.engines.routing_harness import make_contract, run, write_rows

    write_rows(
        tmp_path / "data.json",
        [{"id": 1, "a": None, "b": 1, "k": "x"}, {"id": 2, "a": 3, "b": 1, "k": "x"}],
    )
    write_rows(tmp_path / "ref.json", [{"k": "x"}])
    contract = make_contract(tmp_path, [{"name": "a_pos", "expect": "a > 0"}])
    assert run(contract).metrics["ledger"]["quarantined"] == 1  # the real compiler routes the NULL
    monkeypatch.setattr(route_c, "is_true", lambda e: exp.paren(e, copy=False))
    r = run(contract, day="2024-01-02")
    assert r.status == "ledger_violation" and r.exit_code == 3
