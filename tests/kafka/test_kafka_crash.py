"""Crash consistency of a Kafka micro-batch: SIGKILL at every stage boundary, then restart.

The warehouse after a kill must equal its state before the batch (kills before the
COMMIT) or after an uninterrupted batch (kills after it), table by table — outputs, DLQ,
facts, run records *and the offsets ledger* — and the restarted run must leave exactly
the uninterrupted state: the same records, read again from the ledger's offsets, give the
same run id and the same rows. So a batch is never lost and never published twice.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.faults import POINTS
from sluicegate.run.offsets import ASSIGNED
from sluicegate.run.pipeline import run_contract
from tests.conftest import SLUICEGATE
from tests.engines.test_publish import dump
from tests.kafka.conftest import kafka_contract
from tests.kafka.helpers import DAY, produce, rec

pytestmark = [pytest.mark.duckdb, pytest.mark.kafka, pytest.mark.slow, pytest.mark.timeout(900)]

AFTER_COMMIT = {"publish:committed", "after_publish", "metrics_written"}


class Scene:
    """One contract and topic for every point; the warehouse restored before each kill."""

    def __init__(self, root: Path, broker, topic: str) -> None:  # noqa: ANN001
        self.root = root
        self.contract = kafka_contract(root, broker, [topic], warehouse="wh.duckdb")
        self.wh = root / "wh.duckdb"
        produce(broker, topic, [rec(i, a=1 if i % 7 else -1) for i in range(30)] + [b"{bad"])
        assert self.run().status in ("pass", "warn")  # wave 1: published before the crash
        shutil.copy(self.wh, root / "pre.duckdb")
        self.pre = dump(self.wh)
        produce(broker, topic, [rec(i) for i in range(25, 60)] + [b"\xff"])  # wave 2, dups
        self.status = self.run().status
        self.post = dump(self.wh)
        assert self.post != self.pre
        assert self.run().status == "empty"

    def run(self):  # noqa: ANN201
        return run_contract(load_contract(self.contract, logical_date=DAY))

    def restore(self) -> None:
        for p in self.root.glob("wh.duckdb*"):
            if p.is_file():
                p.unlink()
        shutil.copy(self.root / "pre.duckdb", self.wh)


@pytest.fixture(scope="module")
def scene(tmp_path_factory, kafka_broker) -> Scene:  # noqa: ANN001
    topic = kafka_broker.create_topic("crash-duckdb", partitions=3)
    return Scene(tmp_path_factory.mktemp("kafka-crash"), kafka_broker, topic)


@pytest.mark.parametrize("point", (*POINTS, ASSIGNED))
def test_kill_at_each_boundary_then_restart_equals_one_run(scene, point):
    scene.restore()
    assert dump(scene.wh) == scene.pre
    env = dict(os.environ, SLUICEGATE_FAULT=point)
    p = subprocess.run(
        [*SLUICEGATE, "run", str(scene.contract), "--logical-date", DAY, "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == -signal.SIGKILL, (point, p.returncode, p.stderr)
    assert dump(scene.wh) == (scene.post if point in AFTER_COMMIT else scene.pre), point
    r = scene.run()  # the restart: takes over the dead run's lock, seeks to the ledger
    assert r.status == ("empty" if point in AFTER_COMMIT else scene.status), point
    assert dump(scene.wh) == scene.post, point
