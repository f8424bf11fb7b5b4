"""Micro-batches over Kafka: the offsets ledger, committed with the outputs.

A Kafka source's micro-batch is the file micro-batch (run/incremental.py) with offsets in
place of files. The **offsets ledger** (:data:`OFFSETS_TABLE`) holds, per batch and
partition, the offsets ``[from_offset, to_offset)`` the batch consumed; it is written
*inside the publish transaction* with the outputs, so:

* a crash before the COMMIT leaves neither: the next batch starts at the same offsets
  (the ledger's ``MAX(to_offset)`` per partition) and reads the same records again;
* a crash after it leaves both: the next batch starts after them.

Kafka's committed consumer-group offsets play no part (they are not written in the same
transaction, so after a crash they can be on either side of the truth). On Spark, a
micro-batch that Structured Streaming replays after a restart arrives with offsets the
ledger already has: they are dropped here, and a batch left with nothing is a no-op.

Lineage is ``(kafka:<topic>/<partition>, offset)`` in the ``(_source_file, _source_line)``
columns, so the DLQ key, dedupe's tie-break and every ledger proof work unchanged.

Retention: when the ledger expects offset N and the partition now starts at L > N, the
records N..L-1 are gone. ``source.kafka.on_offsets_lost: fail`` (default) stops with
:class:`OffsetsLostError`; ``skip`` starts at L, records ``lost_offsets`` in the ledger
and warns in the ``kafka_offsets_contiguous`` fact — a governed gap, never a silent one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..compile.facts import merge_rows
from ..errors import InputError, LedgerError, LedgerViolation
from ..faults import checkpoint
from . import bind as bind_s
from .incremental import Incremental, _prior_tables
from .offsets_table import (
    OFFSET_COLUMNS,
    OFFSET_KEY,
    OFFSETS_TABLE,
    _count_of_run,
    _ensure_table,
    offsets_by_run,
    read_positions,
)

if TYPE_CHECKING:
    from ..engines import Engine
    from .checks import Fact
    from .state import RunContext, RunResult

CONTIGUOUS_CHECK = "kafka_offsets_contiguous"
START_RUN = "start"  # run id of the rows that pin a `latest` start position
#: The fault point of a Kafka batch between bind's plan and its first fetch (faults.py).
ASSIGNED = "kafka:assigned"


class OffsetsLostError(InputError):
    """Retention deleted offsets the ledger expected (``on_offsets_lost: fail``)."""


@dataclass(frozen=True)
class Loss:
    """Offsets ``[expected, low)`` of a partition deleted before any batch read them."""

    topic: str
    partition: int
    expected: int
    low: int

    @property
    def count(self) -> int:
        return self.low - self.expected

    def describe(self) -> str:
        return (
            f"{self.topic}/{self.partition}: offsets {self.expected}..{self.low - 1} "
            f"({self.count}) were deleted by retention before any batch read them"
        )


@dataclass
class KafkaIncremental(Incremental):
    """The micro-batch state of one run over a Kafka source (``RunContext.incremental``).

    ``given`` is the batch Spark's Kafka source handed (engines/spark_kafka.py): its
    lines relation and what it read per partition. Without it the embedded consumer
    (engines/kafka_consumer.py) reads a bounded batch from the ledger's offsets.
    """

    ledger_tables = (OFFSETS_TABLE,)

    given: tuple[Any, list[Any]] | None = None
    rows: Any = None  # pyarrow Table: the lines relation of the batch
    reads: list[Any] = field(default_factory=list)  # engines/kafka_consumer.PartitionRead
    losses: list[Loss] = field(default_factory=list)
    replayed: int = 0  # records of a Spark batch the ledger already had (dropped)

    # -- bind ------------------------------------------------------------------------
    def bind(self, ctx: RunContext) -> tuple[bind_s.Binding, str]:
        loaded, eng = ctx.loaded, ctx.engine
        with eng.attached():
            positions = read_positions(eng, loaded.contract.name)
            self.processed = len(positions)
            if self.given is not None:
                self._take_given(ctx, positions)
            else:
                self._consume(ctx, positions)
            if self.reads:
                self.prior_tables = _prior_tables(ctx)
                self.has_prior = bool(self.prior_tables)
        for loss in self.losses:
            ctx.listener.notice(f"kafka: {loss.describe()} (on_offsets_lost: skip)")
        binding = bind_s.Binding(
            files=[
                bind_s.BoundFile(r.path, r.bytes, 0.0, r.sha256, r.records, 0) for r in self.reads
            ],
            format="kafka",
            files_can_change=False,
        )
        self.files = list(binding.files)
        ctx.counts.incremental = self.metrics()
        return binding, kafka_run_id(loaded, self.reads)

    def _consume(self, ctx: RunContext, positions: dict[tuple[str, int], int]) -> None:
        from ..engines.kafka_consumer import KafkaReader

        c = ctx.loaded.contract
        spec = c.source.kafka
        with KafkaReader(spec, c.name) as reader:
            marks = reader.watermarks()
            plan, starts = {}, []
            for w in marks:
                tp = (w.topic, w.partition)
                if tp in positions:
                    start = positions[tp]
                elif isinstance(spec.starting_offsets, dict):
                    start = spec.starting_offsets.get(w.topic, {}).get(w.partition, w.low)
                elif spec.starting_offsets == "latest":
                    starts.append((tp, w.high))
                    continue
                else:
                    start = w.low
                if start < w.low:
                    loss = Loss(w.topic, w.partition, start, w.low)
                    if spec.on_offsets_lost == "fail" or tp not in positions:
                        raise OffsetsLostError(
                            f"Kafka {loss.describe()}; contract '{c.name}' stops rather than "
                            "lose them silently",
                            hint="recover them from the producer, or set "
                            "source.kafka.on_offsets_lost: skip to carry on from offset "
                            f"{w.low} (the gap is then recorded in the offsets ledger and "
                            f"the {CONTIGUOUS_CHECK} fact)",
                        )
                    self.losses.append(loss)
                    start = w.low
                if start > w.high:
                    raise InputError(
                        f"Kafka {w.topic}/{w.partition}: the offsets ledger expects offset "
                        f"{start} but the partition ends at {w.high} (was the topic recreated?)",
                        hint=f"a recreated topic needs a new contract name or a fresh "
                        f"warehouse; the ledger is table {OFFSETS_TABLE}",
                    )
                plan[tp] = (start, w.high)
            if starts:  # `latest`: pin the position now, so nothing produced later is skipped
                record_starts(ctx, starts)
            rows, reads = reader.read(
                plan, spec.max_records_per_batch, on_assigned=lambda: checkpoint(ASSIGNED)
            )
        self.rows, self.reads = rows, [_Read.of(r, self.losses) for r in reads]
        read = {(r.topic, r.partition) for r in self.reads}
        for x in self.losses:  # a skipped gap is recorded even when nothing follows it yet
            if (x.topic, x.partition) not in read:
                self.reads.append(_Read(x.topic, x.partition, x.low, x.low, 0, 0, "", x.count))

    def _take_given(self, ctx: RunContext, positions: dict[tuple[str, int], int]) -> None:
        """Spark's batch minus the offsets the ledger already has.

        A batch Spark replays after a restart is dropped whole (a no-op); one that
        overlaps the ledger (Spark restarted without its checkpoint) is trimmed to the
        offsets the ledger has not seen. A batch starting after the ledger's next offset
        is a gap: retention deleted records (Spark's ``failOnDataLoss`` stopped the query
        under ``on_offsets_lost: fail``, so here the policy is ``skip``: recorded).
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        rows, reads = self.given
        keep, mask = [], None
        for r in reads:
            nxt = positions.get((r.topic, r.partition))
            if nxt is not None and nxt >= r.end:
                continue
            if nxt is not None and nxt > r.start:
                r = _trim(rows, r, nxt)
            elif nxt is not None and r.start > nxt:
                self.losses.append(Loss(r.topic, r.partition, nxt, r.start))
            keep.append(r)
        for r in keep:
            sel = pc.and_(
                pc.equal(rows["_source_file"], pa.scalar(_Read.path_of(r.topic, r.partition))),
                pc.greater_equal(rows["_source_line"], pa.scalar(r.start, pa.int64())),
            )
            mask = sel if mask is None else pc.or_(mask, sel)
        kept = rows.filter(mask) if mask is not None else rows.slice(0, 0)
        self.replayed = rows.num_rows - kept.num_rows
        self.rows, self.reads = kept, [_Read.of(r, self.losses) for r in keep]

    # -- read ------------------------------------------------------------------------
    def load_lines(self, eng: Engine, table: str) -> None:
        """The batch's lines relation as the engine's TEMP ``table`` (one row a message)."""
        eng.load_line_rows(self.rows, table)

    # -- facts -----------------------------------------------------------------------
    def fact(self, ctx: RunContext) -> Fact:
        """``kafka_offsets_contiguous``: warn when retention deleted offsets this batch had
        to skip (``on_offsets_lost: skip``); pass when every range follows the last one."""
        from .checks import _check

        lost = sum(x.count for x in self.losses)
        names = "; ".join(x.describe() for x in self.losses[:3])
        return _check(
            CONTIGUOUS_CHECK,
            ctx.contract.owner,
            "warn" if lost else "pass",
            Decimal(lost),
            "KAFKA_OFFSETS_LOST" if lost else "OK",
            names if lost else f"{len(self.reads)} partition range(s) contiguous with the ledger",
            threshold_warn=Decimal(0),
            failed=lost,
            evaluated=sum(r.records for r in self.reads) + lost,
        )

    def metrics(self) -> dict[str, Any]:
        return {
            "offsets_table": OFFSETS_TABLE,
            "partitions": [r.describe() for r in self.reads],
            "records": sum(r.records for r in self.reads),
            "partitions_before": self.processed,
            "lost": [x.__dict__ | {"count": x.count} for x in self.losses],
            "replayed_records": self.replayed,
        }

    # -- publish ---------------------------------------------------------------------
    def record_files(self, ctx: RunContext) -> None:
        """MERGE the batch's ranges into the offsets ledger — inside the publish transaction.

        Read back: exactly the batch's ranges must carry its run id, else roll back.
        """
        eng = ctx.engine
        rows = [
            _ledger_row(ctx, r, ctx.gate.status if ctx.gate else "fail", ctx.run_id)
            for r in self.reads
        ]
        _ensure_table(eng)
        eng.execute(
            merge_rows(
                OFFSETS_TABLE, OFFSET_COLUMNS, OFFSET_KEY, rows, scope=("run_id", ctx.run_id)
            )
        )
        got = int(eng.fetch(_count_of_run(ctx.contract.name, ctx.run_id))[0][0])
        if got != len(rows):
            raise LedgerError(
                [
                    LedgerViolation(
                        "offsets_ledger",
                        f"{got} offsets ledger rows for run {ctx.run_id}, expected {len(rows)}",
                    )
                ]
            )
        checkpoint("publish:files_recorded")

    def empty_result(self, ctx: RunContext) -> RunResult | None:
        from ..workspace import Workspace
        from .state import RunResult

        if ctx.binding is not None and ctx.binding.files:
            return None
        c = ctx.contract
        topics = ", ".join(c.source.kafka.topics)
        metrics = {
            "run_id": None,
            "contract": {"name": c.name, "digest": ctx.loaded.digest, "path": str(ctx.loaded.path)},
            "logical_date": ctx.loaded.logical_date,
            "engine": ctx.engine.name,
            "status": "empty",
            "message": f"no new records in Kafka topic(s) {topics}: nothing to do",
            "incremental": self.metrics(),
            "outputs": {"warehouse": str(Workspace(ctx.loaded).warehouse)},
        }
        return RunResult(metrics, "empty", 0, None)


def _trim(rows: Any, r: Any, nxt: int) -> Any:
    """``r`` from offset ``nxt`` on: counts and digest of the records left."""
    import hashlib

    import pyarrow as pa
    import pyarrow.compute as pc

    from ..engines.kafka_consumer import PartitionRead

    sel = pc.and_(
        pc.equal(rows["_source_file"], pa.scalar(_Read.path_of(r.topic, r.partition))),
        pc.greater_equal(rows["_source_line"], pa.scalar(nxt, pa.int64())),
    )
    part = rows.filter(sel).to_pydict()
    h = hashlib.sha256()
    for off, text in zip(part["_source_line"], part["_line"], strict=True):
        raw = text.encode("utf-8")
        h.update(b"%d:%d:" % (off, len(raw)) + raw)
    return PartitionRead(
        r.topic,
        r.partition,
        nxt,
        r.end,
        len(part["_line"]),
        sum(len(t.encode("utf-8")) for t in part["_line"]),
        h.hexdigest(),
    )


@dataclass(frozen=True)
class _Read:
    """One partition's range as the ledger records it."""

    topic: str
    partition: int
    start: int
    end: int
    records: int
    bytes: int
    sha256: str
    lost: int = 0

    @staticmethod
    def path_of(topic: str, partition: int) -> str:
        return f"kafka:{topic}/{partition}"

    @property
    def path(self) -> str:
        return self.path_of(self.topic, self.partition)

    @classmethod
    def of(cls, r: Any, losses: list[Loss]) -> _Read:
        lost = sum(x.count for x in losses if (x.topic, x.partition) == (r.topic, r.partition))
        return cls(r.topic, r.partition, r.start, r.end, r.records, r.bytes, r.sha256, lost)

    def describe(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "from_offset": self.start,
            "to_offset": self.end,
            "records": self.records,
            "lost_offsets": self.lost,
        }


def kafka_run_id(loaded: Any, reads: list[Any]) -> str:
    """Deterministic over what the batch read: 20 hex digits of SHA-256 over compact JSON
    ``[contract, digest, logical date, [[topic, partition, from, to, sha256], …], "kafka"]``."""
    ranges = sorted([r.topic, r.partition, r.start, r.end, r.sha256] for r in reads)
    doc = [loaded.contract.name, loaded.digest, loaded.logical_date, ranges, "kafka"]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


# -- the ledger ------------------------------------------------------------------------


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(sep=" ")


def _ledger_row(ctx: RunContext, r: _Read, status: str, run_id: str) -> dict[str, Any]:
    return {
        "contract": ctx.contract.name,
        "topic": r.topic,
        "partition_id": r.partition,
        "from_offset": r.start,
        "to_offset": r.end,
        "records": r.records,
        "bytes": r.bytes,
        "sha256": r.sha256,
        "lost_offsets": r.lost,
        "run_id": run_id,
        "logical_date": ctx.loaded.logical_date,
        "status": status,
        "engine": ctx.engine.name,
        "processed_at": _now(),
    }


def record_starts(ctx: RunContext, starts: list[tuple[tuple[str, int], int]]) -> None:
    """Pin ``latest`` start positions in their own transaction (zero-record ranges)."""
    eng = ctx.engine
    rows = [
        _ledger_row(ctx, _Read(t, p, off, off, 0, 0, ""), START_RUN, START_RUN)
        for (t, p), off in starts
    ]
    with eng.transaction():
        _ensure_table(eng)
        eng.execute(merge_rows(OFFSETS_TABLE, OFFSET_COLUMNS, OFFSET_KEY, rows))


__all__ = [
    "CONTIGUOUS_CHECK",
    "OFFSETS_TABLE",
    "KafkaIncremental",
    "Loss",
    "OffsetsLostError",
    "kafka_run_id",
    "offsets_by_run",
    "read_positions",
]
