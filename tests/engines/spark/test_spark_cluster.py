"""A real cluster: a standalone Spark master and worker, the contract run by URL from the CLI.

scripts/spark_cluster.py starts the master and one worker on 127.0.0.1 from PySpark's
own ``bin/spark-class``; ``sluicegate run … --spark-master spark://127.0.0.1:PORT`` runs
in a subprocess, as a user would. The test checks that the application really ran on
the worker (its work folder), that the outputs equal an embedded DuckDB run of the same
input, and that every process the test started is gone afterwards — also on failure.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run.pipeline import run_contract
from tests.conftest import REPO, copy_orders_example, run_cli
from tests.engines.test_differential import duckdb_table, parquet_table

pytestmark = pytest.mark.spark


def _cluster_module():
    spec = importlib.util.spec_from_file_location(
        "spark_cluster", REPO / "scripts/spark_cluster.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["spark_cluster"] = mod  # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    """The orders example with its warehouse as a variable (``--var wh=…``)."""
    copy_orders_example(tmp_path / "orders")
    contract = tmp_path / "orders" / "contract.yml"
    text = contract.read_text()
    assert "warehouse: ${root}/../warehouse.duckdb" in text
    contract.write_text(text.replace("${root}/../warehouse.duckdb", "${wh}"))
    return contract


def test_contract_runs_on_a_standalone_cluster_from_the_cli(tmp_path, orders):
    sc = _cluster_module()
    spark_wh = tmp_path / "wh-spark"
    variables = {"wh": str(spark_wh)}
    cluster = sc.start(tmp_path / "cluster")
    try:
        assert cluster.master_url.startswith("spark://127.0.0.1:")
        assert len(sc.alive(cluster)) == 2
        on_cluster = run_cli(
            "run",
            str(orders),
            "--spark-master",
            cluster.master_url,
            "--var",
            f"wh={spark_wh}",
            "--logical-date",
            "2024-01-01",
            "--json",
            env={"SLUICEGATE_SPARK_MASTER": "local[1]"},  # the flag must win over this
        )
        assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
        metrics = json.loads(on_cluster.stdout)
        assert metrics["engine"] == "spark"
        assert metrics["ledger"]["balanced"]
        # the application ran on the worker: its executor left a work folder there
        apps = list((tmp_path / "cluster" / "work").glob("app-*"))
        assert len(apps) == 1, "no application ran on the cluster's worker"
        assert any(apps[0].rglob("stderr"))
    finally:
        sc.stop(cluster)
    assert sc.alive(cluster) == [], "the cluster's processes are still running"

    # the same contract and input on the embedded engine (same run id): the same outcome
    loaded = load_contract(orders, variables=variables, logical_date="2024-01-01")
    duck_wh = tmp_path / "duck.duckdb"
    loaded.contract.outputs.warehouse = str(duck_wh)
    embedded = run_contract(loaded, engine_name="duckdb").metrics
    for key in ("run_id", "ledger", "rules", "builtin", "drift"):
        assert metrics[key] == embedded[key], key
    o = loaded.contract.outputs
    for table in (o.clean, o.quarantine, o.duplicates, o.facts):
        assert parquet_table(spark_wh / table) == duckdb_table(duck_wh, table), table


def test_the_script_stops_what_it_started_from_another_process(tmp_path):
    """``start`` and ``stop`` as separate commands, the way a user drives them; with
    ``--workers 2`` both workers register with the master and both are stopped."""
    folder = tmp_path / "cli-cluster"
    script = str(REPO / "scripts/spark_cluster.py")
    sc = _cluster_module()
    try:
        started = subprocess.run(
            [sys.executable, script, "start", "--dir", str(folder), "--workers", "2"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert started.returncode == 0, started.stderr[-2000:]
        assert started.stdout.strip().startswith("spark://127.0.0.1:")
        cluster = sc.Cluster.load(folder)
        assert len(sc.alive(cluster)) == 3  # the master and two workers
        for log in ("worker.log", "worker-2.log"):
            assert "Successfully registered with master" in (folder / log).read_text(), log
    finally:
        stopped = subprocess.run(
            [sys.executable, script, "stop", "--dir", str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert sc.alive(sc.Cluster.load(folder)) == []
