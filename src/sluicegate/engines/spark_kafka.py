"""Spark Structured Streaming over Kafka: each micro-batch is one run, exactly once.

``sluicegate watch CONTRACT --engine spark`` (and ``run --incremental``) on a contract with
``source.format: kafka`` start Spark's Kafka source (``spark-sql-kafka-0-10``, from
.jars/spark) with a checkpoint under the warehouse, ``maxOffsetsPerTrigger`` from
``source.kafka.max_records_per_batch``. ``foreachBatch`` collects the batch's
``(topic, partition, offset, value)`` — bounded by that cap — into the lines relation
every engine reads (one row a message, the hostile-reader decisions of
engines/kafka_consumer.py) and hands it, with its per-partition ranges, to a callback:
run/kafka_watch.py runs the same pipeline a DuckDB micro-batch runs on it
(``KafkaIncremental(given=…)``, run/offsets.py). This module never calls the pipeline.

Exactly once: Spark's own guarantee for ``foreachBatch`` is at least once — a batch whose
function returned but whose commit-log entry was not written is replayed after a
restart, with the same offsets. The offsets ledger committed with the outputs makes the
replay a no-op (its offsets are already there and are dropped). If the checkpoint is
lost, Spark starts again at ``starting_offsets``: every offset the ledger holds is
dropped the same way, so nothing is published twice.

Retention: ``on_offsets_lost: fail`` sets ``failOnDataLoss`` — Spark stops the query when
offsets it expected are gone, and the watch ends with that error; ``skip`` lets Spark
carry on and the ledger records the gap (``kafka_offsets_contiguous``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import SluiceError
from .kafka_config import spark_options
from .kafka_consumer import LINES_SCHEMA, PartitionRead, decode, lineage_file
from .spark_jars import jars_folder
from .spark_session import resolve_spec
from .spark_stream import StopRequested, _drive, _Driver, _session_keeping_sigint


def batch_rows(
    records: list[tuple[str, int, int, bytes | None]],
) -> tuple[pa.Table, list[PartitionRead]]:
    """``(topic, partition, offset, value)`` rows → the lines relation and per-partition
    ranges, hashed exactly as the embedded consumer hashes them."""
    records = sorted(records, key=lambda r: (r[0], r[1], r[2]))
    rows: dict[str, list] = {n: [] for n in LINES_SCHEMA.names}
    reads: dict[tuple[str, int], PartitionRead] = {}
    hashes: dict[tuple[str, int], Any] = {}
    for topic, part, off, value in records:
        tp = (topic, int(part))
        r = reads.get(tp)
        if r is None:
            r = reads[tp] = PartitionRead(topic, int(part), int(off), int(off))
            hashes[tp] = hashlib.sha256()
        raw = bytes(value) if value is not None else b""
        text, bad = decode(raw)
        rows["_source_file"].append(lineage_file(*tp))
        rows["_source_line"].append(int(off))
        rows["_line"].append(text)
        rows["_bad_utf8"].append(bad)
        hashes[tp].update(b"%d:%d:" % (off, len(raw)) + raw)
        r.records += 1
        r.bytes += len(raw)
        r.end = int(off) + 1
    for tp, r in reads.items():
        r.sha256 = hashes[tp].hexdigest()
    return pa.Table.from_pydict(rows, schema=LINES_SCHEMA), list(reads.values())


class _KafkaDriver(_Driver):
    """The foreachBatch function: a Kafka batch's records → ``on_batch((rows, reads), id)``."""

    def __call__(self, df: Any, batch_id: int) -> None:
        with self.busy:
            if self.closing or self.stop.is_set() or self.done.is_set():
                raise StopRequested(f"stopping: micro-batch {batch_id} left for the next start")
            got = df.select("topic", "partition", "offset", "value").collect()
            rows, reads = batch_rows([(r[0], r[1], r[2], r[3]) for r in got])
            if not reads:
                return
            try:
                decided = self.on_files((rows, reads), batch_id)
            except BaseException as exc:  # noqa: BLE001 - reported by the driver loop
                self.error = exc
                self.done.set()
                raise
            if decided:
                self.done.set()


#: The jars of Spark's Kafka source (spark-sql-kafka-0-10 and what it needs beyond PySpark).
KAFKA_JARS = (
    "spark-sql-kafka-0-10_",
    "spark-token-provider-kafka-0-10_",
    "kafka-clients-",
    "commons-pool2-",
)


def kafka_source_jars() -> str:
    """``spark.jars`` for the Kafka source: the lakehouse jars folder (``spark_jars``:
    ``$SLUICEGATE_SPARK_JARS`` or the checkout's ``.jars/spark`` that ``make jars`` fills),
    or the checkout's when that variable is empty."""
    from ..errors import EngineUnavailable
    from .spark_jars import ENV_JARS, checkout_jars

    folder = Path(jars_folder() or checkout_jars() / "spark")
    found = [str(p) for prefix in KAFKA_JARS for p in sorted(folder.glob(f"{prefix}*.jar"))[-1:]]
    if len(found) != len(KAFKA_JARS):
        raise EngineUnavailable(
            f"Spark's Kafka source jars are not in {folder}",
            hint=f"run `make jars` (or point {ENV_JARS} at a folder holding spark-sql-kafka-0-10)",
        )
    return ",".join(found)


def kafka_session_options(options: Mapping[str, str] | None) -> dict[str, str]:
    """The stream session's options: the user's, plus ``spark.jars`` naming the Kafka
    source's jars only when the session will not get the lakehouse jars folder (which
    holds them, and which a local session reads in place from the driver's class path:
    ``spark.jars`` would have its executor copy them at every start)."""
    out = dict(options or {})
    jars = kafka_source_jars()  # present, or one line naming `make jars`
    if jars_folder() is None:
        out.setdefault("spark.jars", jars)
    return out


def starting_offsets(spec: Any, contract: str) -> str:
    """Spark's ``startingOffsets`` for the contract's policy.

    Explicit offsets become JSON naming every partition (Spark requires all of them):
    partitions the contract does not name start at the earliest offset (-2).
    """
    import json

    from .kafka_consumer import KafkaReader

    if isinstance(spec.starting_offsets, str):
        return spec.starting_offsets
    with KafkaReader(spec, contract) as reader:
        marks = reader.watermarks()
    doc: dict[str, dict[str, int]] = {}
    for w in marks:
        given = spec.starting_offsets.get(w.topic, {})
        doc.setdefault(w.topic, {})[str(w.partition)] = given.get(w.partition, -2)
    return json.dumps(doc)


def stream_kafka(
    spec: Any,
    contract: str,
    checkpoint: Path,
    on_batch: Callable[[tuple[pa.Table, list[PartitionRead]], int], bool],
    *,
    stop: threading.Event,
    name: str,
    master: str | None = None,
    remote: str | None = None,
    options: Mapping[str, str] | None = None,
    contract_master: str | None = None,
    contract_remote: str | None = None,
    interval: float = 5.0,
    until_idle: bool = False,
) -> bool:
    """Stream the topics of ``spec`` (a contract's ``source.kafka``) to ``on_batch`` until
    ``stop``, a deciding batch, or (``until_idle``: ``trigger(availableNow=True)``) until
    the records present at the start are handed on. ``on_batch((rows, reads), batch_id)``
    gets the batch's lines relation and per-partition ranges and returns True when the
    watch is decided. Returns whether a batch decided the end."""
    session_options = kafka_session_options(options)
    sspec = resolve_spec(
        master,
        remote,
        session_options,
        contract_master=contract_master,
        contract_remote=contract_remote,
    )
    spark, owned = _session_keeping_sigint(sspec)
    driver = _KafkaDriver(on_batch, stop)
    checkpoint.mkdir(parents=True, exist_ok=True)
    try:
        try:
            starting = starting_offsets(spec, contract)
            reader = spark.readStream.format("kafka").option("subscribe", ",".join(spec.topics))
            for k, v in spark_options(spec).items():
                reader = reader.option(k, v)
            stream = (
                reader.option("startingOffsets", starting)
                .option("maxOffsetsPerTrigger", str(spec.max_records_per_batch))
                .option("failOnDataLoss", "true" if spec.on_offsets_lost == "fail" else "false")
                .load()
            )
            writer = (
                stream.writeStream.foreachBatch(driver)
                .option("checkpointLocation", str(checkpoint))
                .queryName(f"sluicegate_kafka_{name}")
            )
            writer = (
                writer.trigger(availableNow=True)
                if until_idle
                else writer.trigger(processingTime=f"{max(interval, 0.1):g} seconds")
            )
            query = writer.start()
        except SluiceError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's own errors, said in one line
            text = str(exc).strip()
            first = text.splitlines()[0] if text else type(exc).__name__
            raise SluiceError(
                f"the Spark Kafka stream could not start: {first}",
                hint="a session started without the Kafka source jars cannot load it: run "
                "sluicegate in its own process (make jars fetches the jars)",
            ) from None
        try:
            _drive(query, driver, stop)
        except SluiceError as exc:
            raise SluiceError(_kafka_failure(exc.message, spec)) from None
    finally:
        if owned:
            spark.stop()
    if driver.error is not None and not isinstance(driver.error, StopRequested):
        raise driver.error
    return driver.done.is_set()


def _kafka_failure(message: str, spec: Any) -> str:
    """Spark's data-loss failure, said in the contract's terms."""
    if "data loss" in message.lower() or "offsetoutofrange" in message.lower().replace(" ", ""):
        return (
            f"Kafka offsets of {', '.join(spec.topics)} were deleted by retention before a "
            "batch read them (source.kafka.on_offsets_lost: fail); nothing of them was "
            f"published. Spark said: {message}"
        )
    return message


__all__ = [
    "batch_rows",
    "kafka_session_options",
    "kafka_source_jars",
    "starting_offsets",
    "stream_kafka",
]
