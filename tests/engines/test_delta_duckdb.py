"""DuckDB-file vs DuckDB + Delta (delta-rs) on both example contracts, without Spark.

The same contract and input run on the one-file warehouse and on a Delta warehouse
(``outputs.format: delta``); every output is read back independently — the DuckDB file
with DuckDB, the Delta tables with delta-rs — and must be identical row for row. A rerun
of the same date on Delta publishes the same rows (a table whose rows did not change gets
no new version), the run's snapshot names each table's version, and time travel to the first run's versions gives its rows.
(The three-way comparison with Spark + Delta is tests/engines/test_differential.py.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sluicegate.datagen.retail import generate
from tests.conftest import REPO, copy_orders_example, run_cli
from tests.delta_read import delta_dicts
from tests.engines.test_differential import _rows, assert_same_outcome, parquet_table, run_both

VARIANTS = ("duckdb", "duckdb-delta")


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("delta-orders")
    contract = copy_orders_example(tmp / "orders") / "contract.yml"
    runs = run_both(contract, tmp, {}, "2024-01-01", VARIANTS)
    runs["contract"] = contract
    return runs


def test_orders_same_outcome_on_duckdb_file_and_delta(orders):
    o = orders["duckdb"]["loaded"].contract.outputs
    tables = [o.clean, o.quarantine, o.outbox, o.duplicates, o.facts, "_sluicegate_runs"]
    assert_same_outcome(orders, tables)
    versions = orders["duckdb-delta"]["result"].metrics["table_versions"]
    assert versions[o.clean] == 0 and versions["_sluicegate_runs"] == 0
    assert orders["duckdb"]["result"].metrics["table_versions"] == {}


def test_rerun_on_delta_is_idempotent_and_time_travels(orders, tmp_path):
    from sluicegate.run.pipeline import run_contract

    first = orders["duckdb-delta"]
    loaded = first["loaded"]
    wh: Path = first["warehouse"]
    o = loaded.contract.outputs
    before = parquet_table(wh / o.clean)
    again = run_contract(loaded, engine_name="duckdb")
    assert again.metrics["run_id"] == first["result"].metrics["run_id"]
    assert parquet_table(wh / o.clean) == before  # same rows, not duplicated
    versions = again.metrics["table_versions"]
    # identical clean rows: nothing to publish, the version stays; the run record changed
    assert versions[o.clean] == 0 and versions["_sluicegate_runs"] == 1
    old = first["result"].metrics["table_versions"][o.clean]
    assert _rows(delta_dicts(wh / o.clean, version=old)) == before  # time travel

    contract = orders["contract"]
    text = contract.read_text()
    text = text.replace("${root}/../warehouse.duckdb", str(wh)).replace(
        "outputs:\n", "outputs:\n  format: delta\n"
    )
    contract.write_text(text)
    snap = run_cli("snapshot", str(contract), "--json")
    assert snap.returncode == 0, snap.stderr
    import json

    doc = json.loads(snap.stdout)
    assert doc["format"] == "delta" and doc["run_id"] == again.metrics["run_id"]
    assert doc["tables"][o.clean] == 0 and doc["tables"]["_sluicegate_runs"] == 1


@pytest.fixture(scope="module")
def retail(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("delta-retail")
    data = tmp / "data"
    truth = generate(data, lines=3_000, seed=11)
    runs = run_both(
        REPO / "examples/retail/contract.yml", tmp, {"root": str(data)}, "2024-06-30", VARIANTS
    )
    runs["truth"] = truth
    return runs


def test_retail_same_outcome_on_duckdb_file_and_delta(retail):
    c = retail["duckdb"]["loaded"].contract
    o = c.outputs
    tables = [o.clean, o.quarantine, o.outbox, o.duplicates, o.facts, "_sluicegate_runs"]
    if c.model is not None:
        tables += [*c.model.dimensions, *c.model.facts, *c.model.marts]
    assert_same_outcome(retail, tables)
    led = retail["duckdb-delta"]["result"].metrics["ledger"]
    assert led["raw"] == retail["truth"]["raw_lines"]
    assert led["clean"] == retail["truth"]["clean"]
