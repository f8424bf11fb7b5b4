"""Crash consistency: SIGKILL a real run at every stage boundary.

After each kill the warehouse must equal its state before the run (kills before the
COMMIT) or after an uninterrupted run (kills after it) — compared table by table with
plain DuckDB reads — and a rerun must then produce exactly the uninterrupted outputs
(taking over the dead run's stale lock on the way).

The run under test is a rerun of a logical date with a *changed* input, the hardest
case: it replaces rows of clean, quarantine (the DLQ inbox) and duplicates and adds
facts and a run record, so a partial publish would show in every table.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sluicegate.faults import POINTS
from tests.conftest import SLUICEGATE
from tests.engines.test_publish import dump, feed, govern_contract, run, write_rows

pytestmark = [pytest.mark.duckdb, pytest.mark.slow, pytest.mark.timeout(600)]

AFTER_COMMIT = {"publish:committed", "after_publish", "metrics_written"}
DAY = "2024-01-01"


class Scene:
    """One folder reused by every point, so lineage paths (and run ids) stay the same."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.contract = govern_contract(root)
        self.wh = root / "wh.duckdb"
        write_rows(root / "data.json", feed(40, bad=3, dups=2, start=1000))
        run(self.contract, "2023-12-31")  # another date: must never be touched
        write_rows(root / "data.json", feed(40, bad=3, dups=2))
        assert run(self.contract, DAY).status == "pass"
        shutil.copy(self.wh, root / "pre.duckdb")
        self.pre = dump(self.wh)
        write_rows(root / "data.json", feed(50, bad=5, dups=3, start=7))  # the changed input
        self.status = run(self.contract, DAY).status
        self.post = dump(self.wh)
        assert self.post != self.pre

    def restore(self) -> None:
        """Put the pre-run warehouse back (the file and no WAL)."""
        for p in self.root.glob("wh.duckdb*"):
            if p.is_file():
                p.unlink()
        shutil.copy(self.root / "pre.duckdb", self.wh)


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    return Scene(tmp_path_factory.mktemp("crash"))


def killed_run(scene: Scene, point: str, script: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, SLUICEGATE_FAULT=point)
    cmd = (
        [sys.executable, "-c", script, str(scene.contract), DAY]
        if script
        else [*SLUICEGATE, "run", str(scene.contract), "--logical-date", DAY, "-q"]
    )
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("point", POINTS)
def test_kill_at_each_boundary_leaves_before_or_after_and_rerun_recovers(scene, point):
    scene.restore()
    assert dump(scene.wh) == scene.pre
    p = killed_run(scene, point)
    assert p.returncode == -signal.SIGKILL, (point, p.returncode, p.stderr)
    assert dump(scene.wh) == (scene.post if point in AFTER_COMMIT else scene.pre), point
    r = run(scene.contract, DAY)  # the next run takes over the dead run's lock
    assert r.status == scene.status
    assert dump(scene.wh) == scene.post, point


SPLIT_PUBLISH = textwrap.dedent(
    """
    import sys
    from sluicegate.compile.contract_check import load_contract
    from sluicegate.run import publish as p
    from sluicegate.run.pipeline import run_contract
    real = p._write_facts_and_run
    def split(ctx, fingerprint):  # the mutant: outputs committed before the facts
        ctx.engine.commit()
        ctx.engine.begin()
        real(ctx, fingerprint)
    p._write_facts_and_run = split
    run_contract(load_contract(sys.argv[1], logical_date=sys.argv[2]))
    """
)


def test_mutant_publish_in_two_transactions_is_caught(scene):
    scene.restore()
    p = killed_run(scene, "publish:facts", SPLIT_PUBLISH)
    assert p.returncode == -signal.SIGKILL, p.stderr
    state = dump(scene.wh)
    assert state != scene.pre and state != scene.post  # half a publish: new rows, old facts
