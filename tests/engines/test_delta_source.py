"""Delta sources bound by version on the embedded engine (``source.format: delta``).

The bronze table is written by delta-rs's ``write_deltalake`` (test code, not sluicegate):

* the binding records the version, its commit timestamp (= the log's), a schema
  fingerprint, and the raw count from the add actions' ``numRecords`` (= the log's, read
  back here from the JSON commit files);
* a run pinned to ``version: 0`` reads version 0 again after new commits (same run id,
  same rows); ``as_of`` picks the version current then;
* a commit landing between the bind and the read is not seen (the run pauses there);
* a log whose numRecords disagree with its files is a ledger violation (exit 3);
* column mapping, partitions and a missing version are located contract errors (exit 2).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.conftest import SLUICEGATE, run_cli

pytestmark = pytest.mark.duckdb

BRONZE = pa.schema([("oid", pa.int32()), ("cid", pa.int32()), ("amt", pa.int32())])
V0 = {"oid": [1, 2, 3, 4], "cid": [10, None, 11, 10], "amt": [5, 7, -1, 9]}
V1 = {"oid": [5], "cid": [10], "amt": [100]}

CONTRACT = """
name: sales
source:
  format: delta
  path: bronze
{pin}
  columns:
    oid: {{type: INTEGER, nullable: false}}
    cid: INTEGER
    amt: INTEGER
rules:
  - name: null_customer
    expect: cid IS NOT NULL
  - name: positive_amount
    expect: amt > 0
gate: {{warn_above: 0.5, fail_above: 0.9}}
outputs:
  warehouse: {warehouse}
  clean: sales_clean
  quarantine: sales_quarantine
"""


def write_bronze(folder: Path) -> None:
    """bronze with two commits: version 0 (4 rows), version 1 (+1 row)."""
    write_deltalake(folder / "bronze", pa.table(V0, schema=BRONZE))
    time.sleep(0.05)  # distinct commit timestamps for as_of
    write_deltalake(folder / "bronze", pa.table(V1, schema=BRONZE), mode="append")


def contract(folder: Path, pin: str = "", warehouse: str = "wh.duckdb", name: str = "c") -> Path:
    path = folder / f"{name}.yml"
    path.write_text(CONTRACT.format(pin=pin, warehouse=warehouse))
    return path


def run_json(path: Path, *extra: str) -> dict[str, Any]:
    r = run_cli("run", str(path), "--logical-date", "2024-01-31", "--json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def clean_oids(folder: Path, warehouse: str = "wh.duckdb") -> list[int]:
    import duckdb

    con = duckdb.connect(str(folder / warehouse), read_only=True)
    try:
        return sorted(r[0] for r in con.execute("SELECT oid FROM sales_clean").fetchall())
    finally:
        con.close()


def log_commit(table: Path, version: int) -> dict[str, Any]:
    """Independent of delta-rs: the commit's actions read from its JSON file."""
    lines = (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    actions = [json.loads(x) for x in lines if x.strip()]
    adds = [a["add"] for a in actions if "add" in a]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    return {"adds": adds, "timestamp": info["timestamp"]}


@pytest.fixture(scope="module")
def bronze(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("delta-source")
    write_bronze(folder)
    return folder


def test_binding_records_version_commit_time_fingerprint_and_log_count(bronze):
    metrics = run_json(contract(bronze, name="latest", warehouse="latest.duckdb"))
    snap = metrics["input"]["snapshot"]
    assert snap["version"] == 1  # the latest
    log0, log1 = log_commit(bronze / "bronze", 0), log_commit(bronze / "bronze", 1)
    committed = dt.datetime.fromisoformat(snap["committed_at"])
    assert int(committed.timestamp() * 1000) == log1["timestamp"]
    stats = [json.loads(a["stats"])["numRecords"] for a in log0["adds"] + log1["adds"]]
    assert snap["record_count"] == sum(stats) == 5
    assert metrics["input"]["raw_records"] == 5
    assert len(snap["schema_fingerprint"]) == 64
    files = {f["path"] for f in metrics["input"]["files"]}
    assert files == {str(bronze / "bronze" / a["path"]) for a in log0["adds"] + log1["adds"]}
    assert metrics["ledger"]["balanced"] is True
    # independent: oid 1, 4 and 5 pass both rules; 2 has no customer, 3 a negative amount
    assert clean_oids(bronze, "latest.duckdb") == [1, 4, 5]


def test_a_rerun_pinned_to_version_0_reads_it_again_after_new_commits(tmp_path):
    write_bronze(tmp_path)
    path = contract(tmp_path, "  version: 0")
    first = run_json(path)
    assert first["input"]["snapshot"]["version"] == 0 and first["input"]["raw_records"] == 4
    assert clean_oids(tmp_path) == [1, 4]
    write_deltalake(tmp_path / "bronze", pa.table(V1, schema=BRONZE), mode="append")
    write_deltalake(tmp_path / "bronze", pa.table(V0, schema=BRONZE), mode="overwrite")
    again = run_json(path)
    assert again["run_id"] == first["run_id"]
    assert again["input"]["snapshot"] == first["input"]["snapshot"]
    assert clean_oids(tmp_path) == [1, 4]  # replaced, not doubled, not the newer rows


def test_as_of_binds_the_version_current_then(bronze):
    t0 = log_commit(bronze / "bronze", 0)["timestamp"]
    when = dt.datetime.fromtimestamp(t0 / 1000 + 0.001, dt.UTC).isoformat()
    metrics = run_json(contract(bronze, f'  as_of: "{when}"', "asof.duckdb", "asof"))
    assert metrics["input"]["snapshot"]["version"] == 0
    assert clean_oids(bronze, "asof.duckdb") == [1, 4]


def test_a_commit_between_bind_and_read_is_not_seen(tmp_path):
    """The run pauses after its bind; meanwhile the table is overwritten with other rows.
    The run reads the version it bound: a rewrite in between is impossible by construction."""
    write_bronze(tmp_path)
    path = contract(tmp_path)
    marker = tmp_path / "paused"
    env = dict(os.environ, SLUICEGATE_PAUSE="after_bind:4", SLUICEGATE_PAUSE_FILE=str(marker))
    cmd = [*SLUICEGATE, "run", str(path), "--logical-date", "2024-01-31", "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached after_bind"
        time.sleep(0.05)
    other = {"oid": [7, 8], "cid": [1, 2], "amt": [1, 2]}
    write_deltalake(tmp_path / "bronze", pa.table(other, schema=BRONZE), mode="overwrite")
    assert DeltaTable(tmp_path / "bronze").version() == 2
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    metrics = json.loads(out)
    assert metrics["input"]["snapshot"]["version"] == 1
    assert clean_oids(tmp_path) == [1, 4, 5]  # version 1's rows, not 7 and 8


def test_a_log_count_that_disagrees_with_the_files_is_a_ledger_violation(tmp_path):
    write_deltalake(tmp_path / "bronze", pa.table(V0, schema=BRONZE))
    commit = tmp_path / "bronze" / "_delta_log" / f"{0:020d}.json"
    lines = []
    for line in commit.read_text().splitlines():
        doc = json.loads(line)
        if "add" in doc:  # the log claims 5 records; the file holds 4
            stats = json.loads(doc["add"]["stats"])
            stats["numRecords"] = 5
            doc["add"]["stats"] = json.dumps(stats)
        lines.append(json.dumps(doc))
    commit.write_text("\n".join(lines) + "\n")
    r = run_cli("run", str(contract(tmp_path)), "--logical-date", "2024-01-31")
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr


def _add_commit(table: Path, version: int, *actions: dict) -> None:
    text = "\n".join(json.dumps(a) for a in actions) + "\n"
    (table / "_delta_log" / f"{version:020d}.json").write_text(text)


def test_column_mapping_is_refused_with_a_located_error(tmp_path):
    write_deltalake(tmp_path / "bronze", pa.table(V0, schema=BRONZE))
    meta = DeltaTable(tmp_path / "bronze").metadata()
    schema = json.loads(DeltaTable(tmp_path / "bronze").schema().to_json())
    for i, f in enumerate(schema["fields"], 1):  # what Spark's upgrade to mode name writes
        f["metadata"] = {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f["name"]}
    # a later commit switching column mapping on (as Spark's ALTER TABLE … SET TBLPROPERTIES)
    _add_commit(
        tmp_path / "bronze",
        1,
        {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
        {
            "metaData": {
                "id": meta.id,
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {
                    "delta.columnMapping.mode": "name",
                    "delta.columnMapping.maxColumnId": "3",
                },
                "createdTime": meta.created_time,
            }
        },
        {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "SET TBLPROPERTIES"}},
    )
    r = run_cli("run", str(contract(tmp_path)), "--logical-date", "2024-01-31")
    assert r.returncode == 2, r.stderr
    assert "c.yml:" in r.stderr and "source.path" in r.stderr, r.stderr
    assert "column mapping" in r.stderr and "Traceback" not in r.stderr


def test_partitioned_table_and_missing_version_are_located_errors(tmp_path):
    write_deltalake(tmp_path / "bronze", pa.table(V0, schema=BRONZE), partition_by=["cid"])
    r = run_cli("run", str(contract(tmp_path)), "--logical-date", "2024-01-31")
    assert r.returncode == 2 and "partitioned by cid" in r.stderr, r.stderr
    assert "source.path" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("run", str(contract(tmp_path, "  version: 9")), "--logical-date", "2024-01-31")
    assert r.returncode == 2 and "source.version" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    plain = contract(tmp_path, "  version: 0", name="plain").read_text()
    (tmp_path / "plain.yml").write_text(plain.replace("path: bronze", "path: nowhere"))
    r = run_cli("run", str(tmp_path / "plain.yml"), "--logical-date", "2024-01-31")
    assert r.returncode == 2 and "not a Delta table" in r.stderr, r.stderr
