"""Build small contracts + data in a temp folder and run them; a pure-Python oracle of routing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from sluicegate.compile.contract_check import load_contract
from sluicegate.run.pipeline import RunResult, run_contract


def make_contract(
    root: Path,
    rules: list[dict],
    *,
    gate: dict | None = None,
    columns: dict | None = None,
    refs: bool = True,
) -> Path:
    cols = columns or {"id": "BIGINT", "a": "INTEGER", "b": "INTEGER", "k": "VARCHAR"}
    doc: dict[str, Any] = {
        "name": "t",
        "source": {"path": "data.json", "format": "ndjson", "columns": cols},
        "rules": rules,
        "gate": gate or {"warn_above": 1.0, "fail_above": 1.0},
        "outputs": {"warehouse": "wh.duckdb", "clean": "clean", "quarantine": "dlq"},
    }
    if refs:
        doc["references"] = {
            "ref": {"path": "ref.json", "format": "ndjson", "columns": {"k": "VARCHAR"}}
        }
    path = root / "contract.yml"
    path.write_text(json.dumps(doc), encoding="utf-8")  # JSON is YAML
    return path


def write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def run(contract: Path, day: str = "2024-01-01") -> RunResult:
    return run_contract(load_contract(contract, logical_date=day))


def outputs(root: Path) -> tuple[list[tuple], list[tuple]]:
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    try:
        clean = con.execute("SELECT _source_line FROM clean ORDER BY 1").fetchall()
        dlq = con.execute(
            "SELECT _source_line, _reason, [f.name for f in _failed_rules] FROM dlq ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    return clean, dlq


# -- oracle: SQL three-valued logic in Python --------------------------------------


def sql_gt(x, y):
    return None if x is None or y is None else x > y


def sql_and(*vs):
    if any(v is False for v in vs):
        return False
    if any(v is None for v in vs):
        return None
    return True


def sql_or(*vs):
    if any(v is True for v in vs):
        return True
    if any(v is None for v in vs):
        return None
    return False
