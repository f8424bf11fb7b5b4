"""One contract, its sources and its Delta warehouse on S3 (moto on loopback): the case
tests/engines/test_s3_duckdb.py and tests/engines/spark/test_s3_spark.py both run.

:func:`scenario` uploads two days of orders and the customers reference to
``s3://lake/<prefix>/``, then on one engine: runs 2024-01-01 and 2024-01-02, rewrites
2024-01-01's object and reruns that date (a rerun replaces its date), fixes one DLQ row
and recycles it. Every table is then read back from S3 by the test's own delta-rs reader
(:func:`delta_rows`: ``DeltaTable`` with ``storage_options``, files read by pyarrow's S3
client) — not by sluicegate. :func:`local_twin` runs the same steps on local files into
a one-file DuckDB warehouse: the independent outcome both engines must match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tests.servers.s3 import REGION

BUCKET = "lake"
DAY1, DAY2 = "2024-01-01", "2024-01-02"
COLUMNS = {
    "oid": {"type": "INTEGER", "nullable": False},
    "cid": "INTEGER",
    "amt": "INTEGER",
    "ots": "BIGINT",
}
ORDERS = [
    {"oid": 1, "cid": 10, "amt": 100, "ots": 1000},
    {"oid": 2, "cid": None, "amt": 50, "ots": 1001},
    {"oid": 3, "cid": 11, "amt": None, "ots": 1002},
    {"oid": 4, "cid": 11, "amt": 0, "ots": 1003},
    {"oid": 5, "cid": 12, "amt": -5, "ots": 1004},
    {"oid": 6, "cid": 99, "amt": 20, "ots": 1005},
    {"oid": 7, "cid": 13, "amt": 70, "ots": 1006},
    {"oid": 7, "cid": 13, "amt": 70, "ots": 1006},
]
DAY2_ORDERS = [{"oid": 20 + i, "cid": 10 + i % 4, "amt": i - 1, "ots": 2000 + i} for i in range(6)]
#: 2024-01-01 rewritten upstream: oid 1 corrected, oid 6 withdrawn, oid 8 added
ORDERS_V2 = [{**r, "amt": 111} if r["oid"] == 1 else r for r in ORDERS if r["oid"] != 6] + [
    {"oid": 8, "cid": 12, "amt": 8, "ots": 1007}
]
CUSTOMERS = [{"cid": c, "name": f"c{c}"} for c in (10, 11, 12, 13)]
TABLES = ("good_orders", "quarantine", "quarantine_outbox", "order_duplicates", "quality_facts")


def ndjson(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")


def contract(
    *, engine: str, source: str, warehouse: str, fmt: str, endpoint: str | None
) -> dict[str, Any]:
    """The contract; ``source`` is a prefix (``s3://…`` or a folder) holding ``in/`` and
    ``ref/``. Credentials only as ``${secret:…}`` tokens."""
    doc: dict[str, Any] = {
        "name": "orders_s3",
        "engine": engine,
        "source": {
            "name": "orders_raw",
            "path": source + "/in/${logical_date}/orders.json",
            "format": "ndjson",
            "columns": COLUMNS,
        },
        "dedupe": {"key": ["oid"]},
        "references": {
            "customers": {
                "path": source + "/ref/customers.json",
                "format": "ndjson",
                "columns": {"cid": "INTEGER", "name": "VARCHAR"},
            }
        },
        "rules": [
            {"name": "null_customer", "expect": "cid IS NOT NULL"},
            {"name": "non_positive_amount", "expect": "amt IS NOT NULL AND amt > 0"},
            {"name": "unknown_customer", "expect": "cid IN (SELECT cid FROM customers)"},
        ],
        "gate": {"warn_above": 0.05, "fail_above": 0.9},
        "outputs": {
            "warehouse": warehouse,
            "format": fmt,
            "clean": "good_orders",
            "quarantine": "quarantine",
            "duplicates": "order_duplicates",
            "facts": "quality_facts",
        },
    }
    if endpoint is not None:
        doc["object_store"] = {
            "endpoint": endpoint,
            "region": REGION,
            "access_key_id": "${secret:s3/access_key_id}",
            "secret_access_key": "${secret:s3/secret_access_key}",
        }
    return doc


def upload(server: Any, prefix: str, day1: list[dict] = ORDERS) -> None:
    server.create_bucket(BUCKET)
    server.put(BUCKET, f"{prefix}/in/{DAY1}/orders.json", ndjson(day1))
    server.put(BUCKET, f"{prefix}/in/{DAY2}/orders.json", ndjson(DAY2_ORDERS))
    server.put(BUCKET, f"{prefix}/ref/customers.json", ndjson(CUSTOMERS))


def write_local(folder: Path, day1: list[dict] = ORDERS) -> None:
    for day, rows in ((DAY1, day1), (DAY2, DAY2_ORDERS)):
        p = folder / "in" / day / "orders.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(ndjson(rows))
    (folder / "ref").mkdir(parents=True, exist_ok=True)
    (folder / "ref" / "customers.json").write_bytes(ndjson(CUSTOMERS))


def steps(path: Path, engine: str, rewrite: Any, days: tuple = (DAY1, DAY2)) -> dict[str, Any]:
    """Run ``days``, rewrite + rerun day 1, fix + recycle: what each step returned."""
    from sluicegate.compile.contract_check import load_contract
    from sluicegate.dlq.ledger import dlq_ledger
    from sluicegate.dlq.lifecycle import fix
    from sluicegate.dlq.store import open_store
    from sluicegate.run.pipeline import run_contract
    from sluicegate.run.recycle import recycle

    out: dict[str, Any] = {"runs": []}
    for day in days:
        r = run_contract(load_contract(path, logical_date=day), engine_name=engine)
        out["runs"].append(r.metrics)
    rewrite()
    loaded = load_contract(path, logical_date=DAY1)
    out["runs"].append(run_contract(loaded, engine_name=engine).metrics)
    with open_store(loaded, engine_name=engine) as s:
        fix(s, keys=[], where="oid = 2", sets={"cid": "10"}, by="ann")
        out["recycle"] = recycle(s, by="bob")
        out["dlq_ledger"] = dlq_ledger(s)
    out["loaded"] = loaded
    return out


def delta_rows(server: Any, uri: str, version: int | None = None) -> list[dict[str, Any]]:
    """A Delta table on S3 read by delta-rs and pyarrow with the test's own settings."""
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    table = DeltaTable(uri, version=version, storage_options=server.storage_options())
    fs = pafs.S3FileSystem(
        access_key=server.storage_options()["AWS_ACCESS_KEY_ID"],
        secret_key=server.storage_options()["AWS_SECRET_ACCESS_KEY"],
        endpoint_override=f"{server.host}:{server.port}",
        scheme="http",
        region=REGION,
    )
    rows: list[dict[str, Any]] = []
    for action in pa.table(table.get_add_actions(flatten=True)).to_pylist():
        parts = {k[len("partition.") :]: v for k, v in action.items() if k.startswith("partition.")}
        path = unquote(action["path"])
        full = path if "://" in path else f"{uri}/{path}"
        for row in pq.read_table(full.split("://", 1)[1], filesystem=fs).to_pylist():
            row.update(parts)
            rows.append(row)
    return rows


#: what the comparison keeps of each table: values and lineage line, not run ids or paths
KEEP = {
    "good_orders": ("oid", "cid", "amt", "ots", "_source_line", "_logical_date"),
    "quarantine": ("oid", "cid", "amt", "_reason", "_source_line", "_logical_date", "_dlq_status"),
    "quarantine_outbox": ("oid", "cid", "amt", "_logical_date"),
    "order_duplicates": ("oid", "_source_line", "_logical_date"),
    "quality_facts": ("check_id", "logical_date", "status", "metric", "failed", "evaluated"),
}


def project(table: str, rows: list[dict[str, Any]]) -> list[tuple]:
    keep = KEEP[table]
    return sorted((tuple(str(r.get(c)) for c in keep) for r in rows), key=repr)


def duckdb_rows(warehouse: Path, table: str) -> list[dict[str, Any]]:
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cur = con.execute(f'SELECT * FROM "{table}"')
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def local_twin(tmp: Path, days: tuple = (DAY1, DAY2)) -> dict[str, Any]:
    """The same steps on local files and a one-file DuckDB warehouse."""
    data = tmp / "local"
    write_local(data)
    path = tmp / "local.yml"
    doc = contract(
        engine="duckdb",
        source=str(data),
        warehouse=str(tmp / "twin.duckdb"),
        fmt="duckdb",
        endpoint=None,
    )
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = steps(path, "duckdb", lambda: write_local(data, ORDERS_V2), days)
    tables = {t: project(t, duckdb_rows(tmp / "twin.duckdb", t)) for t in TABLES}
    return {"tables": tables, "result": result}


def s3_run(
    server: Any, tmp: Path, prefix: str, engine: str, days: tuple = (DAY1, DAY2)
) -> dict[str, Any]:
    """The scenario on S3 (sources and warehouse) on ``engine``."""
    upload(server, prefix)
    warehouse = f"s3://{BUCKET}/{prefix}/wh"
    doc = contract(
        engine=engine,
        source=f"s3://{BUCKET}/{prefix}",
        warehouse=warehouse,
        fmt="delta",
        endpoint=server.endpoint,
    )
    path = tmp / "contract.yml"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = steps(
        path,
        engine,
        lambda: server.put(BUCKET, f"{prefix}/in/{DAY1}/orders.json", ndjson(ORDERS_V2)),
        days,
    )
    raw = {t: delta_rows(server, f"{warehouse}/{t}") for t in TABLES}
    return {
        "path": path,
        "warehouse": warehouse,
        "result": result,
        "raw": raw,
        "tables": {t: project(t, rows) for t, rows in raw.items()},
    }
