"""Seed 000 end to end: reasons in priority order, reconciled with independent DuckDB SQL."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run.pipeline import run_contract
from tests.conftest import copy_orders_example, run_cli

pytestmark = pytest.mark.duckdb

# The seed's own rules, written independently of sluicegate's compiler.
ORACLE_GOOD = """
SELECT o.oid FROM read_json_auto(?) o
WHERE o.cid IS NOT NULL AND o.amt IS NOT NULL AND o.amt > 0
  AND o.cid IN (SELECT cid FROM read_json_auto(?) WHERE cid IS NOT NULL)
ORDER BY 1
"""
ORACLE_BAD = """
SELECT o.oid,
  CASE WHEN o.cid IS NULL THEN 'null_customer'
       WHEN o.amt IS NULL OR o.amt <= 0 THEN 'non_positive_amount'
       ELSE 'unknown_customer' END AS reason
FROM read_json_auto(?) o
WHERE NOT (o.cid IS NOT NULL AND o.amt IS NOT NULL AND o.amt > 0
  AND o.cid IN (SELECT cid FROM read_json_auto(?) WHERE cid IS NOT NULL))
ORDER BY 1
"""


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    return copy_orders_example(tmp_path / "orders")


def test_orders_reconcile_with_independent_sql(orders: Path):
    loaded = load_contract(orders / "contract.yml", logical_date="2024-01-01")
    result = run_contract(loaded)
    led = result.metrics["ledger"]
    assert led["balanced"] and led["raw"] == led["clean"] + led["quarantined"] + led["duplicates"]

    data = orders / "data"
    oracle = duckdb.connect()
    args = [str(data / "orders.json"), str(data / "customers.json")]
    want_good = [r[0] for r in oracle.execute(ORACLE_GOOD, args).fetchall()]
    want_bad = oracle.execute(ORACLE_BAD, args).fetchall()

    wh = duckdb.connect(str(orders / "warehouse.duckdb"), read_only=True)
    got_good = [r[0] for r in wh.execute("SELECT oid FROM good_orders ORDER BY 1").fetchall()]
    got_bad = wh.execute("SELECT oid, _reason FROM quarantine ORDER BY 1").fetchall()
    assert got_good == want_good
    assert got_bad == want_bad
    # every rule edge of the seed is present in the example data
    reasons = {r for _o, r in got_bad}
    assert reasons == {"null_customer", "non_positive_amount", "unknown_customer"}
    # completeness: counts add up and the oid sets are disjoint
    total = wh.execute("SELECT count(*) FROM read_json_auto(?)", [args[0]]).fetchone()[0]
    assert len(got_good) + len(got_bad) == total
    assert not set(got_good) & {o for o, _r in got_bad}
    # a cid duplicated in customers (13) does not multiply its order
    assert got_good.count(7) == 1
    # lineage and run id on every row
    assert (
        wh.execute(
            "SELECT count(*) FROM good_orders WHERE _source_file IS NULL OR _source_line IS NULL OR _run_id IS NULL"
        ).fetchone()[0]
        == 0
    )


def test_failed_rules_lists_every_failing_rule(orders: Path):
    run_contract(load_contract(orders / "contract.yml", logical_date="2024-01-01"))
    wh = duckdb.connect(str(orders / "warehouse.duckdb"), read_only=True)
    rows = dict(
        wh.execute("SELECT oid, [f.name for f in _failed_rules] FROM quarantine").fetchall()
    )
    assert rows[8] == ["null_customer", "non_positive_amount", "unknown_customer"]
    assert rows[9] == ["non_positive_amount", "unknown_customer"]
    assert rows[6] == ["unknown_customer"]


def test_cli_run_json_reports_balanced_ledger_and_priority(orders: Path):
    r = run_cli("run", str(orders / "contract.yml"), "--json", "--logical-date", "2024-01-01")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["ledger"]["balanced"] is True
    assert m["ledger"]["quarantined_by_reason"] == {
        "null_customer": 3,
        "non_positive_amount": 4,
        "unknown_customer": 1,
    }
    assert m["rules"]["unknown_customer"]["failed"] == 5
    assert m["status"] == "warn" and "WARN" in r.stderr
    assert Path(m["outputs"]["warehouse"]).exists()
    # metrics JSON written next to the warehouse
    runs = orders / "warehouse.runs" / "orders"
    assert (runs / "latest.json").exists()
