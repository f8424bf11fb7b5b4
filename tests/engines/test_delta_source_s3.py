"""Delta sources on S3 (``source.format: delta``, ``source.path: s3://…``), DuckDB engine.

The S3 API is real: moto's server mode on loopback (``s3_server``, the session fixture),
reached over HTTP by delta-rs and pyarrow's S3 client. The bronze table is written there
by delta-rs's ``write_deltalake`` from this test (a writer sluicegate did not use); the
contract's credentials are ``${secret:…}`` tokens (no ``AWS_*`` variable is set). Checked:

* the binding records the version, the commit timestamp and the log's ``numRecords`` sum
  as the test reads them from the commit objects with boto3 (neither delta-rs nor
  pyarrow), and the schema fingerprint of the log's ``schemaString``;
* a run pinned to ``version: 0`` reads version 0 again after later commits: same run id,
  same snapshot, its raw count = deltalake's own read of version 0, not of the latest;
* ``as_of`` binds the version current then;
* a missing table, a missing version and credentials the store refuses are located
  one-line errors (exit 2, no traceback) that never show the secret. The refusal needs a
  store that checks signatures: a second moto server with its IAM authentication on
  (``/moto-api/reset-auth``), where the right key reads the table and a wrong secret is
  refused (``SignatureDoesNotMatch``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.conftest import run_cli
from tests.servers.s3 import REGION, SECRET_ACCESS_KEY, S3Server

pytestmark = pytest.mark.slow

BUCKET = "lake"
BRONZE = pa.schema([("oid", pa.int32()), ("cid", pa.int32()), ("amt", pa.int32())])
V0 = {"oid": [1, 2, 3, 4], "cid": [10, None, 11, 10], "amt": [5, 7, -1, 9]}
V1 = {"oid": [5], "cid": [10], "amt": [100]}
DAY = "2024-01-31"


def contract_doc(table: str, endpoint: str, warehouse: str, **pin: Any) -> dict[str, Any]:
    return {
        "name": "sales_s3",
        "source": {
            "format": "delta",
            "path": table,
            **pin,
            "columns": {"oid": {"type": "INTEGER", "nullable": False}, "cid": "INTEGER"}
            | {"amt": "INTEGER"},
        },
        "rules": [
            {"name": "null_customer", "expect": "cid IS NOT NULL"},
            {"name": "positive_amount", "expect": "amt > 0"},
        ],
        "gate": {"warn_above": 0.5, "fail_above": 0.9},
        "object_store": {
            "endpoint": endpoint,
            "region": REGION,
            "access_key_id": "${secret:s3/access_key_id}",
            "secret_access_key": "${secret:s3/secret_access_key}",
        },
        "outputs": {"warehouse": warehouse, "clean": "sales_clean", "quarantine": "sales_q"},
    }


def write_contract(folder: Path, name: str, doc: dict[str, Any]) -> Path:
    """JSON is YAML; one key per line so errors can name a line."""
    path = folder / f"{name}.yml"
    path.write_text(json.dumps(doc, indent=2))
    return path


def run(path: Path, env: dict[str, str], *extra: str) -> dict[str, Any]:
    r = run_cli("run", str(path), "--logical-date", DAY, "--json", *extra, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def clean_oids(warehouse: Path) -> list[int]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return sorted(r[0] for r in con.execute("SELECT oid FROM sales_clean").fetchall())
    finally:
        con.close()


def lineage(warehouse: Path) -> set[str]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "SELECT _source_file FROM sales_clean UNION SELECT _source_file FROM sales_q"
        ).fetchall()
        return {r[0] for r in rows}
    finally:
        con.close()


def log_commit(server: S3Server, key: str, version: int) -> dict[str, Any]:
    """Independent of delta-rs and pyarrow: the commit object read with boto3."""
    obj = server.client().get_object(Bucket=BUCKET, Key=f"{key}/_delta_log/{version:020d}.json")
    actions = [json.loads(x) for x in obj["Body"].read().decode().splitlines() if x.strip()]
    return {
        "adds": [a["add"] for a in actions if "add" in a],
        "timestamp": next(a["commitInfo"]["timestamp"] for a in actions if "commitInfo" in a),
        "schema": next((a["metaData"]["schemaString"] for a in actions if "metaData" in a), None),
    }


def new_table(
    server: S3Server, options: dict[str, str] | None = None, pause: float = 0.0
) -> tuple[str, str]:
    """``s3://lake/<unique>/bronze`` with version 0 (4 rows) and version 1 (+1 row),
    committed ``pause`` seconds apart."""
    server.create_bucket(BUCKET)
    key = f"delta-src-{uuid.uuid4().hex[:8]}/bronze"
    uri = f"s3://{BUCKET}/{key}"
    opts = options or server.storage_options()
    write_deltalake(uri, pa.table(V0, schema=BRONZE), storage_options=opts)
    time.sleep(pause)
    write_deltalake(uri, pa.table(V1, schema=BRONZE), mode="append", storage_options=opts)
    return uri, key


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
def bronze(s3_server, secrets_env) -> tuple[str, str]:
    """Commits more than a second apart: delta-rs resolves ``as_of`` by the commit
    objects' Last-Modified times, which S3 keeps to the second (docs/lakehouse.md)."""
    return new_table(s3_server, pause=1.1)


def test_binding_on_s3_records_version_commit_time_fingerprint_and_log_count(
    bronze, s3_server, secrets_env, tmp_path
):
    uri, key = bronze
    doc = contract_doc(uri, s3_server.endpoint, "latest.duckdb")
    metrics = run(write_contract(tmp_path, "latest", doc), secrets_env)
    snap = metrics["input"]["snapshot"]
    assert snap["version"] == 1 and snap["table"] == uri
    log0, log1 = log_commit(s3_server, key, 0), log_commit(s3_server, key, 1)
    committed = dt.datetime.fromisoformat(snap["committed_at"])
    assert round(committed.timestamp() * 1000) == log1["timestamp"]
    stats = [json.loads(a["stats"])["numRecords"] for a in log0["adds"] + log1["adds"]]
    assert snap["record_count"] == sum(stats) == 5
    assert metrics["input"]["raw_records"] == 5 and metrics["ledger"]["balanced"] is True
    schema = json.dumps(json.loads(log0["schema"]), sort_keys=True)
    assert snap["schema_fingerprint"] == hashlib.sha256(schema.encode()).hexdigest()
    adds = {f"{uri}/{a['path']}" for a in log0["adds"] + log1["adds"]}
    assert {f["path"] for f in metrics["input"]["files"]} == adds
    for f in metrics["input"]["files"]:  # hashed from the object's bytes (boto3 here)
        body = s3_server.client().get_object(Bucket=BUCKET, Key=f["path"].split("/", 3)[3])
        assert f["sha256"] == hashlib.sha256(body["Body"].read()).hexdigest()
    # oid 1, 4 and 5 pass both rules; 2 has no customer, 3 a negative amount
    assert clean_oids(tmp_path / "latest.duckdb") == [1, 4, 5]
    assert lineage(tmp_path / "latest.duckdb") == adds  # the objects, not local copies


def test_a_run_pinned_to_version_0_on_s3_reads_it_again_after_new_commits(
    s3_server, secrets_env, tmp_path
):
    uri, _key = new_table(s3_server)
    opts = s3_server.storage_options()
    path = write_contract(
        tmp_path, "pinned", contract_doc(uri, s3_server.endpoint, "wh.duckdb", version=0)
    )
    first = run(path, secrets_env)
    v0_rows = DeltaTable(uri, version=0, storage_options=opts).to_pyarrow_table().num_rows
    assert first["input"]["snapshot"]["version"] == 0
    assert first["input"]["raw_records"] == first["input"]["snapshot"]["record_count"] == v0_rows
    assert first["ledger"]["clean"] + first["ledger"]["quarantined"] == v0_rows == 4
    assert clean_oids(tmp_path / "wh.duckdb") == [1, 4]
    # later commits by the other writer: an append, then an overwrite with other rows
    write_deltalake(uri, pa.table(V1, schema=BRONZE), mode="append", storage_options=opts)
    other = {"oid": [7, 8], "cid": [1, 2], "amt": [1, 2]}
    write_deltalake(uri, pa.table(other, schema=BRONZE), mode="overwrite", storage_options=opts)
    latest = DeltaTable(uri, storage_options=opts)
    assert latest.version() == 3 and latest.to_pyarrow_table().num_rows == 2
    again = run(path, secrets_env)
    assert again["run_id"] == first["run_id"]
    assert again["input"]["snapshot"] == first["input"]["snapshot"]
    assert again["input"]["files"] == first["input"]["files"]
    v0_again = DeltaTable(uri, version=0, storage_options=opts).to_pyarrow_table()
    assert again["input"]["raw_records"] == v0_again.num_rows == 4
    assert clean_oids(tmp_path / "wh.duckdb") == [1, 4]  # version 0's rows, replaced not doubled


def test_as_of_on_s3_binds_the_version_current_then(bronze, s3_server, secrets_env, tmp_path):
    uri, key = bronze
    t0 = log_commit(s3_server, key, 0)["timestamp"]
    when = dt.datetime.fromtimestamp(t0 / 1000 + 0.001, dt.UTC).isoformat()
    doc = contract_doc(uri, s3_server.endpoint, "asof.duckdb", as_of=when)
    metrics = run(write_contract(tmp_path, "asof", doc), secrets_env)
    assert metrics["input"]["snapshot"]["version"] == 0
    assert clean_oids(tmp_path / "asof.duckdb") == [1, 4]


def assert_one_line_error(r: Any, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = [t for t in r.stderr.splitlines() if t.strip()]
    assert len(lines) == 2 and lines[1].startswith("  hint: "), r.stderr  # the error, its fix
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)
    assert SECRET_ACCESS_KEY not in r.stdout + r.stderr


def test_missing_table_and_missing_version_on_s3_are_located_errors(
    bronze, s3_server, secrets_env, tmp_path
):
    uri, _key = bronze
    gone = contract_doc(uri.rsplit("/", 1)[0] + "/nowhere", s3_server.endpoint, "wh.duckdb")
    path = write_contract(tmp_path, "gone", gone)
    r = run_cli("run", str(path), "--logical-date", DAY, env=secrets_env)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if '"path"' in t)
    assert_one_line_error(r, f"gone.yml:{line}", "source.path", "not a Delta table")
    path = write_contract(
        tmp_path, "v9", contract_doc(uri, s3_server.endpoint, "wh.duckdb", version=9)
    )
    r = run_cli("run", str(path), "--logical-date", DAY, env=secrets_env)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if '"version"' in t)
    assert_one_line_error(r, f"v9.yml:{line}", "source.version", "cannot load version 9")


# -- credentials the store refuses ----------------------------------------------------------


@pytest.fixture(scope="module")
def checking_server():
    """A second moto server that checks signatures: an IAM user allowed ``s3:*`` and its
    key are created while authentication is off, then ``/moto-api/reset-auth`` turns it
    on (0 requests unauthenticated) — from then on only that key signs valid requests.
    Its own server: the shared one must keep accepting the test key."""
    import boto3

    with S3Server() as server:
        iam = boto3.client(
            "iam",
            endpoint_url=server.endpoint,
            region_name=REGION,
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
        )
        iam.create_user(UserName="reader")
        allow = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
        iam.put_user_policy(
            UserName="reader",
            PolicyName="s3",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [allow]}),
        )
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        good = {"id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
        options = dict(
            server.storage_options(),
            AWS_ACCESS_KEY_ID=good["id"],
            AWS_SECRET_ACCESS_KEY=good["secret"],
        )
        server.create_bucket(BUCKET)
        uri, _ = new_table(server, options)
        req = urllib.request.Request(
            f"{server.endpoint}/moto-api/reset-auth",
            data=b"0",
            method="POST",
            headers={"Content-Type": "text/plain"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert json.loads(resp.read())["status"] == "ok"
        yield server, uri, good


def test_credentials_the_store_refuses_are_a_located_error_without_the_secret(
    checking_server, secrets_env, tmp_path
):
    server, uri, good = checking_server
    path = write_contract(
        tmp_path, "keys", contract_doc(uri, server.endpoint, "wh.duckdb", version=0)
    )
    right = {
        "SLUICEGATE_SECRET_S3_ACCESS_KEY_ID": good["id"],
        "SLUICEGATE_SECRET_S3_SECRET_ACCESS_KEY": good["secret"],
    }
    ok = run(path, right)  # the store does check: with the right key the run reads
    assert ok["input"]["snapshot"]["version"] == 0 and ok["input"]["raw_records"] == 4
    wrong = dict(right, SLUICEGATE_SECRET_S3_SECRET_ACCESS_KEY="wrong-" + good["secret"][6:])
    r = run_cli("run", str(path), "--logical-date", DAY, env=wrong)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "object_store" in t)
    assert_one_line_error(r, f"keys.yml:{line}", "[object_store]", "refused", server.endpoint)
    assert "credentials" in r.stderr.splitlines()[1]
    for secret in (good["secret"], wrong["SLUICEGATE_SECRET_S3_SECRET_ACCESS_KEY"]):
        assert secret not in r.stdout + r.stderr
