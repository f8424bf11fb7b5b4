"""Fix, mark, recycle: quarantined → fixed → recycled, or back to quarantined; rejected counts."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from sluicegate.dlq.ledger import dlq_ledger
from sluicegate.dlq.lifecycle import fix, mark
from sluicegate.errors import UsageError
from sluicegate.run.recycle import recycle
from tests.engines.test_dlq_harness import (
    DAY,
    TS,
    execute,
    expected_key,
    inbox,
    make_shop,
    query,
    run,
    store,
)

pytestmark = pytest.mark.duckdb


@pytest.fixture
def shop(tmp_path):
    c = make_shop(tmp_path)
    run(c)
    return c


@pytest.fixture
def any_shop(tmp_path, engine):
    """The shop, run once, on each engine (tests/engines/engine_params.py)."""
    c = make_shop(tmp_path, engine=engine)
    run(c)
    return c


def sk(shop, line: int) -> str:
    return inbox(shop)[line]["_dlq_sk"]


def do_fix(shop, line: int, **sets: str | None) -> None:
    key = sk(shop, line)
    with store(shop) as s:
        fix(s, keys=[key], where=None, sets=sets, by="ann")


def do_recycle(shop) -> dict:
    with store(shop) as s:
        return recycle(s, by="bob")


def ledger(shop) -> dict:
    with store(shop) as s:
        return dlq_ledger(s)


def clean_rows(shop) -> list[tuple]:
    return query(
        shop,
        "SELECT oid, cid, amt, ts, _source_file, _source_line, _logical_date, _run_id, "
        "_recycled_from FROM clean ORDER BY _source_line",
    )


def test_fix_then_recycle_moves_the_row_to_clean_with_its_lineage(any_shop):
    shop = any_shop
    key = sk(shop, 2)
    do_fix(shop, 2, amt="5.5")
    row = inbox(shop)[2]
    assert row["_dlq_status"] == "fixed" and row["amt"] == Decimal("5.50")
    assert row["_dlq_sk"] == key  # the key never changes
    assert '"amt":5.50' in row["_row_data"]
    out = do_recycle(shop)
    assert (out["considered"], out["recycled"], out["requarantined"]) == (1, 1, 0)
    assert out["recycled_keys"] == [key]
    recycled = [r for r in clean_rows(shop) if r[8] is not None]
    assert recycled == [
        (
            2,
            10,
            Decimal("5.50"),
            dt.datetime(2024, 3, 5, 8, 0),  # the original event time
            row["_source_file"],
            2,
            dt.date.fromisoformat(DAY),
            out["recycle_run_id"],
            key,
        )
    ]
    assert inbox(shop)[2]["_dlq_status"] == "recycled"
    assert query(shop, "SELECT _dlq_sk, _dlq_recycle_run_id FROM dlq_outbox") == [
        (key, out["recycle_run_id"])
    ]
    actions = query(shop, "SELECT action, changed_by FROM dlq_audit WHERE _dlq_sk = ?", [key])
    assert sorted(actions) == [("fix", "ann"), ("recycle", "bob")]
    led = ledger(shop)
    assert led["balanced"], led["violations"]
    assert led["totals"]["recycled"] == 1 and led["totals"]["clean_table"] == 3


def test_recycle_twice_recycles_nothing_the_second_time(shop):
    do_fix(shop, 2, amt="5")
    first = do_recycle(shop)
    tables = {t: query(shop, f"SELECT count(*) FROM {t}")[0][0] for t in ("clean", "dlq_outbox")}
    second = do_recycle(shop)
    assert first["recycled"] == 1
    assert (second["considered"], second["recycled"], second["already_recycled"]) == (0, 0, 0)
    assert {t: query(shop, f"SELECT count(*) FROM {t}")[0][0] for t in tables} == tables


def test_a_still_bad_fix_goes_back_to_quarantine_with_fresh_reasons(any_shop):
    shop = any_shop
    do_fix(shop, 4, cid="12", amt="-1")  # known customer now, but a negative amount
    out = do_recycle(shop)
    assert (out["recycled"], out["requarantined"]) == (0, 1)
    row = inbox(shop)[4]
    assert row["_dlq_status"] == "quarantined" and row["_dlq_attempts"] == 2
    assert row["_reason"] == "positive_amount"
    assert [f["name"] for f in row["_dlq_failed_rules"]] == ["positive_amount"]
    assert [f["name"] for f in row["_failed_rules"]] == ["known_customer"]  # what the run saw
    assert row["cid"] == 12  # the operator's edit is kept for the next attempt
    audit = query(
        shop,
        "SELECT after_json FROM dlq_audit WHERE action = 'requarantine' AND _dlq_sk = ?",
        [row["_dlq_sk"]],
    )
    assert audit == [
        ('{"_dlq_status":"quarantined","_dlq_attempts":2,"_reason":"positive_amount"}',)
    ]
    # a second fix succeeds on the next recycle
    do_fix(shop, 4, amt="1")
    assert do_recycle(shop)["recycled"] == 1
    assert inbox(shop)[4]["_dlq_attempts"] == 2
    assert ledger(shop)["balanced"]


def test_a_rule_that_evaluates_to_null_sends_the_fixed_row_back(shop):
    do_fix(shop, 2, amt=None)  # amt > 0 is NULL: fails, is not dropped
    out = do_recycle(shop)
    assert out["requarantined"] == 1
    assert inbox(shop)[2]["_dlq_status"] == "quarantined"
    assert ledger(shop)["balanced"]


def test_type_mismatch_stays_until_the_bad_column_is_fixed(shop):
    key = sk(shop, 5)
    with store(shop) as s:
        mark(s, keys=[key], where=None, status="fixed", by="ann")
    assert do_recycle(shop)["requarantined"] == 1
    assert inbox(shop)[5]["_reason"] == "type_mismatch"
    do_fix(shop, 5, amt="3")
    row = inbox(shop)[5]
    assert row["_dlq_rescued_data"] is None and row["_rescued_data"] is not None
    assert do_recycle(shop)["recycled"] == 1


def test_corrupt_line_stays_corrupt_until_given_values(shop):
    key = sk(shop, 6)
    with store(shop) as s:
        mark(s, keys=[key], where=None, status="fixed", by="ann")
    assert do_recycle(shop)["requarantined"] == 1
    assert inbox(shop)[6]["_reason"] == "corrupt_record"
    do_fix(shop, 6, oid="6", cid="10", amt="1", ts="2024-03-05T09:00:00")
    assert do_recycle(shop)["recycled"] == 1
    assert query(shop, "SELECT oid FROM clean WHERE _source_line = 6") == [(6,)]


def test_rejected_rows_are_final_and_counted_in_the_ledger(shop):
    key = sk(shop, 3)
    with store(shop) as s:
        mark(s, keys=[key], where=None, status="rejected", by="ann")
        with pytest.raises(UsageError, match="final"):
            fix(s, keys=[key], where=None, sets={"amt": "1"}, by="ann")
        with pytest.raises(UsageError, match="final"):
            mark(s, keys=[key], where=None, status="fixed", by="ann")
    led = ledger(shop)
    (r,) = led["runs"]
    assert (r["raw"], r["clean"], r["quarantined"], r["rejected"]) == (8, 2, 5, 1)
    assert led["balanced"] and led["totals"]["rejected"] == 1


def test_the_outbox_guards_against_recycling_a_row_twice(shop):
    do_fix(shop, 2, amt="5")
    do_recycle(shop)
    # someone sets the status back by hand: the outbox still says it was recycled
    execute(shop, "UPDATE dlq SET _dlq_status = 'fixed' WHERE _source_line = 2")
    out = do_recycle(shop)
    assert (out["recycled"], out["already_recycled"]) == (0, 1)
    assert query(shop, "SELECT count(*) FROM clean WHERE _source_line = 2")[0][0] == 1
    assert inbox(shop)[2]["_dlq_status"] == "recycled"
    assert ledger(shop)["balanced"]


def test_values_are_checked_with_the_readers_cast_rules(shop):
    key = sk(shop, 2)
    with store(shop) as s:
        for column, value, message in [
            ("amt", "abc", "not a valid DECIMAL"),
            ("cid", "1.5", "not a valid INTEGER"),  # DuckDB's TRY_CAST would round to 2
            ("ts", "05/03/2024", "not a valid TIMESTAMP"),
            ("amount", "1", "did you mean 'amt'"),
            ("_reason", "x", "only declared columns"),
        ]:
            with pytest.raises(UsageError, match=message):
                fix(s, keys=[key], where=None, sets={column: value}, by="ann")
        with pytest.raises(UsageError, match="nullable: false"):
            fix(s, keys=[key], where=None, sets={"oid": None}, by="ann")
        with pytest.raises(UsageError, match="no DLQ row"):
            fix(s, keys=["123"], where=None, sets={"amt": "1"}, by="ann")
    row = inbox(shop)[2]
    assert row["_dlq_status"] == "quarantined" and row["amt"] == Decimal("-5.00")
    audit = "SELECT count(*) FROM information_schema.tables WHERE table_name = 'dlq_audit'"
    if query(shop, audit)[0][0]:
        assert query(shop, "SELECT count(*) FROM dlq_audit")[0][0] == 0


# Texts that are JSON numbers are written as numbers, the rest as strings: the reader's
# text → type rules are what an operator's --set goes through too.
CANDIDATES = ["7", "1.5", "1e3", "-0.005", "12,5", "1_000", "abc", "", "NaN", "99999999999"]


def as_json_value(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def test_fix_accepts_exactly_what_the_reader_accepts(tmp_path):
    """Reconcile ``dlq fix`` with a run: the same text casts to the same value, or neither."""
    lines = [
        {"oid": i, "cid": as_json_value(t), "amt": as_json_value(t), "ts": TS}
        for i, t in enumerate(CANDIDATES, 1)
    ]
    shop = make_shop(tmp_path, lines)
    run(shop)
    read = {
        oid: (cid, amt, rescued)
        for oid, cid, amt, rescued in query(
            shop,
            "SELECT oid, cid, amt, _rescued_data FROM dlq UNION ALL "
            "SELECT oid, cid, amt, NULL FROM clean",
        )
    }
    key = inbox(shop)[min(inbox(shop))]["_dlq_sk"]
    for oid, text in enumerate(CANDIDATES, 1):
        cid, amt, rescued = read[oid]
        for column, value in (("cid", cid), ("amt", amt)):
            reader_ok = not (rescued and f'"{column}"' in rescued)
            with store(shop) as s:
                try:
                    fix(s, keys=[key], where=None, sets={column: text}, by="ann")
                    accepted = True
                except UsageError:
                    accepted = False
            assert accepted == reader_ok, (column, text)
            if accepted:
                got = inbox(shop)[min(inbox(shop))][column]
                assert got == value, (column, text, got, value)


def test_bulk_fix_with_a_checked_predicate(shop):
    keys = [sk(shop, 2), sk(shop, 3)]
    with store(shop) as s:
        res = fix(
            s,
            keys=[],
            where="_reason = 'positive_amount' AND amt < 0",
            sets={"amt": "2"},
            by="ann",
        )
    assert sorted(res.keys) == sorted(keys)
    out = do_recycle(shop)
    assert out["recycled"] == 2
    assert ledger(shop)["balanced"]


@pytest.mark.parametrize(
    "predicate, message",
    [
        ("1=1; DROP TABLE x", "one expression, found 2 statements"),
        ("DROP TABLE dlq", "boolean expression"),
        ("amt > (SELECT max(amt) FROM clean)", "subquery"),
        ("cid IN (SELECT cid FROM clean)", "unknown reference"),
        ("amount > 0", "unknown column 'amount'"),
        ("random() > 0.5", "non-deterministic"),
        ("amt > 0 OR", "not valid SQL"),
    ],
)
def test_bulk_predicates_are_checked_like_rules(shop, predicate, message):
    with store(shop) as s, pytest.raises(UsageError, match=message):
        fix(s, keys=[], where=predicate, sets={"amt": "1"}, by="ann")
    assert query(shop, "SELECT count(*) FROM dlq WHERE _dlq_status <> 'quarantined'")[0][0] == 0
    assert query(shop, "SELECT count(*) FROM clean")[0][0] == 2  # nothing dropped


def test_keys_still_match_the_independent_computation_after_the_lifecycle(shop):
    do_fix(shop, 2, amt="5")
    do_recycle(shop)
    run(shop)  # rerun: matched by the same key
    row = inbox(shop)[2]
    original = {**row, "amt": Decimal("-5.00")}
    assert row["_dlq_sk"] == expected_key(original)


def test_ledger_catches_a_lost_dlq_row_and_a_duplicated_copy(shop):
    do_fix(shop, 2, amt="5")
    do_recycle(shop)
    assert ledger(shop)["balanced"]
    execute(shop, "DELETE FROM dlq WHERE _source_line = 7")
    led = ledger(shop)
    assert not led["balanced"] and led["violations"][0]["check"] == "conservation"
    execute(shop, "INSERT INTO clean SELECT * FROM clean WHERE _recycled_from IS NOT NULL")
    checks = {v["check"] for v in ledger(shop)["violations"]}
    assert checks == {"conservation", "recycled"}
