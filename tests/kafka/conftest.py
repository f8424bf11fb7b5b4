"""The session's Kafka broker: one real KRaft broker for every Kafka test of a pytest run."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kafka.broker import JARS, Broker, jars_ready

_topics = itertools.count(1)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """Started once per session on free loopback ports, stopped (and its logs deleted) after."""
    if not jars_ready():
        pytest.fail(f"the Kafka broker jars are missing in {JARS}: run `make kafka-jars`")
    broker = Broker(tmp_path_factory.mktemp("kafka-broker"))
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def topic(kafka_broker: Broker, request: pytest.FixtureRequest) -> str:
    """A fresh three-partition topic per test (topics are cheap; brokers are not)."""
    name = f"t{next(_topics)}-{request.node.name[:40]}".replace("[", "-").replace("]", "")
    name = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name)
    return kafka_broker.create_topic(name, partitions=3)


def kafka_contract(
    root: Path,
    broker: Broker,
    topics: list[str],
    *,
    warehouse: str = "k.duckdb",
    kafka: dict[str, Any] | None = None,
    gate: dict | None = None,
    engine: str = "duckdb",
    name: str = "stream",
) -> Path:
    """A Kafka contract (JSON is YAML): id/a/k records, dedupe on id, rule a > 0."""
    doc: dict[str, Any] = {
        "name": name,
        "owner": "team@example.com",
        "engine": engine,
        "source": {
            "format": "kafka",
            "kafka": {"bootstrap_servers": broker.bootstrap, "topics": topics, **(kafka or {})},
            "columns": {"id": "BIGINT", "a": "INTEGER", "k": "VARCHAR"},
        },
        "dedupe": {"key": ["id"]},
        "rules": [{"name": "a_positive", "expect": "a > 0"}],
        "gate": gate or {"warn_above": 0.9, "fail_above": 1.0},
        "outputs": {
            "warehouse": warehouse,
            "clean": "clean",
            "quarantine": "dlq",
            "duplicates": "dups",
        },
    }
    path = root / "contract.yml"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path
