"""A real crash of a Spark run mid-publish (SIGKILL), then the next run: nothing lost.

``SLUICEGATE_FAULT=delta:journaled`` kills ``sluicegate run`` right after the publish
journal is on disk and before any Delta table is committed; ``delta:published_first``
after the first table's commit. The next run opens the warehouse, completes the
interrupted publish (each table not yet carrying the transaction's marker is published
from its staged shadow), takes over the dead run's lock, reruns the same date and
publishes the same rows a clean run publishes — checked against an embedded DuckDB run
of the same input, read back by delta-rs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run.pipeline import run_contract
from tests.conftest import copy_orders_example, run_cli
from tests.engines.test_differential import duckdb_table, parquet_table

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("point", ["delta:journaled", "delta:published_first"])
def test_killed_mid_publish_then_rerun(tmp_path: Path, point: str):
    contract = copy_orders_example(tmp_path / "orders") / "contract.yml"
    contract.write_text(contract.read_text().replace("${root}/../warehouse.duckdb", "${wh}"))
    wh = tmp_path / "wh-spark"
    args = ["run", str(contract), "--engine", "spark", "--var", f"wh={wh}"]
    args += ["--logical-date", "2024-01-01", "--json"]
    env = {"SLUICEGATE_SPARK_MASTER": "local[1]"}

    killed = run_cli(*args, env={**env, "SLUICEGATE_FAULT": point})
    assert killed.returncode == -9, killed.stderr[-2000:]
    internal = wh / ".sluicegate" / "delta"
    journals = list((internal / "journal").glob("*.json"))
    assert len(journals) == 1
    if point == "delta:journaled":
        assert not (wh / "good_orders").exists()  # nothing published yet

    rerun = run_cli(*args[:-1], env=env)  # the console, not --json: it shows the repair
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "completed an interrupted publish" in rerun.stdout + rerun.stderr
    assert not list((internal / "journal").glob("*.json"))
    assert not os.listdir(internal / "staging")
    path = [ln for ln in rerun.stdout.splitlines() if ln.startswith("metrics: ")][-1]
    metrics = json.loads(Path(path.removeprefix("metrics: ").strip()).read_text())

    loaded = load_contract(contract, variables={"wh": str(wh)}, logical_date="2024-01-01")
    duck = tmp_path / "duck.duckdb"
    loaded.contract.outputs.warehouse = str(duck)
    want = run_contract(loaded, engine_name="duckdb").metrics
    assert metrics["run_id"] == want["run_id"] and metrics["ledger"] == want["ledger"]
    o = loaded.contract.outputs
    for table in (o.clean, o.quarantine, o.duplicates, o.facts):
        assert parquet_table(wh / table) == duckdb_table(duck, table), table
