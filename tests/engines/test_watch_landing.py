"""``watch`` notices a landed file between polls (run/landing.py), on a real DuckDB file.

The poll interval here is a minute; a file landed after the first poll must still be
processed within seconds — the old loop slept the whole interval. Nothing is timed
beyond "well before the interval": speed is the benchmark's (benchmarks/watch_latency.py).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run import landing
from sluicegate.run import watch as watch_m
from tests.engines.test_incremental import DAY, Scene, write_file
from tests.engines.test_watch import GOOD, Collect

pytestmark = [pytest.mark.duckdb, pytest.mark.timeout(300)]

INTERVAL = 60.0  # the poll interval: no test here may wait it out
SAFETY = 45.0  # the stop every watch below gets, should it never notice the file


def land(scene: Scene, name: str) -> Path:
    """Write under a name a run skips, then rename into place (docs/streaming.md §9)."""
    tmp = scene.landing / f".{name}.tmp"
    write_file(tmp, GOOD)
    final = scene.landing / name
    os.rename(tmp, final)
    return final


def test_a_file_landed_between_polls_starts_the_next_poll_at_once(tmp_path: Path):
    scene = Scene(tmp_path)
    write_file(scene.landing / "a.json", GOOD)
    stop, lis = threading.Event(), Collect()
    landed: list[float] = []

    def feeder() -> None:
        while not lis.batches and not stop.is_set():
            time.sleep(0.05)
        time.sleep(0.3)  # the watch is now waiting out its interval
        land(scene, "b.json")
        landed.append(time.monotonic())

    threading.Thread(target=feeder, daemon=True).start()
    safety = threading.Timer(SAFETY, stop.set)
    safety.start()
    try:
        out = watch_m.watch(
            lambda: load_contract(scene.contract, logical_date=DAY),
            listener=lis,
            stop=stop,
            interval=INTERVAL,
            max_batches=2,
        )
    finally:
        safety.cancel()
        stop.set()
    assert (out.reason, lis.batches) == ("max_batches", ["pass", "pass"])
    assert time.monotonic() - landed[0] < SAFETY < INTERVAL


def test_nothing_landed_waits_the_whole_interval(tmp_path: Path):
    scene = Scene(tmp_path)
    write_file(scene.landing / "a.json", GOOD)
    loaded = load_contract(scene.contract, logical_date=DAY)
    polled = landing.listing(loaded)
    assert polled is not None and len(polled) == 1
    t = time.monotonic()
    assert landing.wait_for_landing(loaded, threading.Event(), 0.5, polled) is False
    assert time.monotonic() - t >= 0.5
    # a file a run skips (hidden, still being written) is not a landing either
    write_file(scene.landing / ".c.json.tmp", GOOD)
    assert landing.wait_for_landing(loaded, threading.Event(), 0.3, polled) is False


def test_a_changed_or_landed_file_ends_the_wait(tmp_path: Path):
    scene = Scene(tmp_path)
    a = scene.landing / "a.json"
    write_file(a, GOOD)
    loaded = load_contract(scene.contract, logical_date=DAY)
    polled = landing.listing(loaded)
    land(scene, "b.json")
    assert landing.wait_for_landing(loaded, threading.Event(), INTERVAL, polled) is True
    polled = landing.listing(loaded)
    with open(a, "a", encoding="utf-8") as f:  # a processed file rewritten: the run reports it
        f.write('{"id": 999, "a": 1}\n')
    assert landing.wait_for_landing(loaded, threading.Event(), INTERVAL, polled) is True


def test_stop_ends_the_wait_and_an_unlistable_source_waits_the_interval(tmp_path: Path):
    scene = Scene(tmp_path)
    loaded = load_contract(scene.contract, logical_date=DAY)
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    t = time.monotonic()
    assert landing.wait_for_landing(loaded, stop, INTERVAL, frozenset()) is False
    assert time.monotonic() - t < SAFETY
    # no listing to compare against (an s3:// source, an input error): the plain wait
    t = time.monotonic()
    assert landing.wait_for_landing(loaded, threading.Event(), 0.3, None) is False
    assert time.monotonic() - t >= 0.3
