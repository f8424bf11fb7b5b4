"""The inbox: one row per quarantined record, keyed by lineage, MERGEd so reruns are safe."""

from __future__ import annotations

import json

import pytest

from sluicegate.dlq.ledger import dlq_ledger
from sluicegate.dlq.lifecycle import fix, mark
from sluicegate.run.recycle import recycle
from tests.engines.test_dlq_harness import (
    DAY,
    KINDS,
    LINES,
    expected_key,
    inbox,
    make_shop,
    query,
    run,
    store,
    write_lines,
)
from tests.unit.test_dlq_canonical import reference_json

pytestmark = pytest.mark.duckdb

QUARANTINED_LINES = [2, 3, 4, 5, 6, 7]


@pytest.fixture
def shop(tmp_path):
    return make_shop(tmp_path)


@pytest.fixture
def any_shop(tmp_path, engine):
    """The shop on each engine (tests/engines/engine_params.py)."""
    return make_shop(tmp_path, engine=engine)


def test_every_quarantined_record_has_one_row_with_the_documented_columns(any_shop):
    shop = any_shop
    r = run(shop)
    assert r.metrics["ledger"]["quarantined"] == 6
    rows = inbox(shop)
    assert sorted(rows) == QUARANTINED_LINES
    reasons = {line: row["_reason"] for line, row in rows.items()}
    assert reasons == {
        2: "positive_amount",
        3: "positive_amount",
        4: "known_customer",
        5: "type_mismatch",
        6: "corrupt_record",
        7: "positive_amount",
    }
    for row in rows.values():
        assert row["_dlq_status"] == "quarantined" and row["_dlq_attempts"] == 1
        assert row["_dlq_source_table"] == "orders_raw"
        assert row["_dlq_timestamp"] is not None
        assert row["_run_id"] == r.metrics["run_id"]
        assert row["_dlq_failed_rules"] == row["_failed_rules"]
    assert rows[5]["_dlq_rescued_data"] == '{"amt":"abc"}'
    assert rows[6]["_raw"] == "{not json"


def test_identical_rows_on_two_lines_get_two_rows_and_two_keys(shop):
    run(shop)
    rows = inbox(shop)
    assert LINES[1] == LINES[2]  # the same payload on lines 2 and 3
    a, b = rows[2], rows[3]
    assert (a["oid"], a["cid"], a["amt"]) == (b["oid"], b["cid"], b["amt"])
    assert a["_dlq_sk"] != b["_dlq_sk"]
    assert len({row["_dlq_sk"] for row in rows.values()}) == len(rows)


def test_keys_and_row_data_match_an_independent_computation(shop):
    run(shop)
    for row in inbox(shop).values():
        assert row["_dlq_sk"] == expected_key(row)
        assert row["_row_data"] == reference_json(row, KINDS)


def test_rerun_gives_the_same_keys_and_no_new_rows(any_shop):
    shop = any_shop
    first = run(shop)
    before = {line: row["_dlq_sk"] for line, row in inbox(shop).items()}
    # the run's DLQ counts (one aggregate since issue 22) against the inbox itself
    assert first.metrics["dlq"] == {"inserted": len(before), "rerun": 0, "superseded": 0}
    second = run(shop)
    after = {line: row["_dlq_sk"] for line, row in inbox(shop).items()}
    assert after == before
    assert query(shop, "SELECT count(*) FROM dlq")[0][0] == len(before)
    assert second.metrics["dlq"] == {"inserted": 0, "rerun": len(before), "superseded": 0}


def test_rerun_keeps_operators_work(shop):
    run(shop)
    rows = inbox(shop)
    with store(shop) as s:
        fix(s, keys=[rows[2]["_dlq_sk"]], where=None, sets={"amt": "5"}, by="ann")
        fix(s, keys=[rows[4]["_dlq_sk"]], where=None, sets={"cid": "12"}, by="ann")
        recycle(s, by="ann")
        fix(s, keys=[rows[7]["_dlq_sk"]], where=None, sets={"amt": "2"}, by="ann")
        mark(s, keys=[rows[3]["_dlq_sk"]], where=None, status="rejected", by="ann")
    edited = inbox(shop)
    clean_before = query(shop, "SELECT count(*) FROM clean")[0][0]
    run(shop)
    rerun = inbox(shop)
    for line in (2, 3, 4, 7):
        for column in ("_dlq_status", "_dlq_attempts", "amt", "cid", "_row_data"):
            assert rerun[line][column] == edited[line][column], (line, column)
    assert [rerun[n]["_dlq_status"] for n in (2, 3, 4, 7)] == [
        "recycled",
        "rejected",
        "recycled",
        "fixed",
    ]
    assert query(shop, "SELECT count(*) FROM clean")[0][0] == clean_before
    assert query(shop, "SELECT count(*) FROM clean WHERE _recycled_from IS NOT NULL")[0][0] == 2
    with store(shop) as s:
        led = dlq_ledger(s)
    assert led["balanced"], led["violations"]


def test_two_logical_dates_over_one_file_keep_separate_rows(shop):
    run(shop, "2024-03-05")
    run(shop, "2024-03-06")
    assert query(shop, "SELECT count(*), count(DISTINCT _dlq_sk) FROM dlq")[0] == (12, 12)
    with store(shop) as s:
        led = dlq_ledger(s)
    assert led["balanced"], led["violations"]
    assert [r["quarantined"] for r in led["runs"]] == [6, 6]
    assert led["totals"]["raw"] == 16


def test_rerun_with_changed_input_supersedes_rows_it_no_longer_quarantines(shop):
    run(shop)
    rows = inbox(shop)
    with store(shop) as s:
        fix(s, keys=[rows[2]["_dlq_sk"]], where=None, sets={"amt": "5"}, by="ann")
        recycle(s, by="ann")
    # upstream resends the feed with line 2 corrected: the record is now clean by itself
    fixed_upstream = list(LINES)
    fixed_upstream[1] = {**LINES[1], "amt": 5}
    write_lines(shop.parent, fixed_upstream)
    second = run(shop)
    assert second.metrics["dlq"] == {"inserted": 0, "rerun": 5, "superseded": 1}
    now = inbox(shop)
    assert 2 not in now and sorted(now) == [3, 4, 5, 6, 7]
    gone = rows[2]["_dlq_sk"]
    # the recycled copy and its outbox entry went with it: the record is in clean once
    assert query(shop, "SELECT count(*) FROM clean WHERE _source_line = 2")[0][0] == 1
    assert query(shop, "SELECT count(*) FROM dlq_outbox")[0][0] == 0
    audit = query(
        shop,
        "SELECT action, before_json, after_json FROM dlq_audit WHERE _dlq_sk = ? "
        "ORDER BY changed_at, action",
        [gone],
    )
    assert audit[-1] == ("superseded", '{"_dlq_status":"recycled"}', None)
    with store(shop) as s:
        led = dlq_ledger(s)
    assert led["balanced"], led["violations"]
    assert led["runs"][0]["raw"] == 8 and led["runs"][0]["clean"] == 3


def test_ledger_counts_reruns_once(shop):
    run(shop)
    run(shop)
    with store(shop) as s:
        led = dlq_ledger(s)
    assert len(led["runs"]) == 1
    (r,) = led["runs"]
    assert (r["raw"], r["clean"], r["quarantined"], r["duplicates"]) == (8, 2, 6, 0)
    assert led["runs"][0]["logical_date"] == DAY


def test_a_failed_gate_withholds_clean_rows_and_the_ledger_says_so(tmp_path):
    shop = make_shop(tmp_path)
    doc = json.loads(shop.read_text())
    doc["gate"] = {"warn_above": 0.1, "fail_above": 0.2}
    shop.write_text(json.dumps(doc), encoding="utf-8")
    r = run(shop)
    assert r.status == "fail"
    assert query(shop, "SELECT count(*) FROM clean")[0][0] == 0
    assert query(shop, "SELECT count(*) FROM dlq")[0][0] == 6  # the DLQ is published
    with store(shop) as s:
        led = dlq_ledger(s)
    (row,) = led["runs"]
    assert (row["raw"], row["clean"], row["withheld"], row["quarantined"]) == (8, 0, 2, 6)
    assert led["balanced"], led["violations"]
