"""DuckDB + Delta keeps the DLQ audit trail whole: a row per change of a key.

The audit table holds several rows for one ``_dlq_sk`` (a fix, then its recycle, each in
its own transaction). A keyed MERGE on ``_dlq_sk`` would keep one of them; the publish
must append the trail instead. Checked against the DuckDB-file engine's audit table,
read by DuckDB, with the Delta table read by delta-rs (tests/delta_read.py).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from sluicegate.run.pipeline import run_contract
from tests.delta_read import delta_dicts
from tests.engines.spark.test_mixed_engine_spark import DAYS, contract_with_two_days, operate, step


def _trail(rows: list[dict]) -> list[tuple[str, str, str]]:
    return sorted((str(r["_dlq_sk"]), r["action"], r["changed_by"]) for r in rows)


def test_fix_then_recycle_keeps_both_audit_rows_on_delta(tmp_path: Path) -> None:
    contract, days = contract_with_two_days(tmp_path)
    delta = tmp_path / "wh-delta"
    operate(contract, days, delta, ("duckdb", "duckdb", "duckdb", "duckdb"))
    got = _trail(delta_dicts(delta / "quarantine_audit"))

    file_wh = tmp_path / "wh.duckdb"
    for data, day in zip(days, DAYS, strict=True):
        loaded = step(contract, data, day, file_wh)
        loaded.contract.outputs.format = None
        assert run_contract(loaded, engine_name="duckdb").exit_code in (0, 1)
    from sluicegate.dlq.lifecycle import fix
    from sluicegate.dlq.store import open_store
    from sluicegate.run.recycle import recycle

    loaded = step(contract, days[1], DAYS[1], file_wh)
    loaded.contract.outputs.format = None
    for _ in range(2):
        with open_store(loaded, engine_name="duckdb") as s:
            rows = [r for r in s.rows(status="quarantined") if r["_source_line"] == 2]
            fix(s, keys=[rows[0]["_dlq_sk"]], where=None, sets={"cid": "10"}, by="ann")
            assert recycle(s, by="bob")["recycled"] == 1
    con = duckdb.connect(str(file_wh), read_only=True)
    try:
        cur = con.execute("SELECT * FROM quarantine_audit")
        cols = [d[0] for d in cur.description]
        want = _trail([dict(zip(cols, r, strict=True)) for r in cur.fetchall()])
    finally:
        con.close()
    assert [a for _k, a, _b in want].count("fix") == 2  # independent: two fixes, two recycles
    assert got == want
