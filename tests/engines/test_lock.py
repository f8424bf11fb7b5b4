"""One writer per contract: the lock names its holder, refuses a second run (exit 5), and
a crashed holder's lock is detected and taken over — by exactly one process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import LockedError
from sluicegate.run import lock as lock_m
from sluicegate.run.lock import WriterLock
from sluicegate.run.metrics import lock_path
from tests.conftest import SLUICEGATE
from tests.engines.test_publish import feed, govern_contract, query, run, write_rows

pytestmark = pytest.mark.duckdb


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def write_holder(path: Path, **kw) -> None:
    h = {
        "pid": dead_pid(),
        "host": socket.gethostname(),
        "started": "2024-01-01T00:00:00+00:00",
        "token": "feedbeef",
        "contract": "gov",
        "run_id": "crashedrun",
        "proc_start": None,
        **kw,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(h), encoding="utf-8")


def env(**kw: str) -> dict:
    e = dict(os.environ)
    e.update(kw)
    return e


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"process ended first: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


@pytest.fixture
def contract(tmp_path: Path) -> Path:
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(20, bad=1))
    return c


def test_second_run_is_refused_with_the_holder_named(contract, tmp_path):
    marker = tmp_path / "paused"
    first = subprocess.Popen(
        [*SLUICEGATE, "run", str(contract), "--logical-date", "2024-01-01", "-q"],
        env=env(SLUICEGATE_PAUSE="after_bind:4", SLUICEGATE_PAUSE_FILE=str(marker)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(marker, first)
    second = subprocess.run(
        [*SLUICEGATE, "run", str(contract), "--logical-date", "2024-01-01"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out, err = first.communicate(timeout=120)
    assert second.returncode == 5, second.stderr
    assert f"pid {first.pid}" in second.stderr and "already being run" in second.stderr
    run_id = json.loads((tmp_path / "wh.runs/gov/latest.json").read_text())["run_id"]
    assert run_id in second.stderr  # the holder's lock names its run once bound
    assert first.returncode == 0, err
    assert query(tmp_path / "wh.duckdb", "SELECT count(*) FROM clean") == [(19,)]
    assert not lock_path(load_contract(contract)).exists()  # released


def test_two_runs_started_at_once_one_runs_one_is_refused(contract):
    cmd = [*SLUICEGATE, "run", str(contract), "--logical-date", "2024-01-01", "-q"]
    e = env(SLUICEGATE_PAUSE="locked:2")
    procs = [
        subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    codes = sorted(p.wait(timeout=120) for p in procs)
    assert codes == [0, 5]


def test_stale_lock_of_a_dead_process_is_taken_over(contract, tmp_path):
    path = lock_path(load_contract(contract))
    write_holder(path)
    r = run(contract)
    assert r.status == "pass"
    assert not path.exists()


def test_mutant_lock_without_stale_detection_is_caught(contract, monkeypatch):
    monkeypatch.setattr(lock_m, "holder_alive", lambda h: True)
    write_holder(lock_path(load_contract(contract)))
    with pytest.raises(LockedError):  # a crashed run would block the contract forever
        run(contract)


def test_reused_pid_is_stale(tmp_path):
    """The pid is alive but belongs to another process (its start time differs)."""
    path = tmp_path / "writer.lock"
    write_holder(path, pid=os.getpid(), proc_start="1")
    lk = WriterLock(path, "gov")
    lk.acquire()
    assert lk.took_over is not None and lk.took_over.token == "feedbeef"
    lk.release()


def test_live_holder_and_other_host_are_refused(tmp_path):
    path = tmp_path / "writer.lock"
    write_holder(path, pid=os.getpid(), proc_start=lock_m._proc_start(os.getpid()))
    with pytest.raises(LockedError, match=f"pid {os.getpid()}"):
        WriterLock(path, "gov").acquire()
    write_holder(path, host="elsewhere.example")  # cannot prove a remote process dead
    with pytest.raises(LockedError) as exc:
        WriterLock(path, "gov").acquire()
    assert "delete it only if that host is down" in exc.value.render()


def test_corrupt_lock_file_is_taken_over(tmp_path):
    path = tmp_path / "writer.lock"
    path.write_text("{not json", encoding="utf-8")
    lk = WriterLock(path, "gov")
    lk.acquire(run_id="r1")
    assert json.loads(path.read_text())["run_id"] == "r1"
    lk.release()
    assert not path.exists()


def test_release_never_removes_someone_elses_lock(tmp_path):
    path = tmp_path / "writer.lock"
    lk = WriterLock(path, "gov")
    lk.acquire()
    write_holder(path, pid=os.getpid(), token="other")  # replaced behind our back
    lk.release()
    assert json.loads(path.read_text())["token"] == "other"


RACE = textwrap.dedent(
    """
    import contextlib, os, sys, time
    from sluicegate.errors import LockedError
    from sluicegate.run.lock import WriterLock
    if sys.argv[2] == "noguard":  # the mutant: takeover without the guard
        WriterLock._guard = lambda self: contextlib.nullcontext()
    lk = WriterLock(sys.argv[1], "gov")
    print("ready", flush=True)
    while not os.path.exists(sys.argv[3]):  # start line: every contender is up
        time.sleep(0.005)
    try:
        lk.acquire()
    except LockedError:
        print("refused"); sys.exit(0)
    except OSError as exc:
        print("error", type(exc).__name__); sys.exit(0)
    print("won", flush=True)
    time.sleep(1.5)
    lk.release()
    """
)


def race(tmp_path: Path, mode: str, n: int = 4) -> list[str]:
    path = tmp_path / mode / "writer.lock"
    write_holder(path)
    e = env(SLUICEGATE_PAUSE="lock:stale:0.5")  # every contender judges the lock stale first
    go = tmp_path / mode / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(path), mode, str(go)],
            env=e,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    go.write_text("go")
    return sorted(p.communicate(timeout=120)[0].strip() for p in procs)


def test_stale_takeover_race_has_exactly_one_winner(tmp_path):
    assert race(tmp_path, "guard") == ["refused", "refused", "refused", "won"]


def test_mutant_takeover_without_guard_is_caught(tmp_path):
    assert race(tmp_path, "noguard") != ["refused", "refused", "refused", "won"]
