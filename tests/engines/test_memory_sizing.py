"""The embedded engine's buffer sized by the bound input (engines/duckdb_memory.py).

A contract without ``engine.memory_limit`` gets 800MB, raised to 1500MB once the bind has
seen a large input (5M retail lines spend ~13 % of their time spilling at 800MB); a
contract's own limit is never changed. Checked on a real DuckDB: the setting the
database reports, and the limit a whole run records in its metrics.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.engines import duckdb_memory
from sluicegate.engines.duckdb_memory import buffer_for_input
from sluicegate.run.pipeline import run_contract
from sluicegate.workspace import open_engine_for
from tests.conftest import copy_orders_example

pytestmark = pytest.mark.duckdb

GiB = 2**30
LARGE = duckdb_memory.LARGE_INPUT_BYTES


@pytest.mark.parametrize(
    ("input_bytes", "physical", "limit"),
    [
        (0, 24 * GiB, "800MB"),
        (230_000_000, 24 * GiB, "800MB"),  # the 1M-line retail feed: no gain from more
        (LARGE - 1, 24 * GiB, "800MB"),
        (LARGE, 24 * GiB, "1500MB"),
        (1_150_000_000, 24 * GiB, "1500MB"),  # the 5M-line feed
        (1_150_000_000, 3 * GiB, "1500MB"),  # half of 3 GiB still holds 1500MB
        (1_150_000_000, 2 * GiB, "800MB"),  # never more than half the machine's memory
    ],
)
def test_the_buffer_grows_with_a_large_input_only(input_bytes, physical, limit):
    assert buffer_for_input(input_bytes, physical) == limit


def test_a_containers_limit_counts_when_it_is_smaller(tmp_path):
    v2, v1, junk = tmp_path / "memory.max", tmp_path / "limit_in_bytes", tmp_path / "junk"
    v2.write_text("max\n")  # cgroup v2 without a limit
    v1.write_text("9223372036854771712\n")  # cgroup v1 without a limit
    junk.write_text("lots\n")
    machine = duckdb_memory.memory_available(())
    assert machine and machine > 0
    files = (str(v2), str(v1), str(junk), str(tmp_path / "absent"))
    assert duckdb_memory.memory_available(files) == machine
    v2.write_text(f"{2 * GiB}\n")  # a 2 GiB pod
    assert duckdb_memory.memory_available(files) == min(machine, 2 * GiB)
    pod = duckdb_memory.memory_available((str(v2),))
    assert buffer_for_input(LARGE, pod) == "800MB"


def _setting(engine) -> str:  # noqa: ANN001 - what DuckDB itself reports
    return engine.fetch("SELECT current_setting('memory_limit')")[0][0]


def _orders(tmp_path: Path, extra: str = "") -> Path:
    folder = copy_orders_example(tmp_path / "orders")
    contract = folder / "contract.yml"
    contract.write_text(contract.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return contract


def test_a_run_engine_raises_its_default_buffer_for_a_large_input(tmp_path):
    engine = open_engine_for(load_contract(_orders(tmp_path)))
    try:
        assert _setting(engine) == "762.9 MiB"  # 800MB
        assert engine.size_for_input(1000) == "800MB"
        assert _setting(engine) == "762.9 MiB"
        assert engine.size_for_input(LARGE) == "1500MB"
        assert _setting(engine) == "1.3 GiB"  # 1500MB
    finally:
        engine.close()


def test_a_contracts_own_limit_is_never_changed(tmp_path):
    contract = _orders(tmp_path, "engine: {memory_limit: 900MB}\n")
    engine = open_engine_for(load_contract(contract))
    try:
        assert engine.size_for_input(10 * LARGE) == "900MB"
        assert _setting(engine) == "858.3 MiB"  # 900MB
    finally:
        engine.close()


@pytest.mark.parametrize("own_limit", [False, True])
def test_a_run_sizes_its_buffer_from_the_bound_bytes(tmp_path, monkeypatch, own_limit):
    """The whole run: the pipeline hands the bind's byte count to the engine before the
    first heavy statement. The threshold is lowered to the example's size so a small
    feed counts as large."""
    contract = _orders(tmp_path, "engine: {memory_limit: 900MB}\n" if own_limit else "")
    data = contract.parent / "data" / "orders.json"
    monkeypatch.setattr(duckdb_memory, "LARGE_INPUT_BYTES", data.stat().st_size)
    result = run_contract(
        load_contract(contract, logical_date="2024-01-01"), engine_options={"profile": True}
    )
    assert result.metrics["ledger"]["balanced"]
    assert result.metrics["memory_limit"] == ("900MB" if own_limit else "1500MB")
    sets = [t for t in result.metrics["profile"] if "memory_limit" in t["sql"]]
    if own_limit:
        assert sets == []
    else:  # set once, in the bind, before any statement of the read
        assert [(t["stage"], t["sql"]) for t in sets] == [("bind", "SET memory_limit = '1500MB'")]


def test_a_small_run_keeps_the_default(tmp_path):
    result = run_contract(load_contract(_orders(tmp_path), logical_date="2024-01-01"))
    assert result.metrics["memory_limit"] == "800MB"
