"""The fact export under micro-batches: each batch writes only its own rows.

A micro-batch replaces only its own run id's rows, so its export writes only those
(``part-<date>-<run id>-<i>.parquet``) instead of rewriting the whole date every batch —
the publish of a watch no longer grows with the day. What must still hold, checked
against the warehouse's fact table (an independent read of what was committed):

* the export, read as one Hive dataset, holds exactly the fact table's rows (EXCEPT ALL
  both ways), and every run's files hold only that run's rows;
* a batch run of the date replaces every file of the date, the micro-batches' included;
* a crash between a micro-batch's commit and its swap is repaired by the next batch of
  the date, which then rewrites the date's export whole.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from sluicegate.run import model as run_model
from tests.engines.test_incremental import DAY, run_batch, run_inc, write_file

pytestmark = pytest.mark.duckdb

CDC = [
    {"cid": 1, "eff": "2024-01-01 00:00:00", "tier": "bronze"},
    {"cid": 1, "eff": "2024-03-01 00:00:00", "tier": "silver"},
    {"cid": 2, "eff": "2024-01-01 00:00:00", "tier": "basic"},
]
WAVES = [  # three landed files, each reaching more than one month partition
    [
        {"oid": 1, "cid": 1, "amt": 10, "ots": "2024-01-05 10:00:00"},
        {"oid": 2, "cid": 2, "amt": 20, "ots": "2024-02-06 11:00:00"},
        {"oid": 3, "cid": 1, "amt": 30, "ots": "2024-03-07 12:00:00"},
    ],
    [
        {"oid": 4, "cid": 2, "amt": 40, "ots": "2024-01-08 13:00:00"},
        {"oid": 5, "cid": 1, "amt": 50, "ots": "2024-03-09 14:00:00"},
        {"oid": 1, "cid": 1, "amt": 99, "ots": "2024-01-05 10:00:00"},  # a duplicate key
        {"oid": 6, "cid": 9, "amt": 60, "ots": None},  # no time: the default partition
    ],
    [
        {"oid": 7, "cid": 1, "amt": 70, "ots": "2024-02-10 15:00:00"},
        {"oid": 8, "cid": 2, "amt": 80, "ots": "2024-04-11 16:00:00"},
    ],
]


class Boom(RuntimeError):
    pass


def contract(root: Path) -> Path:
    write_file(root / "cdc.json", CDC)
    doc = {
        "name": "orders_export",
        "source": {
            "path": "landing",
            "columns": {"oid": "INTEGER", "cid": "INTEGER", "amt": "INTEGER", "ots": "TIMESTAMP"},
        },
        "dedupe": {"key": ["oid"]},
        "references": {
            "cdc": {
                "path": "cdc.json",
                "columns": {"cid": "INTEGER", "eff": "TIMESTAMP", "tier": "VARCHAR"},
            }
        },
        "gate": {"warn_above": 0.5, "fail_above": 0.9},
        "outputs": {
            "warehouse": "wh.duckdb",
            "clean": "clean",
            "quarantine": "dlq",
            "export": "export",
        },
        "model": {
            "dimensions": {
                "dim_customer": {
                    "reference": "cdc",
                    "key": "cid",
                    "effective": "eff",
                    "attributes": ["tier"],
                }
            },
            "facts": {
                "fct_orders": {
                    "columns": ["oid", "cid", "amt", "ots"],
                    "joins": [
                        {
                            "dimension": "dim_customer",
                            "on": "cid",
                            "as_of": "ots",
                            "attributes": ["tier"],
                            "on_missing": "unknown_member",
                        }
                    ],
                }
            },
        },
    }
    p = root / "orders.yml"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def land(root: Path, n: int) -> None:
    write_file(root / "landing" / f"wave-{n}.json", WAVES[n])


def export_dir(root: Path) -> Path:
    return root / "export" / "fct_orders"


def files(root: Path) -> list[str]:
    base = export_dir(root)
    return sorted(str(p.relative_to(base)) for p in base.rglob("*.parquet"))


def mismatch(root: Path) -> tuple[int, int, int]:
    """(fact rows, rows only in the fact table, rows only in the export)."""
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    glob = str(export_dir(root) / "**" / "*.parquet")
    cols = "oid, cid, amt, ots, tier, _source_file, _source_line, _run_id"
    try:
        con.execute(
            f"CREATE TEMP VIEW e AS SELECT {cols} FROM read_parquet('{glob}', "
            "hive_partitioning = true)"
        )
        n = con.execute("SELECT count(*) FROM fct_orders").fetchone()[0]
        only_fact = con.execute(
            f"SELECT count(*) FROM (SELECT {cols} FROM fct_orders EXCEPT ALL SELECT * FROM e)"
        ).fetchone()[0]
        only_export = con.execute(
            f"SELECT count(*) FROM (SELECT * FROM e EXCEPT ALL SELECT {cols} FROM fct_orders)"
        ).fetchone()[0]
        return n, only_fact, only_export
    finally:
        con.close()


def runs_in_files(root: Path) -> dict[str, set[str]]:
    """Each export file → the run ids of the rows it holds."""
    out: dict[str, set[str]] = {}
    for p in export_dir(root).rglob("*.parquet"):
        ids = duckdb.execute(f"SELECT DISTINCT _run_id FROM read_parquet('{p}')").fetchall()
        out[p.name] = {r[0] for r in ids}
    return out


def test_each_micro_batch_exports_only_its_own_rows(tmp_path: Path):
    c = contract(tmp_path)
    run_ids = []
    for n in range(len(WAVES)):
        land(tmp_path, n)
        result = run_inc(c)
        assert result.exit_code == 0, result
        export = result.metrics["model"]["facts"]["fct_orders"]["export"]
        assert export["scope"] == "run"
        run_ids.append(result.metrics["run_id"])
        # the batch's files hold its rows only, and the export equals the fact table
        fact_rows, only_fact, only_export = mismatch(tmp_path)
        assert (only_fact, only_export) == (0, 0), files(tmp_path)
        mine = [f for f in files(tmp_path) if f"-{result.metrics['run_id']}-" in f]
        assert len(mine) == export["files"] > 0
        con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
        own = con.execute(
            "SELECT count(*) FROM fct_orders WHERE _run_id = ?", [result.metrics["run_id"]]
        ).fetchone()[0]
        con.close()
        assert export["rows"] == own > 0 and fact_rows >= own
    assert mismatch(tmp_path)[0] == 9 - 1  # nine lines, one duplicate
    for name, ids in runs_in_files(tmp_path).items():
        owner = next(r for r in run_ids if f"-{r}-" in name)
        assert ids == {owner}, name
    # a batch run of the date replaces every micro-batch file with the date's own
    result = run_batch(c)
    assert result.exit_code == 0
    assert result.metrics["model"]["facts"]["fct_orders"]["export"]["scope"] == "date"
    assert all(not any(f"-{r}-" in f for r in run_ids) for f in files(tmp_path))
    assert mismatch(tmp_path) == (8, 0, 0)


def test_a_crash_between_commit_and_swap_is_repaired_by_the_next_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    c = contract(tmp_path)
    land(tmp_path, 0)
    assert run_inc(c).exit_code == 0
    land(tmp_path, 1)
    real_swap = run_model.swap_partitions

    def crash(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        raise Boom("crash after the commit, before the swap")

    monkeypatch.setattr(run_model, "swap_partitions", crash)
    with pytest.raises(Boom):
        run_inc(c)
    monkeypatch.setattr(run_model, "swap_partitions", real_swap)
    # committed but not swapped: the export lacks the second batch's rows
    n, only_fact, only_export = mismatch(tmp_path)
    assert only_fact > 0 and only_export == 0
    staging = tmp_path / "export" / ".fct_orders.staging"
    assert [p.name.split(".")[0] for p in staging.iterdir()] == [DAY]
    # the next batch of the date finds the left folder and rewrites the date whole
    land(tmp_path, 2)
    result = run_inc(c)
    assert result.exit_code == 0
    assert result.metrics["model"]["facts"]["fct_orders"]["export"]["scope"] == "date"
    assert mismatch(tmp_path) == (8, 0, 0)
    assert not staging.exists()
