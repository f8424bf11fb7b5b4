"""The model stage under micro-batches: late rows are joined at their own event time.

A fact row takes the dimension version valid at the row's event time (``valid_from <= t <
valid_to``), never "the current one when it arrived". So the order in which files arrive
— including a file of old events landing last — does not change the fact table: three
arrival orders and one batch run give the same facts, equal to tiers written down here
by hand from the changelog.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.engines.test_incremental import DAY, run_batch, run_inc, write_file

pytestmark = pytest.mark.duckdb

CDC = [  # customer 1: bronze from 10, silver from 20, gold from 30; customer 2: basic from 5
    {"cid": 1, "eff": 10, "name": "Ann", "tier": "bronze"},
    {"cid": 1, "eff": 20, "name": "Ann", "tier": "silver"},
    {"cid": 1, "eff": 30, "name": "Ann", "tier": "gold"},
    {"cid": 2, "eff": 5, "name": "Bob", "tier": "basic"},
]
FILES = {
    "a-early.json": [
        {"oid": 1, "cid": 1, "amt": 10, "ots": 12},
        {"oid": 2, "cid": 2, "amt": 20, "ots": 6},
    ],
    "b-recent.json": [
        {"oid": 3, "cid": 1, "amt": 30, "ots": 25},
        {"oid": 4, "cid": 1, "amt": 40, "ots": 35},
    ],
    "c-old-events.json": [  # old events, possibly arriving last
        {"oid": 5, "cid": 1, "amt": 50, "ots": 11},
        {"oid": 6, "cid": 1, "amt": 60, "ots": 20},  # exactly on a change: the new version
        {"oid": 7, "cid": 1, "amt": 70, "ots": 3},  # before the first version: unknown
    ],
}
#: By hand from CDC: the version valid at each order's ots.
EXPECTED = {
    (1, "bronze"),
    (2, "basic"),
    (3, "silver"),
    (4, "gold"),
    (5, "bronze"),
    (6, "silver"),
    (7, None),
}


def model_contract(root: Path, warehouse: str) -> Path:
    write_file(root / "cdc.json", CDC)
    doc = {
        "name": "orders_stream",
        "source": {
            "path": "landing",
            "columns": {"oid": "INTEGER", "cid": "INTEGER", "amt": "INTEGER", "ots": "BIGINT"},
        },
        "dedupe": {"key": ["oid"]},
        "references": {
            "cdc": {
                "path": "cdc.json",
                "columns": {
                    "cid": "INTEGER",
                    "eff": "BIGINT",
                    "name": "VARCHAR",
                    "tier": "VARCHAR",
                },
            }
        },
        "gate": {"warn_above": 0.5, "fail_above": 0.9},
        "outputs": {"warehouse": warehouse, "clean": "clean", "quarantine": "dlq"},
        "model": {
            "dimensions": {
                "dim_customer": {
                    "reference": "cdc",
                    "key": "cid",
                    "effective": "eff",
                    "attributes": ["name", "tier"],
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
                        }
                    ],
                }
            },
        },
    }
    p = root / f"{warehouse}.yml"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def facts_of(warehouse: Path) -> set[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return set(con.execute("SELECT oid, tier FROM fct_orders").fetchall())
    finally:
        con.close()


def arrive(root: Path, order: list[str]) -> set[tuple]:
    """Drop the files one micro-batch at a time in ``order``; the fact table at the end."""
    contract = model_contract(root, "inc.duckdb")
    for name in order:
        write_file(root / "landing" / name, FILES[name])
        r = run_inc(contract)
        assert r.status in ("pass", "warn"), r.metrics.get("error")
    return facts_of(root / "inc.duckdb")


@pytest.mark.parametrize(
    "order",
    [
        ["a-early.json", "b-recent.json", "c-old-events.json"],
        ["c-old-events.json", "b-recent.json", "a-early.json"],
        ["b-recent.json", "c-old-events.json", "a-early.json"],
    ],
    ids=["in-order", "reversed", "late-in-the-middle"],
)
def test_arrival_order_does_not_change_the_facts(tmp_path: Path, order: list[str]):
    assert arrive(tmp_path, order) == EXPECTED


def test_micro_batches_equal_one_batch_run(tmp_path: Path):
    got = arrive(tmp_path, ["b-recent.json", "c-old-events.json", "a-early.json"])
    batch = model_contract(tmp_path, "batch.duckdb")
    run_batch(batch)
    assert facts_of(tmp_path / "batch.duckdb") == got == EXPECTED
    con = duckdb.connect(str(tmp_path / "inc.duckdb"), read_only=True)
    try:  # three runs' fact rows accumulated under one date, one per clean row
        runs, rows, days = con.execute(
            "SELECT count(DISTINCT _run_id), count(*), count(DISTINCT _logical_date) "
            "FROM fct_orders"
        ).fetchone()
        clean = con.execute("SELECT count(*) FROM clean").fetchone()[0]
    finally:
        con.close()
    assert (runs, rows, days, clean) == (3, 7, 1, 7)
    assert DAY


def test_mutant_joining_the_version_current_at_arrival_is_caught(tmp_path: Path, monkeypatch):
    from sqlglot import exp

    from sluicegate.compile.model import asof
    from sluicegate.compile.render import col

    def current(join, dim, fact_alias, alias):  # noqa: ANN001 - the mutant: ignore event time
        keys = [
            exp.EQ(this=col(fk, fact_alias), expression=col(dk, alias))
            for fk, dk in zip(join.on, dim.key, strict=True)
        ]
        return exp.and_(*keys, col("is_current", alias))

    monkeypatch.setattr(asof, "asof_on", current)
    assert arrive(tmp_path, ["c-old-events.json", "b-recent.json", "a-early.json"]) != EXPECTED
