"""One Delta warehouse, two engines: every table equals what one engine alone writes.

The orders contract with ``outputs.format: delta``: logical date 1 runs on DuckDB
(+ delta-rs), date 2 on Spark, in the same warehouse folder; then one DLQ row of each
date is fixed and recycled, one with Spark and one with DuckDB. The same steps run on
DuckDB alone in a second folder. Every table of both folders, read back by delta-rs
(tests/delta_read.py, not by an engine), must hold the same rows, order-insensitive;
only wall-clock values and the recycle ids (a hash of the recycle's time) may differ.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.dlq.lifecycle import fix
from sluicegate.dlq.store import open_store
from sluicegate.run.pipeline import run_contract
from sluicegate.run.recycle import recycle
from tests.conftest import copy_orders_example
from tests.delta_read import delta_dicts, is_delta
from tests.engines.test_differential import _rows

pytestmark = pytest.mark.spark

DAYS = ("2024-01-01", "2024-01-02")
DAY2 = [
    {"oid": 101, "cid": 10, "amt": 7, "ots": 2000},
    {"oid": 102, "cid": None, "amt": 8, "ots": 2001},
    {"oid": 103, "cid": 12, "amt": -3, "ots": 2002},
    {"oid": 104, "cid": 13, "amt": 9, "ots": 2003},
]
#: wall-clock columns, besides test_differential's VOLATILE ones
CLOCK = {"changed_at", "recycled_at"}


def contract_with_two_days(folder: Path) -> tuple[Path, list[Path]]:
    contract = copy_orders_example(folder / "orders") / "contract.yml"
    day1 = contract.parent / "data"
    day2 = contract.parent / "data2"
    day2.mkdir()
    shutil.copy(day1 / "customers.json", day2 / "customers.json")
    (day2 / "orders.json").write_text("".join(json.dumps(r) + "\n" for r in DAY2))
    return contract, [day1, day2]


def step(contract: Path, data: Path, day: str, warehouse: Path) -> Any:
    loaded = load_contract(contract, variables={"root": str(data)}, logical_date=day)
    loaded.contract.outputs.warehouse = str(warehouse)
    loaded.contract.outputs.format = "delta"
    return loaded


def operate(contract: Path, days: list[Path], warehouse: Path, engines: tuple[str, ...]) -> None:
    """engines: (date 1, date 2, first fix+recycle, second fix+recycle)."""
    for data, day, engine in zip(days, DAYS, engines[:2], strict=True):
        result = run_contract(step(contract, data, day, warehouse), engine_name=engine)
        assert result.exit_code in (0, 1), result.metrics.get("error")
    loaded = step(contract, days[1], DAYS[1], warehouse)
    for engine in engines[2:]:  # line 2 has no customer on both dates: oid 2, then 102
        with open_store(loaded, engine_name=engine) as s:
            rows = [r for r in s.rows(status="quarantined") if r["_source_line"] == 2]
            assert rows, "no quarantined row left at line 2"
            fix(s, keys=[rows[0]["_dlq_sk"]], where=None, sets={"cid": "10"}, by="ann")
            done = recycle(s, by="bob")
            assert done["recycled"] == 1, done


def table_rows(folder: Path) -> list[tuple]:
    def norm(row: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for k, v in row.items():
            if k in CLOCK:
                continue
            out[k] = "recycle-*" if isinstance(v, str) and v.startswith("recycle-") else v
        return out

    return _rows([norm(r) for r in delta_dicts(folder)])


def test_mixed_engine_warehouse_equals_one_engine(spark, tmp_path):  # noqa: ARG001
    contract, days = contract_with_two_days(tmp_path)
    mixed, alone = tmp_path / "wh-mixed", tmp_path / "wh-alone"
    operate(contract, days, mixed, ("duckdb", "spark", "spark", "duckdb"))
    operate(contract, days, alone, ("duckdb", "duckdb", "duckdb", "duckdb"))
    names = sorted(p.name for p in alone.iterdir() if is_delta(p))
    assert names == sorted(p.name for p in mixed.iterdir() if is_delta(p))
    assert {"good_orders", "quarantine", "quarantine_outbox", "quality_facts"} <= set(names)
    for name in names:
        if name == "_sluicegate_snapshots":
            continue  # table versions: compared below as a set of published tables
        assert table_rows(mixed / name) == table_rows(alone / name), name
    outbox = delta_dicts(mixed / "quarantine_outbox")
    assert len(outbox) == 2  # one recycled row of each date, by two engines
    clean_dates = {str(r["_logical_date"]) for r in delta_dicts(mixed / "good_orders")}
    assert clean_dates == set(DAYS)
    snaps = {
        (r["run_id"][:8], r["table_name"]) for r in delta_dicts(mixed / "_sluicegate_snapshots")
    }
    want = {
        (r["run_id"][:8], r["table_name"]) for r in delta_dicts(alone / "_sluicegate_snapshots")
    }
    assert snaps == want
