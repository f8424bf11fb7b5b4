"""After a run: fix and recycle a quarantined row, query the facts — on every engine.

The orders example quarantines order 3 (``amt`` NULL: ``non_positive_amount``). An
operator sets ``amt = 30`` and recycles: the row must move to the clean table exactly
once (a second recycle does nothing), the outbox must record it, the inbox row must say
``recycled``. The facts dashboard's ``latest`` query must list one fact per rule and
check of the run. Expected values come from the example data, not from an engine.
"""

from __future__ import annotations

from pathlib import Path

from sqlglot import exp

from sluicegate.compile import dashboard
from sluicegate.compile.contract_check import load_contract
from sluicegate.dlq.lifecycle import fix
from sluicegate.dlq.store import open_store
from sluicegate.run.pipeline import run_contract
from sluicegate.run.recycle import recycle
from tests.conftest import copy_orders_example


def _orders(tmp_path: Path, engine_name: str):  # noqa: ANN202
    contract = copy_orders_example(tmp_path / "orders") / "contract.yml"
    loaded = load_contract(contract, logical_date="2024-01-01")
    wh = tmp_path / ("wh.duckdb" if engine_name == "duckdb" else "wh")
    loaded.contract.outputs.warehouse = str(wh)
    return loaded, wh


def test_fix_and_recycle_once(engine_name, open_test_engine, tmp_path):
    loaded, wh = _orders(tmp_path, engine_name)
    assert run_contract(loaded, engine_name=engine_name).status in ("pass", "warn")
    o = loaded.contract.outputs

    eng = open_test_engine(wh)
    ((key,),) = eng.fetch(exp.select("_dlq_sk").from_(o.quarantine).where(exp.condition("oid = 3")))
    eng.close()

    with open_store(loaded, engine_name=engine_name) as store:
        done = fix(store, keys=[key], where=None, sets={"amt": "30"}, by="tester")
        assert done.keys == [key]
    with open_store(loaded, engine_name=engine_name) as store:
        first = recycle(store, by="tester")
    with open_store(loaded, engine_name=engine_name) as store:
        second = recycle(store, by="tester")
    assert (first["considered"], first["recycled"]) == (1, 1)
    assert first["recycled_keys"] == [key]
    assert (second["considered"], second["recycled"]) == (0, 0)

    eng = open_test_engine(wh)
    clean = eng.fetch(exp.select("oid", "amt", "_recycled_from").from_(o.clean).order_by("oid"))
    assert [(r[0], r[1]) for r in clean] == [(1, 100), (3, 30), (7, 70), (10, 5), (11, 1)]
    assert [r[2] for r in clean if r[0] == 3] == [key]
    assert eng.fetch(exp.select("_dlq_sk").from_(o.outbox)) == [(key,)]
    assert eng.fetch(
        exp.select("_dlq_status").from_(o.quarantine).where(exp.condition("oid = 3"))
    ) == [("recycled",)]


def test_facts_dashboard_latest(engine_name, open_test_engine, tmp_path):
    loaded, wh = _orders(tmp_path, engine_name)
    result = run_contract(loaded, engine_name=engine_name)
    eng = open_test_engine(wh)
    q = dashboard.build("latest", loaded.contract.outputs.facts, loaded.contract.name)
    rows = eng.fetch_dicts(q.query)
    checks = {r["check_id"]: r for r in rows}
    assert len(checks) == len(rows) == len(result.metrics["facts"])
    for rule in ("null_customer", "non_positive_amount", "unknown_customer"):
        matching = [r for cid, r in checks.items() if cid.endswith(rule)]
        assert matching and matching[0]["failed"] == result.metrics["rules"][rule]["failed"]
