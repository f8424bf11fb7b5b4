"""Every command opens a contract's engine through the workspace, with the contract's
``engine:`` section applied — the ``facts`` / ``engine.remote`` drift cannot come back.

Before the workspace, ``sluicegate facts`` opened a Spark warehouse with no options at
all, so a contract's ``engine.remote`` / ``engine.master`` were ignored there while
``run`` honoured them. These tests pin the options each kind of command gets, and that
the report, the DLQ store and the run all reach the engine through ``open_engine_for``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluicegate import workspace
from sluicegate.compile.contract_check import load_contract
from sluicegate.workspace import Access, Workspace, engine_options


def spark_contract(tmp_path: Path) -> Path:
    doc = {
        "name": "remote_feed",
        "engine": {
            "name": "spark",
            "master": "spark://cluster:7077",
            "remote": "sc://connect:15002",
            "options": {"spark.sql.shuffle.partitions": "4"},
        },
        "source": {"path": "data.json", "format": "ndjson", "columns": {"id": "BIGINT"}},
        "outputs": {
            "warehouse": "wh",
            "clean": "clean",
            "quarantine": "dlq",
            "duplicates": "dups",
            "facts": "facts",
        },
    }
    p = tmp_path / "contract.yml"
    p.write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "data.json").write_text('{"id": 1}\n', encoding="utf-8")
    return p


SPARK_FROM_CONTRACT = {
    "contract_master": "spark://cluster:7077",
    "contract_remote": "sc://connect:15002",
    "options": {"spark.sql.shuffle.partitions": "4"},
}


@pytest.mark.parametrize("access", list(Access))
def test_every_access_gets_the_contracts_spark_settings(tmp_path, access):
    loaded = load_contract(spark_contract(tmp_path))
    assert engine_options(loaded, access) == ("spark", SPARK_FROM_CONTRACT)


def test_cli_overrides_win_over_the_contract(tmp_path):
    loaded = load_contract(spark_contract(tmp_path))
    _name, opts = engine_options(loaded, overrides={"master": "local[2]", "remote": None})
    assert opts == {**SPARK_FROM_CONTRACT, "master": "local[2]"}


def test_duckdb_runs_stage_and_readers_wait_read_only(tmp_path):
    from tests.conftest import copy_orders_example

    loaded = load_contract(copy_orders_example(tmp_path / "o") / "contract.yml")
    assert engine_options(loaded) == (
        "duckdb",
        {"memory_limit": "800MB", "sized_by_input": True, "staging": True, "wait_seconds": 60.0},
    )
    assert engine_options(loaded, Access.READ, wait_seconds=5) == (
        "duckdb",
        {"read_only": True, "wait_seconds": 5},
    )
    assert engine_options(loaded, Access.OPERATE)[1] == {"read_only": False, "wait_seconds": 30.0}


class Opened(Exception):
    """Raised by the stand-in engine factory: how the command asked to open the engine."""


@pytest.fixture
def captured(monkeypatch):
    def fake_open(name, warehouse, *, table_format=None, **options):  # noqa: ANN001, ANN202
        assert table_format is None  # the contract names no outputs.format
        raise Opened(name, warehouse, options)

    monkeypatch.setattr(workspace, "open_engine", fake_open)


def test_facts_opens_the_contracts_remote_spark(tmp_path, captured):
    """The drift the workspace fixed: ``facts`` now gets master, remote and options."""
    from sluicegate.cli.reader import open_reader

    loaded = load_contract(spark_contract(tmp_path))
    Workspace(loaded).warehouse.mkdir()
    with pytest.raises(Opened) as got:
        open_reader(loaded, 3.0)
    assert got.value.args == ("spark", str(tmp_path / "wh"), SPARK_FROM_CONTRACT)


def test_the_dlq_store_and_a_run_open_the_same_engine(tmp_path, captured):
    from sluicegate.dlq.store import open_store
    from sluicegate.run.pipeline import run_contract

    loaded = load_contract(spark_contract(tmp_path))
    Workspace(loaded).warehouse.mkdir()
    with pytest.raises(Opened) as dlq, open_store(loaded):
        pass
    with pytest.raises(Opened) as run:
        run_contract(loaded)
    assert dlq.value.args == ("spark", str(tmp_path / "wh"), SPARK_FROM_CONTRACT)
    # the same, and the run alone says how much it will read (a driver's heap, run/modes.py)
    name, warehouse, options = run.value.args
    size = options.pop("input_bytes")
    assert (name, warehouse, options) == dlq.value.args
    assert size == (tmp_path / "data.json").stat().st_size == 10


def test_a_suffixless_duckdb_warehouse_is_a_file_with_its_runs_beside_it(tmp_path):
    """``warehouse: ./wh`` on DuckDB names a file: the run's metrics and writer lock go to
    ``wh.runs`` beside it. Deciding by the suffix alone made ``wh/_runs/…`` a folder before
    DuckDB opened ``wh``, and every first run failed with "Is a directory"."""
    from tests.conftest import copy_orders_example, run_cli

    folder = copy_orders_example(tmp_path / "o")
    contract = folder / "contract.yml"
    text = contract.read_text(encoding="utf-8")
    contract.write_text(text.replace("${root}/../warehouse.duckdb", "${root}/../wh"))
    loaded = load_contract(contract)
    assert Workspace(loaded).runs_dir.resolve() == folder / "wh.runs"
    done = run_cli("run", str(contract), cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    assert (folder / "wh").is_file()
    assert (folder / "wh.runs" / loaded.contract.name / "latest.json").is_file()


def test_a_suffixless_warehouse_on_spark_stays_a_folder(tmp_path):
    loaded = load_contract(spark_contract(tmp_path))
    assert Workspace(loaded).runs_dir == tmp_path / "wh" / "_runs"
