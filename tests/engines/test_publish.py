"""Write-audit-publish: one transaction across every output, idempotent reruns, a failed
gate that publishes everything but the clean rows.

Expected contents are computed here, independently of sluicegate's compiler: the rows
are generated in Python with their outcome known, and the warehouse is read back with
plain SQL (DuckDB's, or the shared SparkSession's: tests/engines/engine_params.py). The
tests that exercise the engine run on both engines (the ``engine`` fixture). Helpers in
this module are shared by the other publish/facts tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from sluicegate.compile import facts as facts_c
from sluicegate.compile import outputs as out_c
from sluicegate.compile.contract_check import load_contract
from sluicegate.run import publish as publish_m
from sluicegate.run.pipeline import RunResult, run_contract
from tests.engines.engine_params import read_dicts, read_rows, warehouse_name

pytestmark = pytest.mark.duckdb

OWNER = "team@example.com"
TABLES = ("clean", "dlq", "dups", "facts")


def govern_contract(
    root: Path,
    *,
    rules: list[dict] | None = None,
    gate: dict | None = None,
    source: dict | None = None,
    columns: dict | None = None,
    path: str = "data.json",
    engine: str = "duckdb",
) -> Path:
    """A contract over ``data.json`` with explicit output names (JSON is YAML), run on
    ``engine`` (its warehouse: ``wh.duckdb`` or, for Spark, the folder ``wh``)."""
    doc: dict[str, Any] = {
        "name": "gov",
        "owner": OWNER,
        "engine": engine,
        "source": {
            "path": path,
            "format": "ndjson",
            "columns": columns or {"id": "BIGINT", "a": "INTEGER", "k": "VARCHAR"},
            **(source or {}),
        },
        "dedupe": {"key": ["id"]},
        "rules": rules
        if rules is not None
        else [{"name": "a_pos", "expect": "a > 0", "owner": "rules@example.com", "version": 3}],
        "gate": gate or {"warn_above": 0.1, "fail_above": 0.3},
        "outputs": {
            "warehouse": warehouse_name(engine),
            "clean": "clean",
            "quarantine": "dlq",
            "duplicates": "dups",
            "facts": "facts",
        },
    }
    p = root / "contract.yml"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def write_rows(path: Path, rows: list) -> Path:
    """Rows are dicts (JSON lines) or raw strings (written as they are)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def feed(n: int, bad: int, dups: int = 0, start: int = 0) -> list[dict]:
    """``n`` records: the first ``bad`` fail ``a > 0``; ``dups`` resend earlier ids."""
    rows = [{"id": start + i, "a": -1 if i < bad else 1, "k": "x"} for i in range(n)]
    rows += [{"id": start + i, "a": 1, "k": "dup"} for i in range(bad, bad + dups)]
    return rows


def run(contract: Path, day: str = "2024-01-01", **kw: Any) -> RunResult:
    return run_contract(load_contract(contract, logical_date=day), **kw)


def is_wall_clock(column: str) -> bool:
    """Columns that hold the time something happened: the only ones a rerun may change."""
    return (
        column in facts_c.WALL_CLOCK_COLUMNS
        or column.endswith("_at")
        or column.endswith("_timestamp")
    )


def dump(warehouse: Path) -> dict[str, list[tuple]]:
    """Every table's rows (sorted; wall-clock columns left out), read with plain DuckDB."""
    if not warehouse.exists():
        return {}
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        out = {}
        for (t,) in con.execute(
            "SELECT table_name FROM information_schema.tables ORDER BY 1"
        ).fetchall():
            cols = [
                c
                for (c,) in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                    "ORDER BY ordinal_position",
                    [t],
                ).fetchall()
                if not is_wall_clock(c)
            ]
            sel = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in cols)
            out[t] = sorted(
                con.execute(f'SELECT {sel} FROM "{t}"').fetchall(),
                key=lambda r: [str(v) for v in r],
            )
        return out
    finally:
        con.close()


def query(warehouse: Path, sql: str, params: list | None = None) -> list[tuple]:
    """A read-only query (DuckDB SQL) on either engine's warehouse."""
    return read_rows(warehouse, sql, params)


def facts_of(warehouse: Path, run_id: str | None = None) -> dict[str, dict]:
    rows = read_dicts(
        warehouse,
        "SELECT * FROM facts" + (" WHERE run_id = ?" if run_id else ""),
        [run_id] if run_id else [],
    )
    return {r["check_id"]: r for r in rows}


# -- tests ----------------------------------------------------------------------------


def test_failed_gate_publishes_quarantine_facts_and_run_record_but_no_clean(tmp_path, engine):
    c = govern_contract(tmp_path, engine=engine)
    write_rows(tmp_path / "data.json", feed(10, bad=4))  # 40% > fail_above 30%
    r = run(c)
    assert (r.status, r.exit_code) == ("fail", 1)
    wh = tmp_path / warehouse_name(engine)
    assert query(wh, "SELECT count(*) FROM clean") == [(0,)]
    assert query(wh, "SELECT count(*), min(_reason), max(_reason) FROM dlq") == [
        (4, "a_pos", "a_pos")
    ]
    f = facts_of(wh, r.metrics["run_id"])
    assert f["quarantine_share"]["status"] == "fail" and f["quarantine_share"]["metric"] == "0.4"
    assert f["rule:a_pos"]["owner"] == "rules@example.com" and f["rule:a_pos"]["version"] == 3
    runs = query(
        wh, "SELECT run_id, status, raw_records, clean, clean_published FROM " + facts_c.RUNS_TABLE
    )
    assert runs == [(r.metrics["run_id"], "fail", 10, 6, 0)]
    assert r.metrics["clean_published"] == 0


def test_passing_run_publishes_every_output_in_one_go(tmp_path, engine):
    c = govern_contract(tmp_path, engine=engine)
    write_rows(tmp_path / "data.json", feed(20, bad=1, dups=2))
    r = run(c)
    assert r.status == "pass", r.metrics["gate"]
    wh = tmp_path / warehouse_name(engine)
    counts = {t: query(wh, f'SELECT count(*) FROM "{t}"')[0][0] for t in ("clean", "dlq", "dups")}
    assert counts == {"clean": 19, "dlq": 1, "dups": 2}
    assert set(query(wh, "SELECT DISTINCT _run_id FROM clean")[0]) == {r.metrics["run_id"]}
    assert query(wh, "SELECT DISTINCT CAST(_logical_date AS VARCHAR) FROM clean") == [
        ("2024-01-01",)
    ]
    record = query(wh, f"SELECT metrics FROM {facts_c.RUNS_TABLE}")[0][0]
    assert json.loads(record)["run_id"] == r.metrics["run_id"]


def test_mutant_clean_published_on_failed_gate_is_caught(tmp_path, monkeypatch):
    """A publish that forgets to withhold the clean rows of a failed run shows them."""

    def publish_anyway(ctx):  # the mutant: skip the withholding
        ctx.counts.clean_published = ctx.counts.ledger["clean"]

    monkeypatch.setattr(publish_m, "_withhold_clean_on_fail", publish_anyway)
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(10, bad=4))
    run(c)
    assert query(tmp_path / "wh.duckdb", "SELECT count(*) FROM clean") != [(0,)]


def test_rerun_twice_gives_identical_tables_and_no_duplicate_facts(tmp_path):
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(30, bad=2, dups=3))
    wh = tmp_path / "wh.duckdb"
    r1 = run(c)
    first = dump(wh)
    r2 = run(c)
    second = dump(wh)
    r3 = run(c)
    assert r1.metrics["run_id"] == r2.metrics["run_id"] == r3.metrics["run_id"]
    assert dump(wh) == second == first
    n_facts = len(r1.metrics["facts"])
    assert query(wh, "SELECT count(*), count(DISTINCT check_id) FROM facts") == [(n_facts, n_facts)]
    assert query(wh, f"SELECT count(*) FROM {facts_c.RUNS_TABLE}") == [(1,)]
    assert query(wh, "SELECT count(*) FROM clean") == [(28,)]


def test_mutant_facts_appended_instead_of_merged_is_caught(tmp_path, monkeypatch):
    def append(table, run_id, facts):  # the mutant: INSERT, no MERGE
        return out_c.insert_into(table, facts_c.rows_select(facts_c.FACT_COLUMNS, facts))

    monkeypatch.setattr(facts_c, "merge_facts", append)
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(10, bad=0))
    assert run(c).status == "pass"
    again = run(c)  # the facts read-back sees the duplicates and refuses to publish
    assert again.status == "ledger_violation"
    assert "facts of run" in again.metrics["error"]


def test_mutant_outputs_appended_on_rerun_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(
        out_c, "delete_run", lambda table, day, **kw: out_c.delete_run_id(table, "-")
    )
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(10, bad=1))
    assert run(c).status == "pass"
    assert run(c).status == "ledger_violation"  # the rerun would double the date's rows


def test_rerun_with_changed_input_replaces_the_date_and_keeps_other_dates(tmp_path, engine):
    c = govern_contract(tmp_path, engine=engine)
    wh = tmp_path / warehouse_name(engine)
    write_rows(tmp_path / "data.json", feed(10, bad=1))
    d1 = run(c, "2024-01-01")
    write_rows(tmp_path / "data.json", feed(5, bad=0, start=100))
    d2 = run(c, "2024-01-02")
    write_rows(tmp_path / "data.json", feed(7, bad=2, start=200))
    d1b = run(c, "2024-01-01")
    assert d1b.metrics["run_id"] != d1.metrics["run_id"]
    by_day = dict(
        query(wh, "SELECT CAST(_logical_date AS VARCHAR), count(*) FROM clean GROUP BY 1")
    )
    assert by_day == {"2024-01-01": 5, "2024-01-02": 5}
    assert query(wh, "SELECT min(id), max(id) FROM clean WHERE _logical_date = '2024-01-01'") == [
        (202, 206)
    ]
    assert query(wh, "SELECT DISTINCT _run_id FROM dlq WHERE _logical_date = '2024-01-01'") == [
        (d1b.metrics["run_id"],)
    ]
    # facts are history keyed by run: the superseded run's facts stay, the new run's are added
    runs = {r for (r,) in query(wh, "SELECT DISTINCT run_id FROM facts")}
    assert runs == {d1.metrics["run_id"], d2.metrics["run_id"], d1b.metrics["run_id"]}


def test_ledger_violation_publishes_nothing(tmp_path, monkeypatch):
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(10, bad=1))
    assert run(c).status == "pass"
    before = dump(tmp_path / "wh.duckdb")
    real = out_c.quarantine_select
    monkeypatch.setattr(out_c, "quarantine_select", lambda *a, **k: real(*a, **k).limit(0))
    write_rows(tmp_path / "data.json", feed(10, bad=3))
    r = run(c)
    assert (r.status, r.exit_code) == ("ledger_violation", 3)
    assert dump(tmp_path / "wh.duckdb") == before  # not the outputs, not the facts, no record
    failed = {f["check_id"]: f["status"] for f in r.metrics["facts"]}
    assert failed["ledger_conserved"] == "fail"
