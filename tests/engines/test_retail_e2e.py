"""Seed 002's feed end to end (issue 3, item 9): examples/retail/contract.yml over a small
generated feed, run the way the benchmark harness runs it, reconciled count by count with
the generator's own ground truth (expected.json) and with independent SQL on the written
tables; a second run of the same date leaves identical tables."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from sluicegate.datagen.retail import generate
from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.duckdb

CONTRACT = REPO / "examples" / "retail" / "contract.yml"
RULES = (
    "non_null_customer",
    "non_null_product",
    "non_null_store",
    "positive_quantity",
    "valid_price",
    "known_product",
    "known_store",
    "parseable_order_ts",
)


@pytest.fixture(scope="module")
def feed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("retail")
    truth = generate(root / "feed", lines=12_000, seed=7, part_lines=500)
    assert json.loads((root / "feed" / "expected.json").read_text()) == truth
    return root, truth


def run_retail(root: Path, *extra: str) -> dict:
    out = run_cli(
        "run",
        str(CONTRACT),
        "--var",
        f"root={root / 'feed'}",
        "--var",
        f"warehouse={root / 'wh.duckdb'}",
        "--var",
        f"export={root / 'export'}",
        "--logical-date",
        "2024-12-31",
        "--json",
        *extra,
    )
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def first_run(feed) -> dict:
    root, _ = feed
    return run_retail(root)


def tables(root: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    try:
        return {
            "clean": con.execute("SELECT * FROM sales_clean ORDER BY ALL").fetchall(),
            "quarantine": con.execute(
                "SELECT * EXCLUDE (_dlq_timestamp) FROM sales_dlq ORDER BY ALL"
            ).fetchall(),
            "duplicates": con.execute("SELECT * FROM sales_duplicates ORDER BY ALL").fetchall(),
        }
    finally:
        con.close()


def test_metrics_equal_the_generators_ground_truth(feed, first_run):
    _, truth = feed
    m = first_run
    led = m["ledger"]
    assert led["balanced"] is True
    assert led["raw"] == truth["raw_lines"]
    assert led["corrupt"] == truth["corrupt_lines"]
    assert led["duplicates"] == truth["duplicates_dropped"]
    assert led["clean"] == truth["clean"]
    # corrupt lines are quarantined too (reason corrupt_record); the generator counts the
    # records that fail a rule among the parsed ones
    assert led["quarantined"] == truth["quarantined"] + truth["corrupt_lines"]
    by_reason = led["quarantined_by_reason"]
    assert by_reason["corrupt_record"] == truth["corrupt_lines"]
    assert sum(n for r, n in by_reason.items() if r != "corrupt_record") == truth["quarantined"]
    assert {r: m["rules"][r]["failed"] for r in RULES} == truth["rule_failures"]
    assert led["blank_lines"] == 0
    assert m["input"]["raw_records"] == truth["raw_lines"]
    assert len(m["input"]["files"]) == truth["sale_files"]


def test_written_tables_reconcile_with_independent_sql(feed, first_run):
    root, truth = feed
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    q = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    run_id = first_run["run_id"]
    assert q(f"SELECT count(*) FROM sales_clean WHERE _run_id = '{run_id}'") == [(truth["clean"],)]
    # one row per distinct sale id among clean and quarantine (dedupe kept exactly one)
    assert q(
        "SELECT count(*), count(DISTINCT sale_id) FROM (SELECT sale_id FROM sales_clean "
        "UNION ALL SELECT sale_id FROM sales_dlq WHERE _reason <> 'corrupt_record')"
    ) == [(truth["deduplicated_rows"], truth["deduplicated_rows"])]
    # every duplicate points at the kept row of its sale id, which is clean or quarantined
    assert q(
        "SELECT count(*) FROM sales_duplicates d LEFT JOIN ("
        " SELECT sale_id, _source_file, _source_line FROM sales_clean UNION ALL"
        " SELECT sale_id, _source_file, _source_line FROM sales_dlq) k"
        " ON d._kept_source_file = k._source_file AND d._kept_source_line = k._source_line"
        " WHERE k.sale_id IS DISTINCT FROM d.sale_id"
    ) == [(0,)]
    # the month column comes from the folder of each line's file
    assert q(
        "SELECT count(*) FROM sales_clean WHERE _source_file NOT LIKE '%/month=' || month || '/%'"
    ) == [(0,)]
    # corrupt lines keep their raw text; unparseable order_ts is kept in _rescued_data
    assert q(
        "SELECT count(*) FROM sales_dlq WHERE _reason = 'corrupt_record' AND _raw IS NULL"
    ) == [(0,)]
    mismatch = q(
        "SELECT _rescued_data FROM sales_dlq WHERE _reason = 'type_mismatch' ORDER BY 1 LIMIT 1"
    )
    assert mismatch and "order_ts" in json.loads(mismatch[0][0])
    con.close()


def test_drift_reports_the_undeclared_promo_code(first_run):
    drift = {(e["kind"], e["field"]): e["records"] for e in first_run["drift"]}
    assert drift[("undeclared_field", "promo_code")] > 0
    assert ("type_mismatch", "order_ts") in drift


def test_a_second_run_leaves_identical_tables(feed, first_run):
    root, _ = feed
    before = tables(root)
    again = run_retail(root)
    assert again["run_id"] == first_run["run_id"]
    assert tables(root) == before
