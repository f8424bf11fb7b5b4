"""``sluicegate dlq`` as an operator meets it: list, show, fix, mark, recycle, ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import copy_orders_example, run_cli

pytestmark = pytest.mark.duckdb
DAY = "2024-01-01"


@pytest.fixture
def orders(tmp_path: Path) -> str:
    contract = str(copy_orders_example(tmp_path / "orders") / "contract.yml")
    r = run_cli("run", contract, "--logical-date", DAY, "-q")
    assert r.returncode == 0, r.stderr
    return contract


def cli_json(*args: str, code: int = 0) -> dict:
    r = run_cli(*args, "--json")
    assert r.returncode == code, r.stderr
    return json.loads(r.stdout)


def by_oid(contract: str) -> dict[int, dict]:
    return {row["oid"]: row for row in cli_json("dlq", "list", contract)["rows"]}


def test_list_json_has_source_columns_and_dlq_fields(orders):
    doc = cli_json("dlq", "list", orders)
    assert doc["count"] == 8 and doc["by_status"]["quarantined"] == 8
    row = doc["rows"][0]
    for key in ("oid", "cid", "amt", "ots", "_source_file", "_source_line", "_reason", "_run_id"):
        assert key in row
    for key in ("_dlq_sk", "_dlq_source_table", "_dlq_status", "_dlq_attempts", "_dlq_timestamp"):
        assert key in row
    assert row["_dlq_source_table"] == "orders_raw"
    assert isinstance(row["_dlq_failed_rules"], list) and json.loads(row["_row_data"])["oid"]
    only = cli_json("dlq", "list", orders, "--reason", "null_customer")
    assert {r["oid"] for r in only["rows"]} == {2, 8, 12}


def test_fix_two_rows_recycle_and_the_ledger_changes(orders):
    rows = by_oid(orders)
    before = cli_json("dlq", "ledger", orders)
    assert before["balanced"] and before["totals"]["clean_table"] == 4
    a = cli_json("dlq", "fix", orders, rows[2]["_dlq_sk"], "--set", "cid=10", "--by", "alice")
    b = cli_json("dlq", "fix", orders, rows[3]["_dlq_sk"], "--set", "amt=30", "--by", "alice")
    assert a["count"] == b["count"] == 1 and a["status"] == "fixed"
    out = cli_json("dlq", "recycle", orders, "--by", "bob")
    assert (out["considered"], out["recycled"], out["requarantined"]) == (2, 2, 0)
    led = out["ledger"]
    assert led["balanced"] and led["totals"]["recycled"] == 2
    assert led["totals"]["clean_table"] == 6 and led["recycled"]["outbox"] == 2
    (run,) = led["runs"]
    assert run["raw"] == run["clean"] + run["quarantined"] + run["recycled"] + run["duplicates"]
    again = cli_json("dlq", "recycle", orders)
    assert again["recycled"] == 0 and again["ledger"]["totals"]["clean_table"] == 6
    shown = cli_json("dlq", "show", orders, rows[2]["_dlq_sk"])
    assert shown["row"]["_dlq_status"] == "recycled" and shown["row"]["cid"] == 10
    assert [(x["action"], x["changed_by"]) for x in shown["audit"]] == [
        ("fix", "alice"),
        ("recycle", "bob"),
    ]


def test_injected_statement_in_where_is_refused(orders):
    r = run_cli("dlq", "fix", orders, "--where", "1=1; DROP TABLE x", "--set", "amt=1")
    assert r.returncode == 2
    assert "one expression, found 2 statements" in r.stderr and "Traceback" not in r.stderr
    r = run_cli(
        "dlq", "fix", orders, "--where", "oid IN (SELECT oid FROM good_orders)", "--set", "amt=1"
    )
    assert r.returncode == 2 and "--where" in r.stderr
    assert cli_json("dlq", "list", orders)["by_status"]["fixed"] == 0


def test_bulk_fix_and_reject_are_counted(orders):
    fixed = cli_json("dlq", "fix", orders, "--where", "amt = 0", "--set", "amt=1")
    assert fixed["count"] == 2  # oids 4 and 9
    rows = by_oid(orders)
    rejected = cli_json("dlq", "mark", orders, rows[6]["_dlq_sk"], "--status", "rejected")
    assert rejected["count"] == 1
    out = cli_json("dlq", "recycle", orders)
    # oid 4 (cid 11) passes; oid 9 (cid 98, unknown) goes back with a fresh reason
    assert (out["recycled"], out["requarantined"]) == (1, 1)
    assert out["requarantined_rows"][0]["_reason"] == "unknown_customer"
    assert out["requarantined_rows"][0]["_dlq_attempts"] == 2
    led = out["ledger"]
    assert led["totals"]["rejected"] == 1 and led["balanced"]


def test_bad_value_unknown_key_and_missing_warehouse_are_clean_errors(orders, tmp_path):
    key = by_oid(orders)[5]["_dlq_sk"]
    r = run_cli("dlq", "fix", orders, key, "--set", "amt=12abc")
    assert r.returncode == 2 and "not a valid INTEGER" in r.stderr
    r = run_cli("dlq", "show", orders, "-123")  # keys are signed: -123 is a key, not an option
    assert r.returncode == 2 and "no DLQ row with key -123" in r.stderr
    fresh = copy_orders_example(tmp_path / "fresh")
    r = run_cli("dlq", "list", str(fresh / "contract.yml"))
    assert r.returncode == 2 and "run the contract first" in r.stderr
    assert "Traceback" not in r.stderr


def test_human_output_lists_rows_and_the_ledger(orders):
    r = run_cli("dlq", "list", orders, "--status", "quarantined")
    key = by_oid(orders)[2]["_dlq_sk"]
    assert r.returncode == 0 and "null_customer" in r.stdout and f" {key}  " in r.stdout
    assert f"{DAY}  run " in r.stdout and "orders.json:2" in r.stdout
    r = run_cli("dlq", "ledger", orders)
    assert r.returncode == 0 and "balanced" in r.stdout and "raw = clean" in r.stdout
