"""A local Spark driver's heap sized by the run's input, known before the JVM starts.

A local driver's heap is fixed when its JVM starts, and sluicegate gave every one 4g: a
1M-line run (230 MB) peaked at ~3.2 GiB of memory where 2g ran it as fast ~400 MiB
lower, and 2g held 5M lines but not 10M (benchmarks/RESULTS.md). A batch run now lists
its source before the engine opens and the driver gets twice the input's bytes, 1536m to 4g
(at most half the RAM); where the size is not known up front (a watch, a micro-batch, a
table source) it keeps 4g. The live run is in ``tests/engines/spark/test_spark_heap_by_input.py``.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from sluicegate.api import load as load_contract
from sluicegate.engines.capabilities import DUCKDB, SPARK
from sluicegate.engines.spark_session import driver_heap, local_defaults
from sluicegate.errors import InputError
from sluicegate.run.incremental import Incremental
from sluicegate.run.modes import Batch

GiB = 1 << 30


def expected_heap(input_bytes: int | None, ram: int) -> int:
    """The rule as docs/spark.md states it, computed here on its own."""
    most = max(GiB, min(4 * GiB, ram // 2))
    return most if input_bytes is None else min(most, max(1536 << 20, 2 * input_bytes))


@pytest.mark.parametrize("ram", [24 * GiB, 6 * GiB, 3 * GiB, GiB])
@pytest.mark.parametrize(
    "size", [None, 0, 10 << 20, 230_000_000, 1_150_000_000, 1_600 << 20, 2_300_000_000, 9 * GiB]
)
def test_the_heap_follows_the_input_between_1536m_and_4g(size, ram):
    assert driver_heap(size, ram) == expected_heap(size, ram)


def test_a_local_session_gets_the_heap_unless_someone_set_one():
    sized = local_defaults("local[2]", {}, {}, input_bytes=230_000_000)
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert sized["spark.driver.memory"] == f"{expected_heap(230_000_000, ram) >> 20}m"
    assert "-XX:MaxNewSize=512m" in sized["spark.driver.extraJavaOptions"]
    big = local_defaults("local[2]", {}, {}, input_bytes=3 * GiB)["spark.driver.memory"]
    unknown = local_defaults("local[2]", {}, {})["spark.driver.memory"]
    assert big == unknown  # the ceiling: 4g or half the RAM
    # the contract's setting and SPARK_DRIVER_MEMORY win
    mine = local_defaults("local[2]", {"spark.driver.memory": "6g"}, {}, input_bytes=1)
    assert "spark.driver.memory" not in mine
    env = local_defaults("local[2]", {}, {"SPARK_DRIVER_MEMORY": "3g"}, input_bytes=1)
    assert "spark.driver.memory" not in env
    assert local_defaults("spark://h:7077", {}, {}, input_bytes=1) == {}


def test_only_an_engine_whose_memory_is_fixed_at_start_asks():
    assert SPARK.memory_at_start and not DUCKDB.memory_at_start


def _contract(tmp_path: Path, source: str, fmt: str) -> Path:
    path = tmp_path / "contract.yml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: sized
            source:
              path: {source}
              format: {fmt}
              columns:
                id: {{type: BIGINT, nullable: false}}
            outputs:
              warehouse: wh.duckdb
              clean: clean
              quarantine: dlq
              duplicates: dups
              facts: facts
            """
        ),
        encoding="utf-8",
    )
    return path


def test_a_batch_run_knows_its_input_size_before_it_binds(tmp_path: Path):
    feed = tmp_path / "feed"
    (feed / "month=2026-01").mkdir(parents=True)
    (feed / "month=2026-01" / "a.json").write_bytes(b'{"id": 1}\n' * 1000)
    (feed / "b.json").write_bytes(b'{"id": 2}\n' * 37)
    (feed / "_skipped.json").write_bytes(b"x" * 5000)  # the bind skips it: so does the size
    loaded = load_contract(_contract(tmp_path, "feed", "ndjson"))
    assert Batch().input_size(loaded) == 10 * 1000 + 10 * 37
    # a micro-batch does not know its files up front, and its engine serves later ones
    assert Incremental().input_size(loaded) is None


def test_a_missing_source_fails_before_an_engine_opens(tmp_path: Path):
    loaded = load_contract(_contract(tmp_path, "nowhere", "ndjson"))
    with pytest.raises(InputError, match="does not exist"):
        Batch().input_size(loaded)


def test_a_table_source_has_no_size_up_front(tmp_path: Path):
    loaded = load_contract(_contract(tmp_path, "lake/t", "delta"))
    assert Batch().input_size(loaded) is None
