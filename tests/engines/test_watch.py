"""``sluicegate watch``: crash at any point of a micro-batch, restart, and the final tables
equal one batch run over all files; SIGINT/SIGTERM finish the batch; a failing batch
stops or continues as the contract says; one watcher per contract.

Every watcher is a real subprocess (the CLI as users run it), killed in a ``finally``;
every wait is bounded. Expected contents come from the plain-Python oracle and a single
batch run over the same landing folder (tests/engines/test_incremental.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run import watch as watch_m
from tests.conftest import SLUICEGATE
from tests.engines.test_incremental import (
    ALL_FILES,
    DAY,
    WAVES,
    Notices,
    Scene,
    drop_wave,
    observed,
    oracle,
    outputs_of,
    rec,
    run_inc,
    write_file,
)

pytestmark = [pytest.mark.duckdb, pytest.mark.timeout(600)]

WAIT = 90.0  # seconds: the bound on every wait (a loaded 2-core machine is slow, not stuck)


def wait_for(what: str, predicate: Callable[[], bool], proc: subprocess.Popen | None = None):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"watcher exited ({proc.returncode}) while waiting for {what}")
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def processed(wh: Path) -> list[str] | None:
    """The file ledger's paths, or None while the warehouse is busy or absent."""
    if not wh.exists():
        return None
    try:
        con = duckdb.connect(str(wh), read_only=True)
    except duckdb.Error:
        return None  # a publish holds the file: ask again
    try:
        q = "SELECT table_name FROM information_schema.tables WHERE table_name = '_sluicegate_files'"
        if not con.execute(q).fetchall():
            return []
        return [
            p for (p,) in con.execute("SELECT path FROM _sluicegate_files ORDER BY 1").fetchall()
        ]
    finally:
        con.close()


class Watcher:
    """``sluicegate watch`` in a subprocess, output to files, always killed at the end."""

    def __init__(self, scene: Scene, *args: str, env: dict[str, str] | None = None) -> None:
        self.out = scene.root / f"watch-{time.monotonic_ns()}.out"
        self.err = self.out.with_suffix(".err")
        cmd = [
            *SLUICEGATE,
            "watch",
            str(scene.contract),
            "--interval",
            "0.1",
            "--logical-date",
            DAY,
            *args,
        ]
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.proc = subprocess.Popen(cmd, stdout=o, stderr=e, env={**os.environ, **(env or {})})

    def wait(self, timeout: float = WAIT) -> int:
        return self.proc.wait(timeout=timeout)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    @property
    def stdout(self) -> str:
        return self.out.read_text()

    @property
    def stderr(self) -> str:
        return self.err.read_text()


def paths(scene: Scene, waves: int) -> list[str]:
    return sorted(str(scene.landing / n) for w in WAVES[:waves] for n in w)


#: Where the watcher dies in its second batch: before the publish, inside the publish
#: transaction (outputs written; file ledger written), and after the COMMIT.
BEFORE_COMMIT = ("after_read", "publish:written", "publish:files_recorded", "publish:before_commit")
AFTER_COMMIT = ("publish:committed", "metrics_written")


def crash_and_recover(scene: Scene, kill: Callable[[Scene], int]) -> dict[str, Any]:
    """Wave 1 as a batch; wave 2 under a process that dies mid-batch (``kill`` returns its
    exit status); restart a watcher; wave 3; stop it."""
    drop_wave(scene.landing, 0)
    run_inc(scene.contract)
    after_one = outputs_of(scene.wh)
    drop_wave(scene.landing, 1)
    rc = kill(scene)
    state = {"after_one": after_one, "at_kill": outputs_of(scene.wh), "dead_rc": rc}
    state["ledger_at_kill"] = processed(scene.wh)
    again = Watcher(scene)
    try:
        wait_for("wave 2 processed", lambda: processed(scene.wh) == paths(scene, 2), again.proc)
        drop_wave(scene.landing, 2)
        wait_for("wave 3 processed", lambda: processed(scene.wh) == paths(scene, 3), again.proc)
        again.signal(signal.SIGTERM)
        state["restart_rc"] = again.wait()
    finally:
        again.kill()
    state["restart_err"] = again.stderr
    state["final"] = outputs_of(scene.wh)
    return state


def self_kill_at(point: str) -> Callable[[Scene], int]:
    def kill(scene: Scene) -> int:
        w = Watcher(scene, env={"SLUICEGATE_FAULT": point})
        try:
            return w.wait()
        finally:
            w.kill()

    return kill


@pytest.mark.slow
@pytest.mark.parametrize("point", BEFORE_COMMIT + AFTER_COMMIT)
def test_sigkill_mid_batch_then_restart_equals_one_batch(tmp_path: Path, point: str):
    scene = Scene(tmp_path)
    state = crash_and_recover(scene, self_kill_at(point))
    assert state["dead_rc"] == -signal.SIGKILL
    if point in BEFORE_COMMIT:  # nothing of batch 2: neither outputs nor its files
        assert state["at_kill"] == state["after_one"]
        assert state["ledger_at_kill"] == paths(scene, 1)
    else:  # all of batch 2: outputs and its files
        assert state["at_kill"] != state["after_one"]
        assert state["ledger_at_kill"] == paths(scene, 2)
    assert state["restart_rc"] == 0, state["restart_err"]
    assert "took over a stale watch lock" in state["restart_err"]
    assert state["final"] == scene.reference()
    assert observed(scene.wh) == oracle(scene.landing, ALL_FILES)


@pytest.mark.slow
def test_external_sigkill_while_the_batch_publishes(tmp_path: Path):
    """The test itself SIGKILLs the watcher while it sits inside the publish transaction."""
    scene = Scene(tmp_path)
    marker = tmp_path / "arrived"

    def kill(scene: Scene) -> int:
        w = Watcher(
            scene,
            env={
                "SLUICEGATE_PAUSE": "publish:written:60",
                "SLUICEGATE_PAUSE_FILE": str(marker),
            },
        )
        try:
            wait_for("the batch to reach publish:written", marker.exists, w.proc)
            w.signal(signal.SIGKILL)
            return w.wait()
        finally:
            w.kill()

    state = crash_and_recover(scene, kill)
    assert state["dead_rc"] == -signal.SIGKILL
    assert state["at_kill"] == state["after_one"]
    assert state["ledger_at_kill"] == paths(scene, 1)
    assert state["final"] == scene.reference()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_finishes_the_current_batch_then_exits_0(tmp_path: Path, sig: int):
    scene = Scene(tmp_path)
    drop_wave(scene.landing, 0)
    marker = tmp_path / "arrived"
    w = Watcher(
        scene,
        env={"SLUICEGATE_PAUSE": "publish:written:2", "SLUICEGATE_PAUSE_FILE": str(marker)},
    )
    try:
        wait_for("the batch to reach publish:written", marker.exists, w.proc)
        w.signal(sig)
        rc = w.wait()
    finally:
        w.kill()
    assert rc == 0, w.stderr
    assert processed(scene.wh) == paths(scene, 1)  # the batch in flight was published
    assert "finishing the current batch" in w.stderr
    assert "batch 1:" in w.stdout and "watch ended: stopped; 1 batches" in w.stdout


def test_a_second_watcher_of_the_contract_is_refused(tmp_path: Path):
    scene = Scene(tmp_path)
    first = Watcher(scene)
    try:
        lock = scene.root / "inc.runs" / "stream" / "watch.lock"
        wait_for("the first watcher's lock", lock.exists, first.proc)
        second = Watcher(scene)
        try:
            rc = second.wait()
        finally:
            second.kill()
        assert rc == 5
        assert f"pid {first.proc.pid}" in second.stderr
        first.signal(signal.SIGTERM)
        assert first.wait() == 0
    finally:
        first.kill()


# -- the gate per micro-batch ---------------------------------------------------------------


BAD = [rec(100 + i, a=-1) for i in range(6)] + [rec(200)]
GOOD = [rec(300 + i) for i in range(5)]


def gate_scene(tmp_path: Path, on_stream_fail: str) -> Scene:
    return Scene(
        tmp_path,
        gate={"warn_above": 0.2, "fail_above": 0.5, "on_stream_fail": on_stream_fail},
    )


def clean_ids(wh: Path) -> set[int]:
    con = duckdb.connect(str(wh), read_only=True)
    try:
        return {i for (i,) in con.execute("SELECT id FROM clean").fetchall()}
    finally:
        con.close()


def test_failing_batch_with_stop_exits_1_and_publishes_all_but_clean(tmp_path: Path):
    scene = gate_scene(tmp_path, "stop")
    write_file(scene.landing / "a-bad.json", BAD)
    w = Watcher(scene, "--max-batches", "5")
    try:
        rc = w.wait()
    finally:
        w.kill()
    assert rc == 1, w.stderr
    assert "gate FAILED" in w.stderr and "on_stream_fail: stop" in w.stdout
    con = duckdb.connect(str(scene.wh), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM clean").fetchone()[0] == 0  # withheld
        assert con.execute("SELECT count(*) FROM dlq").fetchone()[0] == 6
        assert con.execute(
            "SELECT status FROM _sluicegate_files WHERE path LIKE '%a-bad.json'"
        ).fetchall() == [("fail",)]
        assert con.execute(
            "SELECT status FROM facts WHERE check_id = 'quarantine_share'"
        ).fetchall() == [("fail",)]
    finally:
        con.close()


def test_failing_batch_with_continue_runs_the_next_batch(tmp_path: Path):
    scene = gate_scene(tmp_path, "continue")
    write_file(scene.landing / "a-bad.json", BAD)
    w = Watcher(scene, "--max-batches", "2")
    try:
        wait_for("the failing batch", lambda: bool(processed(scene.wh)), w.proc)
        write_file(scene.landing / "b-good.json", GOOD)
        rc = w.wait()
    finally:
        w.kill()
    assert rc == 0, w.stderr
    assert "batch 1:" in w.stdout and "gate FAIL" in w.stdout and "batch 2:" in w.stdout
    assert "2 batches, 1 failed" in w.stdout
    assert clean_ids(scene.wh) == {300, 301, 302, 303, 304}  # batch 1's clean row withheld


class Collect(Notices):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[str] = []
        self.idles = 0

    def batch(self, number: int, result: Any) -> None:
        self.batches.append(result.status)

    def idle(self, message: str) -> None:
        self.idles += 1


def watch_two_files(scene: Scene) -> tuple[watch_m.WatchOutcome, Collect]:
    """In process: a failing file, then (from another thread, once it is processed) a good
    one; the watch runs until it stops by itself or 2 batches ran."""
    write_file(scene.landing / "a-bad.json", BAD)
    stop, lis = threading.Event(), Collect()

    def feeder() -> None:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and not stop.is_set():
            if lis.batches:
                write_file(scene.landing / "b-good.json", GOOD)
                return
            time.sleep(0.05)

    t = threading.Thread(target=feeder, daemon=True)
    t.start()
    try:
        out = watch_m.watch(
            lambda: load_contract(scene.contract, logical_date=DAY),
            listener=lis,
            stop=stop,
            interval=0.05,
            max_batches=2,
        )
    finally:
        stop.set()
        t.join(timeout=30)
    return out, lis


def test_gate_policy_in_process(tmp_path: Path):
    out, lis = watch_two_files(gate_scene(tmp_path / "stop", "stop"))
    assert (out.exit_code, out.reason, lis.batches) == (1, "gate_failed", ["fail"])
    out, lis = watch_two_files(gate_scene(tmp_path / "continue", "continue"))
    assert (out.exit_code, out.reason, lis.batches) == (0, "max_batches", ["fail", "pass"])
    assert out.failed == 1


def test_mutant_ignoring_on_stream_fail_is_caught(tmp_path: Path, monkeypatch):
    real = watch_m.judge
    monkeypatch.setattr(
        watch_m, "judge", lambda out, result, _policy, lis: real(out, result, "continue", lis)
    )
    out, lis = watch_two_files(gate_scene(tmp_path, "stop"))
    assert lis.batches == ["fail", "pass"]  # the stream did not stop: the test above fails


# -- the exactly-once mutant: the file ledger outside the transaction ------------------------


SPLIT_LEDGER = textwrap.dedent(
    """
    import sys, threading
    from sluicegate.compile.contract_check import load_contract
    from sluicegate.run import incremental as inc
    from sluicegate.run.watch import watch
    real = inc.Incremental.record_files
    def split(self, ctx):  # the mutant: outputs committed, then the file ledger on its own
        ctx.engine.commit()
        ctx.engine.begin()
        real(self, ctx)
    inc.Incremental.record_files = split
    class L:
        def stage(self, *a): pass
        def finished(self, *a, **k): pass
        def notice(self, *a): pass
        def batch(self, *a): pass
        def idle(self, *a): pass
    watch(lambda: load_contract(sys.argv[1], logical_date=sys.argv[2]), listener=L(),
          stop=threading.Event(), interval=0.1)
    """
)


@pytest.mark.slow
def test_mutant_file_ledger_outside_the_transaction_double_processes(tmp_path: Path):
    scene = Scene(tmp_path)

    def kill(scene: Scene) -> int:
        cmd = [sys.executable, "-c", SPLIT_LEDGER, str(scene.contract), DAY]
        env = {**os.environ, "SLUICEGATE_FAULT": "publish:files_recorded"}
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=WAIT).returncode

    state = crash_and_recover(scene, kill)
    assert state["dead_rc"] == -signal.SIGKILL
    assert state["at_kill"] != state["after_one"]  # outputs of batch 2 visible ...
    assert state["ledger_at_kill"] == paths(scene, 1)  # ... but its files not recorded
    assert state["final"] != scene.reference()  # so they were processed twice


def test_watch_json_prints_one_line_per_batch(tmp_path: Path):
    scene = Scene(tmp_path)
    drop_wave(scene.landing, 0)
    w = Watcher(scene, "--max-batches", "1", "--json")
    try:
        rc = w.wait()
    finally:
        w.kill()
    assert rc == 0, w.stderr
    lines = [json.loads(x) for x in w.stdout.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0]["incremental"]["new_files"] == 2
