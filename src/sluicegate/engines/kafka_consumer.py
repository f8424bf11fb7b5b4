"""The embedded engine's Kafka reader: one *bounded* read per micro-batch (confluent-kafka).

Why bounded, and why not Kafka's consumer-group offsets: a micro-batch is one run with one
ledger, so it must read a finite, known set of records. At bind time the reader takes
each partition's high watermark as the batch's end and reads ``[start, end)`` — capped at
``max_records_per_batch`` over all partitions — where ``start`` comes from sluicegate's
offsets ledger (run/offsets.py), the record that commits with the outputs. Kafka's
committed group offsets are written afterwards as a hint for monitoring only: after a
crash they may be ahead of or behind what was published; the ledger is the truth.

What a message becomes (the hostile-reader decisions of the NDJSON reader, per message):
one message is one record whatever its bytes. Its value is decoded as UTF-8 — invalid
bytes replaced by U+FFFD and the record flagged (a ``corrupt_record``), never fatal; a
leading UTF-8 BOM and trailing CR/LF are removed; an empty value or a tombstone (no
value) is *not* skipped like a blank line is in a file — it is an offset, so it is a
record, and it is quarantined as corrupt. Lineage is ``_source_file = kafka:<topic>/<partition>``
and ``_source_line = <offset>``.

Errors are one line naming the brokers, topic and partition: a broker that does not
answer within ``timeout_seconds``, a missing topic, an offset deleted by retention.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from ..errors import InputError
from .kafka_config import librdkafka_config

BOM = "\ufeff"
LINES_SCHEMA = pa.schema(
    [
        ("_source_file", pa.string()),
        ("_source_line", pa.int64()),
        ("_line", pa.string()),
        ("_bad_utf8", pa.bool_()),
    ]
)
#: How long one poll waits; the batch's own deadline is ``timeout_seconds`` of no progress.
POLL_SECONDS = 0.5
#: Messages taken per consume call (each call returns what librdkafka has fetched).
CHUNK = 5_000


def lineage_file(topic: str, partition: int) -> str:
    """``kafka:<topic>/<partition>``: the ``_source_file`` of a Kafka record."""
    return f"kafka:{topic}/{partition}"


@dataclass(frozen=True)
class Watermarks:
    """A partition as the brokers reported it at bind time: ``[low, high)`` retained."""

    topic: str
    partition: int
    low: int
    high: int


@dataclass
class PartitionRead:
    """What a batch read from one partition: offsets ``[start, end)`` (``end`` = the next
    offset to read), the records among them, and a digest of their values."""

    topic: str
    partition: int
    start: int
    end: int
    records: int = 0
    bytes: int = 0
    sha256: str = ""
    _hash: Any = field(default=None, repr=False)


def decode(value: bytes | None) -> tuple[str, bool]:
    """A message value as record text and whether its bytes were not UTF-8."""
    if not value:
        return "", False
    try:
        text, bad = value.decode("utf-8"), False
    except UnicodeDecodeError:
        text, bad = value.decode("utf-8", errors="replace"), True
    if text.startswith(BOM):
        text = text[1:]
    return text.rstrip("\r\n"), bad


class KafkaReader:
    """A short-lived consumer for one micro-batch (``with KafkaReader(...) as r:``)."""

    def __init__(self, spec: Any, contract: str) -> None:
        self.spec = spec
        self.contract = contract
        self.timeout = spec.timeout_seconds
        try:
            self.consumer = Consumer(librdkafka_config(spec, contract))
        except KafkaException as exc:
            raise InputError(f"Kafka consumer for {spec.bootstrap_servers}: {_text(exc)}") from None

    def __enter__(self) -> KafkaReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.consumer.close()
        except (KafkaException, RuntimeError):
            pass

    # -- metadata -------------------------------------------------------------------
    def watermarks(self) -> list[Watermarks]:
        """Every partition of the contract's topics with its retained offsets."""
        try:
            meta = self.consumer.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self._unreachable(exc) from None
        out = []
        for topic in self.spec.topics:
            t = meta.topics.get(topic)
            if t is None or t.error is not None:
                raise InputError(
                    f"Kafka topic '{topic}' does not exist on {self.spec.bootstrap_servers}",
                    hint="create the topic, or fix source.kafka.topics",
                )
            for p in sorted(t.partitions):
                try:
                    low, high = self.consumer.get_watermark_offsets(
                        TopicPartition(topic, p), timeout=self.timeout, cached=False
                    )
                except KafkaException as exc:
                    raise self._unreachable(exc, f"{topic}/{p}") from None
                out.append(Watermarks(topic, p, int(low), int(high)))
        return out

    # -- the bounded read ------------------------------------------------------------
    def read(
        self,
        plan: dict[tuple[str, int], tuple[int, int]],
        max_records: int,
        on_assigned: Callable[[], None] | None = None,
    ) -> tuple[pa.Table, list[PartitionRead]]:
        """Read ``[start, end)`` of each planned partition, at most ``max_records`` in all.

        ``on_assigned`` is called once the partitions are assigned, before the first fetch
        (the run's fault point ``kafka:assigned``: tests restart the broker there).

        Returns the lines relation (``_source_file, _source_line, _line, _bad_utf8``) and
        what was read per partition (only partitions that gave at least one record).
        """
        todo = {tp: PartitionRead(tp[0], tp[1], s, s) for tp, (s, e) in plan.items() if e > s}
        ends = {tp: plan[tp][1] for tp in todo}
        rows: dict[str, list] = {n: [] for n in LINES_SCHEMA.names}
        if not todo:
            return pa.Table.from_pydict(rows, schema=LINES_SCHEMA), []
        for r in todo.values():
            r._hash = hashlib.sha256()
        self.consumer.assign([TopicPartition(t, p, plan[(t, p)][0]) for t, p in todo])
        if on_assigned is not None:
            on_assigned()
        open_ = set(todo)
        total, last_progress = 0, time.monotonic()
        while open_ and total < max_records:
            msgs = self.consumer.consume(min(CHUNK, max_records - total), timeout=POLL_SECONDS)
            if not msgs and time.monotonic() - last_progress > self.timeout:
                left = ", ".join(f"{t}/{p} at {todo[(t, p)].end}" for t, p in sorted(open_))
                raise InputError(
                    f"Kafka: no record for {self.timeout:g} s from {self.spec.bootstrap_servers} "
                    f"while reading {left} (below the high watermark seen at the start)",
                    hint="check the brokers are up; the batch is not published and is retried whole",
                )
            for m in msgs:
                tp = (m.topic(), m.partition())
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if tp in open_ and (m.offset() or 0) >= todo[tp].end:
                            open_.discard(tp)  # nothing more below the end
                        continue
                    if err.code() == KafkaError.OFFSET_OUT_OF_RANGE:
                        raise InputError(
                            f"Kafka {tp[0]}/{tp[1]}: offset {todo[tp].end} was deleted by "
                            "retention while the batch read it",
                            hint="rerun: the next batch sees the loss at its start "
                            "(source.kafka.on_offsets_lost decides)",
                        )
                    if err.retriable() or not err.fatal():
                        continue  # librdkafka reconnects by itself (a broker restart)
                    raise InputError(f"Kafka {tp[0]}/{tp[1]}: {err.str()}")
                if tp not in open_:
                    continue
                off = m.offset()
                if off >= ends[tp]:
                    open_.discard(tp)
                    continue
                text, bad = decode(m.value())
                r = todo[tp]
                rows["_source_file"].append(lineage_file(*tp))
                rows["_source_line"].append(off)
                rows["_line"].append(text)
                rows["_bad_utf8"].append(bad)
                raw = m.value() or b""
                r._hash.update(b"%d:%d:" % (off, len(raw)) + raw)
                r.records += 1
                r.bytes += len(raw)
                r.end = off + 1
                total += 1
                last_progress = time.monotonic()
                if r.end >= ends[tp]:
                    open_.discard(tp)
                if total >= max_records:
                    break
        reads = [r for r in todo.values() if r.records]
        for r in reads:
            r.sha256 = r._hash.hexdigest()
        return pa.Table.from_pydict(rows, schema=LINES_SCHEMA), reads

    def commit_hint(self, reads: list[PartitionRead]) -> None:
        """Tell Kafka the group's position (monitoring only; the ledger is the truth)."""
        if not reads:
            return
        try:
            self.consumer.commit(
                offsets=[TopicPartition(r.topic, r.partition, r.end) for r in reads],
                asynchronous=False,
            )
        except KafkaException:
            pass  # a hint: the published batch does not depend on it

    def _unreachable(self, exc: Exception, where: str = "") -> InputError:
        at = f" ({where})" if where else ""
        return InputError(
            f"Kafka brokers {self.spec.bootstrap_servers} did not answer within "
            f"{self.timeout:g} s{at}: {_text(exc)}",
            hint="check source.kafka.bootstrap_servers and that the brokers are up",
        )


def _text(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    return arg.str() if isinstance(arg, KafkaError) else str(arg)


__all__ = [
    "LINES_SCHEMA",
    "OFFSET_BEGINNING",
    "KafkaReader",
    "PartitionRead",
    "Watermarks",
    "decode",
    "lineage_file",
]
