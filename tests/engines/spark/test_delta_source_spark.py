"""A Delta source on both engines: the same bound version gives the same outcome.

The bronze table is written by delta-rs's ``write_deltalake`` (a writer sluicegate's
Spark engine does not use). The contract is pinned to version 0; DuckDB-file,
DuckDB + Delta and Spark + Delta runs bind the same version (same run id, same binding
record) and publish the same rows, read back by delta-rs and DuckDB, not by the engines.
A rerun on Spark after new commits reads version 0 again. A version with deletion
vectors (written by Spark's DELETE) is refused with a located error on both engines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import SluiceError
from sluicegate.run.pipeline import run_contract
from tests.engines.test_delta_source import BRONZE, CONTRACT, V1, write_bronze
from tests.engines.test_differential import assert_same_outcome, output_rows, run_both

pytestmark = pytest.mark.spark

TABLES = ["sales_clean", "sales_quarantine", "sales_quarantine_outbox", "_sluicegate_runs"]


@pytest.fixture(scope="module")
def pinned(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: ARG001
    tmp = tmp_path_factory.mktemp("delta-source-spark")
    write_bronze(tmp)
    contract = tmp / "c.yml"
    contract.write_text(CONTRACT.format(pin="  version: 0", warehouse="wh"))
    runs = run_both(contract, tmp, {}, "2024-01-31")
    runs["tmp"], runs["contract"] = tmp, contract
    return runs


def test_same_version_same_outcome_on_duckdb_and_spark(pinned):
    assert_same_outcome(pinned, TABLES)
    snaps = [pinned[v]["result"].metrics["input"]["snapshot"] for v in ("duckdb", "spark")]
    assert snaps[0] == snaps[1] and snaps[0]["version"] == 0 and snaps[0]["record_count"] == 4
    assert pinned["spark"]["result"].metrics["engine"] == "spark"
    clean = output_rows(pinned, "spark", "sales_clean")
    assert sorted(dict(r)["oid"] for r in clean) == [1, 4]  # independent: rows 2, 3 fail


def test_spark_rerun_after_new_commits_reads_version_0_again(pinned):
    tmp: Path = pinned["tmp"]
    write_deltalake(tmp / "bronze", pa.table(V1, schema=BRONZE), mode="append")
    before = output_rows(pinned, "spark", "sales_clean")
    loaded = load_contract(pinned["contract"], logical_date="2024-01-31")
    loaded.contract.outputs.warehouse = str(pinned["spark"]["warehouse"])
    loaded.contract.outputs.format = "delta"
    again = run_contract(loaded, engine_name="spark")
    assert again.exit_code == 0, again.metrics.get("error")
    assert again.metrics["run_id"] == pinned["spark"]["result"].metrics["run_id"]
    assert again.metrics["input"]["snapshot"]["version"] == 0
    assert output_rows(pinned, "spark", "sales_clean") == before


def test_deletion_vectors_written_by_spark_are_refused_on_both_engines(spark, tmp_path):
    write_bronze(tmp_path)
    table = tmp_path / "bronze"
    spark.sql(
        f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
    )
    spark.sql(f"DELETE FROM delta.`{table}` WHERE oid = 2")
    contract = tmp_path / "c.yml"
    contract.write_text(CONTRACT.format(pin="", warehouse="wh"))
    for engine in ("duckdb", "spark"):
        loaded = load_contract(contract, logical_date="2024-01-31")
        loaded.contract.outputs.warehouse = str(tmp_path / f"wh-{engine}")
        loaded.contract.outputs.format = "delta"
        with pytest.raises(SluiceError) as err:
            run_contract(loaded, engine_name=engine)
        text = str(err.value)
        assert "deletion vectors" in text and "source.path" in text, text
        assert "c.yml:" in text, text


def test_spark_dlq_tables_have_the_change_feed_and_history_reads_it(pinned):
    """The inbox Spark created has the change data feed on in its log (read as JSON, not
    by an engine), and ``dlq history`` on Spark reads the quarantined rows from it."""
    from sluicegate.dlq.history import history
    from sluicegate.dlq.store import open_store
    from tests.engines.test_dlq_history import commits

    inbox = pinned["spark"]["warehouse"] / "sales_quarantine"
    assert commits(inbox)[0]["meta"]["configuration"]["delta.enableChangeDataFeed"] == "true"
    loaded = pinned["spark"]["loaded"]
    with open_store(loaded, read_only=True, engine_name="spark") as store:
        doc = history(store)
    firsts = sorted((r["_source_line"], r["events"][0]["status"]) for r in doc["rows"])
    assert [s for _line, s in firsts] == ["quarantined", "quarantined"]  # oid 2 and 3
    assert all(r["events"][0]["change"] == "insert" for r in doc["rows"])
