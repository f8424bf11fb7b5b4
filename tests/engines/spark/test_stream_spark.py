"""Spark Structured Streaming: the same micro-batches, exactly once, on the Spark engine.

The feed, the oracle and the flow are tests/engines/test_incremental.py's and
test_watch.py's: 5 files in 3 waves, a watcher SIGKILLed in the middle of a batch, a
restart from the same checkpoint, and final tables equal to one Spark batch run over all
5 files and to the plain-Python oracle. Tables are read back with DuckDB straight from
the warehouse's Parquet files (no Spark on the checking side).

The interesting kill is after sluicegate's COMMIT but before Spark writes its commit log
(``metrics_written``): Spark replays that micro-batch after the restart, with the same
files, and the processed-file ledger turns the replay into a no-op.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run.watch import watch
from tests.conftest import SLUICEGATE
from tests.delta_read import delta_dicts, is_delta
from tests.engines.test_incremental import (
    ALL_FILES,
    DAY,
    OUTPUTS,
    RUN_SPECIFIC,
    WAVES,
    drop_wave,
    oracle,
    run_batch,
    stream_contract,
)
from tests.engines.test_watch import Collect

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(3600)]

WAIT = 600.0  # a Spark batch on a busy 2-core machine takes minutes, not hours
ENGINE = {"engine": {"name": "spark", "master": "local[2]"}}


class SparkScene:
    """A landing folder, an incremental Spark contract and its batch twin."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.landing = root / "landing"
        self.landing.mkdir(parents=True, exist_ok=True)
        self.contract = stream_contract(root, warehouse="inc_wh", extra=ENGINE)
        self.batch_contract = stream_contract(
            root, warehouse="batch_wh", name="batch.yml", extra=ENGINE
        )
        self.wh = root / "inc_wh"
        self.batch_wh = root / "batch_wh"

    def reference(self) -> dict[str, list[tuple]]:
        run_batch(self.batch_contract, engine_name="spark")
        return outputs_of(self.batch_wh)


def parquet_rows(wh: Path, table: str, *, drop: set[str] = RUN_SPECIFIC) -> list[tuple]:
    """A Spark warehouse table (Delta) read by delta-rs from the files its log lists."""
    if not is_delta(wh / table):
        return []
    rows = delta_dicts(wh / table)
    names = sorted({n for r in rows for n in r})
    keep = [n for n in names if n not in drop]
    return sorted(
        (tuple(str(r.get(n)) for n in keep) for r in rows), key=lambda r: [str(v) for v in r]
    )


def outputs_of(wh: Path) -> dict[str, list[tuple]]:
    return {t: parquet_rows(wh, t) for t in OUTPUTS}


def observed(wh: Path) -> dict[str, set]:
    def pick(table: str, cols: list[str]) -> set:
        if not is_delta(wh / table):
            return set()
        return {tuple(r[c] for c in cols) for r in delta_dicts(wh / table)}

    lineage = ["id", "_source_file", "_source_line"]
    return {
        "clean": pick("clean", lineage),
        "dlq": pick("dlq", lineage),
        "dups": pick(
            "dups", ["_source_file", "_source_line", "_kept_source_file", "_kept_source_line"]
        ),
    }


def processed(wh: Path) -> list[str] | None:
    if not is_delta(wh / "_sluicegate_files"):
        return []
    try:
        return sorted(r["path"] for r in delta_dicts(wh / "_sluicegate_files"))
    except Exception:  # noqa: BLE001 - a commit in progress: ask again
        return None


def paths(scene: SparkScene, waves: int) -> list[str]:
    return sorted(str(scene.landing / n) for w in WAVES[:waves] for n in w)


def wait_for(what: str, predicate: Any, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"watcher exited ({proc.returncode}) while waiting for {what}")
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


class SparkWatcher:
    """``sluicegate watch`` on Spark in its own process group (the JVM dies with it)."""

    def __init__(self, scene: SparkScene, env: dict[str, str] | None = None) -> None:
        self.err = scene.root / f"watch-{time.monotonic_ns()}.err"
        cmd = [*SLUICEGATE, "watch", str(scene.contract), "--interval", "0.5"]
        cmd += ["--logical-date", DAY]
        with open(self.err, "w") as e:
            self.proc = subprocess.Popen(
                cmd,
                stdout=e,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=60)

    @property
    def output(self) -> str:
        return self.err.read_text()


def incremental_in_process(scene: SparkScene) -> Collect:
    """``run --engine spark --incremental`` in this process: trigger(availableNow=True)."""
    lis = Collect()
    out = watch(
        lambda: load_contract(scene.contract, logical_date=DAY),
        listener=lis,
        stop=threading.Event(),
        engine_name="spark",
        until_idle=True,
    )
    assert out.exit_code == 0, out
    return lis


@pytest.mark.parametrize("point", ["publish:written", "metrics_written"])
def test_spark_sigkill_mid_batch_then_restart_equals_one_batch(spark, tmp_path: Path, point):
    scene = SparkScene(tmp_path)
    drop_wave(scene.landing, 0)
    assert incremental_in_process(scene).batches == ["warn"]
    after_one = outputs_of(scene.wh)
    drop_wave(scene.landing, 1)
    dead = SparkWatcher(scene, env={"SLUICEGATE_FAULT": point})
    try:
        rc = dead.proc.wait(timeout=WAIT)
    finally:
        dead.kill()
    assert rc == -signal.SIGKILL, dead.output
    if point == "publish:written":  # before the COMMIT: nothing of batch 2
        assert processed(scene.wh) == paths(scene, 1)
        assert outputs_of(scene.wh) == after_one
    else:  # committed; Spark's commit log not written: the restart replays the batch
        assert processed(scene.wh) == paths(scene, 2)
    again = SparkWatcher(scene)
    try:
        wait_for("wave 2 processed", lambda: processed(scene.wh) == paths(scene, 2), again.proc)
        drop_wave(scene.landing, 2)
        wait_for("wave 3 processed", lambda: processed(scene.wh) == paths(scene, 3), again.proc)
        again.proc.send_signal(signal.SIGTERM)
        rc = again.proc.wait(timeout=WAIT)
    finally:
        again.kill()
    assert rc == 0, again.output
    if point == "metrics_written":
        assert "already processed (a replay after a restart)" in again.output
    assert outputs_of(scene.wh) == scene.reference()
    assert observed(scene.wh) == oracle(scene.landing, ALL_FILES)


def test_spark_availablenow_restarts_process_only_new_files(spark, tmp_path: Path):
    scene = SparkScene(tmp_path)
    for n in range(3):
        drop_wave(scene.landing, n)
        lis = incremental_in_process(scene)
        assert len(lis.batches) == 1
        assert processed(scene.wh) == paths(scene, n + 1)
    again = incremental_in_process(scene)  # same checkpoint, nothing new
    assert again.batches == [] and again.idles >= 1
    assert observed(scene.wh) == oracle(scene.landing, ALL_FILES)
    # the checkpoint lives under the warehouse, hidden from its tables
    assert (scene.wh / ".sluicegate" / "streams" / "stream" / "commits").is_dir()


def test_spark_failing_batch_stops_and_a_changed_file_is_reported(spark, tmp_path: Path):
    from tests.engines.test_incremental import rec, write_file

    root = tmp_path
    (root / "landing").mkdir()
    gate = {"warn_above": 0.2, "fail_above": 0.5, "on_stream_fail": "stop"}
    contract = stream_contract(root, warehouse="inc_wh", gate=gate, extra=ENGINE)
    bad = root / "landing" / "a-bad.json"
    write_file(bad, [rec(100 + i, a=-1) for i in range(6)] + [rec(200)])

    def once() -> tuple[Any, Collect]:
        lis = Collect()
        out = watch(
            lambda: load_contract(contract, logical_date=DAY),
            listener=lis,
            stop=threading.Event(),
            engine_name="spark",
            until_idle=True,
        )
        return out, lis

    out, lis = once()
    assert (out.exit_code, out.reason, lis.batches) == (1, "gate_failed", ["fail"])
    assert observed(root / "inc_wh")["clean"] == set()  # withheld
    assert len(observed(root / "inc_wh")["dlq"]) == 6
    with open(bad, "a", encoding="utf-8") as f:  # changed after processing
        f.write('{"id": 999, "a": 1, "k": "late"}\n')
    write_file(root / "landing" / "b-good.json", [rec(300 + i) for i in range(5)])
    out, lis = once()
    assert (out.exit_code, lis.batches) == (0, ["pass"])
    m = out.results[0].metrics
    assert [c["path"] for c in m["incremental"]["changed_files"]] == [str(bad)]
    fact = next(f for f in m["facts"] if f["check_id"] == "processed_files_unchanged")
    assert (fact["status"], fact["diagnostic"]) == ("warn", "PROCESSED_FILE_CHANGED")
    assert any(str(bad) in n for n in lis.notices)
    assert {i for i, _f, _l in observed(root / "inc_wh")["clean"]} == {300, 301, 302, 303, 304}
