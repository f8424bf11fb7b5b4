"""A batch run on Spark starts its driver with a heap sized by its input; a micro-batch
keeps the default; a missing source fails before any JVM starts.

Each run is the real CLI in its own process (the suite's shared session would be reused,
and a reused session keeps its heap). The sizing rule itself is checked in
``tests/engines/test_driver_heap_sizing.py``.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli, run_json_script

pytestmark = pytest.mark.spark

GiB = 1 << 30
LOCAL = {"SLUICEGATE_SPARK_MASTER": "local[2]", "SPARK_DRIVER_MEMORY": ""}


def _feed(folder: Path) -> Path:
    (folder / "in").mkdir(parents=True)
    (folder / "in" / "a.json").write_text(
        "".join(f'{{"id": {i}, "v": {i % 7}}}\n' for i in range(200)), encoding="utf-8"
    )
    (folder / "contract.yml").write_text(
        textwrap.dedent(
            """\
            name: heap_by_input
            source:
              path: in
              format: ndjson
              columns:
                id: {type: BIGINT, nullable: false}
                v: INTEGER
            outputs:
              warehouse: wh
              clean: clean
              quarantine: dlq
              duplicates: dups
              facts: facts
            """
        ),
        encoding="utf-8",
    )
    return folder / "contract.yml"


def _most() -> int:
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(GiB, min(4 * GiB, ram // 2))


def test_a_batch_run_starts_a_driver_sized_by_its_input(tmp_path: Path):
    contract = _feed(tmp_path)
    done = run_cli("run", str(contract), "--engine", "spark", "--json", env=LOCAL)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads(done.stdout)
    assert metrics["ledger"]["balanced"] and metrics["ledger"]["raw"] == 200
    # a few kB of input: the floor, 1536m (or half a small machine's RAM)
    assert metrics["memory_limit"] == f"{min(1536 << 20, _most()) >> 20}m"


#: one micro-batch in a fresh process, as a caller of the run's own entry point makes it
#: (the CLI's ``--incremental`` and ``watch`` on Spark start their stream's session first)
MICRO_BATCH = """
import json, sys
import sluicegate
from sluicegate.run.pipeline import run_contract
result = run_contract(sluicegate.load(sys.argv[1]), engine_name="spark", incremental=True)
print(json.dumps({"memory_limit": result.metrics["memory_limit"], "status": result.status}))
"""


def test_a_micro_batch_keeps_the_default_heap(tmp_path: Path):
    contract = _feed(tmp_path)
    seen = run_json_script(MICRO_BATCH, str(contract), env=LOCAL, timeout=600)
    assert seen["status"] in ("pass", "warn"), seen
    # its later batches may be larger: not sized by the first
    assert seen["memory_limit"] == f"{_most() >> 20}m"


def test_a_missing_source_fails_before_a_jvm_starts(tmp_path: Path):
    contract = _feed(tmp_path)
    (tmp_path / "in" / "a.json").unlink()
    (tmp_path / "in").rmdir()
    done = run_cli("run", str(contract), "--engine", "spark", env=LOCAL)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "source path 'in' does not exist" in done.stderr
    # every JVM Spark starts prints this line first: none started
    assert "jdk.incubator.vector" not in done.stderr, done.stderr
