"""DuckDB + Delta with the warehouse AND the sources on S3 (moto's server on loopback).

The S3 API is real: moto's server mode in a child process (``s3_server``, session
fixture), reached over HTTP by delta-rs (the Delta commits), pyarrow's S3 client (the
binder's hashing, the reads of Delta files and of the source objects) — nothing mocked
in-process. The scenario (tests/engines/s3_case.py): two days, a rerun of day 1 after
its object was rewritten, a DLQ fix + recycle; every table read back from S3 by the
test's own delta-rs reader and compared with the same steps on local files into a
DuckDB file. Also: lineage names the ``s3://`` objects, the ledger balances against an
independent count of the uploaded lines, the writer lock (a local file) refuses a second
run, credentials never appear in any output, and a clear-text credential is refused.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest

from sluicegate.run.lock import WriterLock
from sluicegate.workspace import Workspace
from tests.conftest import run_cli
from tests.engines import s3_case as case
from tests.servers.s3 import ACCESS_KEY_ID, SECRET_ACCESS_KEY

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def secrets_env(s3_server):
    """The contract's ``${secret:s3/…}`` tokens resolve from the environment; no AWS_*
    variable is set, so nothing reaches S3 but what the contract says."""
    saved = dict(os.environ)
    for k in list(os.environ):
        if k.startswith("AWS_"):
            del os.environ[k]
    os.environ.update(s3_server.env())
    yield s3_server.env()
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="module")
def on_s3(s3_server, secrets_env, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s3-duckdb")
    out = case.s3_run(s3_server, tmp, f"duckdb-{uuid.uuid4().hex[:8]}", "duckdb")
    out["twin"] = case.local_twin(tmp_path_factory.mktemp("s3-twin"))
    return out


def test_every_table_on_s3_matches_the_local_duckdb_file(on_s3):
    for table in case.TABLES:
        assert on_s3["tables"][table] == on_s3["twin"]["tables"][table], table
    clean = on_s3["tables"]["good_orders"]
    assert ("1", "10", "111", "1000", "1", case.DAY1) in clean  # the rerun's correction
    assert not any(r[0] == "6" for r in on_s3["tables"]["quarantine"])  # withdrawn upstream
    assert any(r[0] == "2" and r[1] == "10" for r in clean)  # recycled from the DLQ


def test_rerun_replaced_its_date_and_left_the_other(on_s3, s3_server):
    runs = on_s3["result"]["runs"]
    first, second, rerun = runs
    assert first["run_id"] != rerun["run_id"]  # new input, new run
    clean = on_s3["raw"]["good_orders"]
    day1 = {r["_run_id"] for r in clean if str(r["_logical_date"]) == case.DAY1}
    day2 = {r["_run_id"] for r in clean if str(r["_logical_date"]) == case.DAY2}
    assert first["run_id"] not in day1 and day2 == {second["run_id"]}
    # time travel to the first run's version of the clean table (delta-rs, not sluicegate)
    v = first["table_versions"]["good_orders"]
    old = case.delta_rows(s3_server, f"{on_s3['warehouse']}/good_orders", version=v)
    assert {r["amt"] for r in old if r["oid"] == 1} == {100}
    assert rerun["table_versions"]["good_orders"] > second["table_versions"]["good_orders"]


def test_lineage_names_the_objects_and_the_ledger_balances(on_s3):
    prefix = on_s3["warehouse"].rsplit("/wh", 1)[0]
    for table in ("good_orders", "quarantine", "order_duplicates"):
        for r in on_s3["raw"][table]:
            assert r["_source_file"] == f"{prefix}/in/{r['_logical_date']}/orders.json"
    for metrics, rows in zip(
        on_s3["result"]["runs"], (case.ORDERS, case.DAY2_ORDERS, case.ORDERS_V2), strict=True
    ):
        led = metrics["ledger"]
        assert led["raw"] == len(rows)  # counted by this test, from what it uploaded
        assert led["raw"] == led["clean"] + led["quarantined"] + led["duplicates"]
        assert metrics["input"]["files"][0]["path"].startswith("s3://")
    assert on_s3["result"]["recycle"]["recycled"] == 1
    assert on_s3["result"]["dlq_ledger"]["balanced"]


def test_state_and_lock_stay_local_and_hold(on_s3, s3_server, secrets_env):
    from sluicegate.compile.contract_check import load_contract

    loaded = load_contract(on_s3["path"], logical_date=case.DAY1)
    ws = Workspace(loaded)
    assert ws.remote and ws.runs_dir == on_s3["path"].parent / "wh.runs"
    assert any(ws.contract_runs_dir.glob("*.json"))  # run metrics, locally
    # nothing but Delta tables and the store's hidden folder under the S3 warehouse
    key = on_s3["warehouse"].split("://", 1)[1].split("/", 1)[1]
    keys = [k[len(key) + 1 :] for k in s3_server.keys(case.BUCKET, key + "/")]
    tops = {k.split("/", 1)[0] for k in keys}
    assert set(case.TABLES) | {"_sluicegate_runs", "_sluicegate_snapshots"} <= tops
    for top in tops - {".sluicegate"}:
        assert any(k.startswith(f"{top}/_delta_log/") for k in keys), top
    # every publish completed: no journal left (empty "folder" marker keys aside)
    assert not [k for k in keys if "/journal/" in k and k.endswith(".json")]
    lock = WriterLock(ws.writer_lock, loaded.contract.name)
    with lock.hold("held-by-the-test"):
        r = run_cli("run", str(on_s3["path"]), "--logical-date", case.DAY2, env=secrets_env)
    assert r.returncode == 5, r.stderr
    assert "already being run" in r.stderr and str(ws.writer_lock) in r.stderr


def test_credentials_never_appear_in_output(on_s3, s3_server, secrets_env, tmp_path):
    outputs = []
    for args in (
        ("run", str(on_s3["path"]), "--logical-date", case.DAY2, "--json"),
        ("snapshot", str(on_s3["path"]), "--json"),
        ("dlq", "list", str(on_s3["path"]), "--json"),
        ("dlq", "ledger", str(on_s3["path"])),
    ):
        r = run_cli(*args, env=secrets_env)
        assert r.returncode in (0, 1), (args, r.stderr)
        outputs += [r.stdout, r.stderr]
    assert json.loads(outputs[2])["tables"]["good_orders"] >= 0
    # an unreachable endpoint: a one-line error, still no secret (and no traceback)
    doc = json.loads(on_s3["path"].read_text())
    doc["object_store"]["endpoint"] = "http://127.0.0.1:9"
    bad = tmp_path / "bad.yml"
    bad.write_text(json.dumps(doc))
    r = run_cli("run", str(bad), "--logical-date", case.DAY1, env=secrets_env)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    outputs += [r.stdout, r.stderr]
    metrics = on_s3["path"].parent / "wh.runs"
    outputs += [p.read_text() for p in metrics.rglob("*") if p.is_file()]
    for text in outputs:
        assert SECRET_ACCESS_KEY not in text
        assert ACCESS_KEY_ID not in text or "access_key_id" in text


def test_a_credential_written_in_the_contract_is_refused(on_s3, tmp_path):
    doc = json.loads(on_s3["path"].read_text())
    doc["object_store"]["secret_access_key"] = SECRET_ACCESS_KEY
    bad = tmp_path / "clear.yml"
    bad.write_text(json.dumps(doc))
    r = run_cli("validate", str(bad))
    assert r.returncode == 2
    assert "object_store.secret_access_key" in r.stderr and "${secret:" in r.stderr
    assert SECRET_ACCESS_KEY not in r.stdout + r.stderr


def test_ready_when_marker_on_s3(on_s3, s3_server, secrets_env):
    from sluicegate.compile.contract_check import load_contract
    from sluicegate.errors import NotReadyError
    from sluicegate.run.ready import check_ready

    doc = json.loads(on_s3["path"].read_text())
    doc["source"]["ready_when"] = "_SUCCESS"
    path = on_s3["path"].with_name("ready.yml")
    path.write_text(json.dumps(doc))
    loaded = load_contract(path, logical_date=case.DAY2)
    with pytest.raises(NotReadyError, match=r"s3://lake/.*/in/2024-01-02/_SUCCESS"):
        check_ready(loaded)
    prefix = on_s3["warehouse"].split("://", 1)[1].split("/", 1)[1].rsplit("/wh", 1)[0]
    s3_server.put(case.BUCKET, f"{prefix}/in/{case.DAY2}/_SUCCESS", b"")
    assert check_ready(loaded) is None
