"""Mutants of the DLQ must be caught by its tests or its ledger.

Each mutant replaces one function by monkeypatching; the same check that passes on the
real code must then report a problem (or the code's own read-back proof must refuse).
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from sluicegate.compile import outputs as out_c
from sluicegate.dlq import canonical, lifecycle
from sluicegate.dlq import inbox as inbox_mod
from sluicegate.dlq.ledger import dlq_ledger
from sluicegate.dlq.lifecycle import fix
from sluicegate.errors import LedgerError, UsageError
from sluicegate.run import recycle as recycle_mod
from sluicegate.run.pipeline import run_contract
from sluicegate.run.recycle import recycle
from tests.engines.test_dlq_harness import execute, inbox, loaded, make_shop, query, run, store

pytestmark = pytest.mark.duckdb


@pytest.fixture
def shop(tmp_path):
    return make_shop(tmp_path)


def ledger_problems(shop) -> list[str]:
    with store(shop) as s:
        return [f"{v['check']}: {v['detail']}" for v in dlq_ledger(s)["violations"]]


def fix_and_recycle(shop, line: int, **sets: str | None) -> dict:
    key = inbox(shop)[line]["_dlq_sk"]
    with store(shop) as s:
        fix(s, keys=[key], where=None, sets=sets, by="ann")
        return recycle(s, by="ann")


# -- identical payloads on two lines -----------------------------------------------------
def identical_rows_problems(shop) -> list[str]:
    r = run_contract(loaded(shop))
    if r.status == "ledger_violation":
        return [r.metrics["error"]]
    rows = inbox(shop)
    if 2 not in rows or 3 not in rows or rows[2]["_dlq_sk"] == rows[3]["_dlq_sk"]:
        return ["identical payloads collapsed into one DLQ row"]
    return []


def test_real_key_keeps_identical_rows_apart(shop):
    assert identical_rows_problems(shop) == []


def test_mutant_content_only_key_is_caught(shop, monkeypatch):
    def content_only(contract, partitions, dialect, table=None):  # seed 004's key
        fields = canonical.row_fields(contract, partitions, table)
        kept = [f for f in fields if not f.name.startswith("_")]
        return canonical.json_object(kept, dialect)

    monkeypatch.setattr(inbox_mod, "row_json", content_only)
    assert identical_rows_problems(shop) != []


def test_mutant_key_without_logical_date_is_caught(shop, monkeypatch):
    real = canonical.row_fields

    def no_date(contract, partitions, table=None):
        return [f for f in real(contract, partitions, table) if f.name != "_logical_date"]

    monkeypatch.setattr(canonical, "row_fields", no_date)
    run(shop, "2024-03-05")
    run(shop, "2024-03-06")  # the same file for another day takes over the first day's rows
    assert any(p.startswith("conservation") for p in ledger_problems(shop))


# -- exactly-once recycle ------------------------------------------------------------------
def recycle_twice_problems(shop) -> list[str]:
    run(shop)
    fix_and_recycle(shop, 2, amt="5")
    execute(shop, "UPDATE dlq SET _dlq_status = 'fixed' WHERE _source_line = 2")
    with store(shop) as s:
        recycle(s, by="ann")
    problems = ledger_problems(shop)
    if query(shop, "SELECT count(*) FROM clean WHERE _source_line = 2")[0][0] != 1:
        problems.append("the record is in clean more than once")
    return problems


def test_real_recycle_is_exactly_once(shop):
    assert recycle_twice_problems(shop) == []


def test_mutant_recycle_without_outbox_check_is_caught(shop, monkeypatch):
    monkeypatch.setattr(recycle_mod, "already_recycled", lambda outbox: exp.false())
    problems = recycle_twice_problems(shop)
    assert "the record is in clean more than once" in problems
    assert any(p.startswith("recycled") for p in problems)


# -- a fixed row that still fails ------------------------------------------------------------
REAL_MERGE_OUTCOMES = recycle_mod._merge_outcomes


def dropping_merge(inbox: str) -> exp.Merge:
    """Seed 004's flaw: a recycled row that fails again disappears."""
    merge = REAL_MERGE_OUTCOMES(inbox)
    merge.args["whens"].expressions[1] = exp.When(
        matched=True, source=False, then=exp.var("DELETE")
    )
    return merge


@pytest.fixture
def dropping(monkeypatch):
    monkeypatch.setattr(recycle_mod, "_merge_outcomes", dropping_merge)


def test_real_failing_fix_returns_to_quarantine(shop):
    run(shop)
    out = fix_and_recycle(shop, 2, amt="-1")
    assert out["requarantined"] == 1 and inbox(shop)[2]["_dlq_status"] == "quarantined"
    assert ledger_problems(shop) == []


def test_mutant_failing_row_dropped_is_refused_by_the_readback(shop, dropping):
    run(shop)
    with pytest.raises(LedgerError, match="requarantined"):
        fix_and_recycle(shop, 2, amt="-1")
    assert inbox(shop)[2]["_dlq_status"] == "fixed"  # rolled back: nothing lost


def test_mutant_failing_row_dropped_is_caught_by_the_ledger(shop, dropping, monkeypatch):
    monkeypatch.setattr(recycle_mod, "_prove", lambda *a, **k: None)  # no read-back either
    run(shop)
    fix_and_recycle(shop, 2, amt="-1")
    assert 2 not in inbox(shop)
    assert any(p.startswith("conservation") for p in ledger_problems(shop))


# -- reruns and operators' work ----------------------------------------------------------------
def rerun_problems(shop) -> list[str]:
    run(shop)
    fix_and_recycle(shop, 2, amt="5")
    run(shop)
    problems = ledger_problems(shop)
    if inbox(shop)[2]["_dlq_status"] != "recycled":
        problems.append("a rerun reset a recycled row")
    if query(shop, "SELECT count(*) FROM clean WHERE _source_line = 2")[0][0] != 1:
        problems.append("the recycled record is not in clean exactly once")
    return problems


def test_real_rerun_keeps_recycled_rows(shop):
    assert rerun_problems(shop) == []


def test_mutant_rerun_resets_operator_status_is_caught(shop, monkeypatch):
    real = inbox_mod.merge_statement

    def resetting(inbox, source, columns):
        merge = real(inbox, source, columns)
        whens = merge.args["whens"].expressions
        everything = [c for c in columns if c != "_dlq_sk"]
        whens[1] = exp.When(
            matched=True,
            source=False,
            then=exp.Update(
                expressions=[
                    exp.EQ(
                        this=exp.column(c, quoted=True), expression=exp.column(c, "_s", quoted=True)
                    )
                    for c in everything
                ]
            ),
        )
        return merge

    monkeypatch.setattr(inbox_mod, "merge_statement", resetting)
    problems = rerun_problems(shop)
    assert "a rerun reset a recycled row" in problems
    assert any(p.startswith("recycled") for p in problems)


def test_mutant_rerun_deletes_recycled_copies_is_caught(shop, monkeypatch):
    real = out_c.delete_run
    monkeypatch.setattr(
        out_c, "delete_run", lambda table, day, keep_recycled=False, **kw: real(table, day, **kw)
    )
    problems = rerun_problems(shop)
    assert "the recycled record is not in clean exactly once" in problems
    assert any(p.startswith("recycled") for p in problems)


# -- the bulk predicate ------------------------------------------------------------------------
def subquery_predicate_refused(shop) -> bool:
    run(shop)
    with store(shop) as s:
        try:
            fix(s, keys=[], where="amt > (SELECT max(amt) FROM clean)", sets={"amt": "1"}, by="x")
        except UsageError:
            return True
    return False


def test_real_predicate_check_refuses_a_subquery(shop):
    assert subquery_predicate_refused(shop)


def test_mutant_unchecked_predicate_is_caught(shop, monkeypatch):
    monkeypatch.setattr(
        lifecycle, "checked_where", lambda store, text: sqlglot.parse_one(text, read="duckdb")
    )
    assert not subquery_predicate_refused(shop)
