"""``watch`` / ``run --incremental`` over an engine's Kafka stream (Spark Structured Streaming).

The engine's Kafka source (engines/spark_kafka.py, ``capabilities.kafka_stream``) hands
each micro-batch's records here; each becomes one incremental run with
``KafkaIncremental(given=…)`` (run/offsets.py), whose offsets ledger commits with the
outputs. A batch Spark replays after a restart finds its offsets in the ledger and is a
no-op. The gate policy, ``--max-batches`` and the outcome are run/watch.py's (``judge``).
Engines without a Kafka stream (DuckDB) are polled by run/watch.py like a landing folder:
each poll is one bounded read by the embedded consumer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..engines import kafka_stream
from ..workspace import Workspace
from ..workspace import engine_options as options_of

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract


def stream_kafka(
    load: Callable[[], LoadedContract],
    listener: Any,
    stop: threading.Event,
    engine_name: str,
    engine_options: dict[str, Any] | None,
    interval: float,
    max_batches: int | None,
    until_idle: bool,
    out: Any,
    judge: Callable[..., Any],
) -> Any:
    """One incremental run per micro-batch of the engine's Kafka stream; ``out`` (a
    ``WatchOutcome``) and ``judge`` are run/watch.py's, which calls this."""
    from .offsets import KafkaIncremental
    from .pipeline import run_contract

    loaded = load()
    spec = loaded.contract.source.kafka
    stream = kafka_stream(engine_name)
    assert stream is not None
    overrides = {k: v for k, v in (engine_options or {}).items() if k != "profile"}
    _name, options = options_of(loaded, engine=engine_name, overrides=overrides)

    def on_batch(batch: tuple[Any, list[Any]], batch_id: int) -> bool:
        """Run the micro-batch; True when the watch is decided."""
        batch_loaded = load()
        result = run_contract(
            batch_loaded,
            engine_name=engine_name,
            listener=listener,
            engine_options=engine_options,
            incremental=KafkaIncremental(given=batch),
        )
        if result.status == "empty":  # a replay after a crash: its offsets are in the ledger
            listener.idle(
                f"micro-batch {batch_id}: its {batch[0].num_rows} records are already "
                "published (a replay after a restart): nothing to do"
            )
            return False
        decided = judge(out, result, batch_loaded.contract.gate.on_stream_fail, listener)
        if decided is None and max_batches is not None and out.batches >= max_batches:
            out.reason = "max_batches"
            return True
        return decided is not None

    decided = stream(
        spec,
        loaded.contract.name,
        Workspace(loaded).stream_checkpoint,
        on_batch,
        stop=stop,
        name=loaded.contract.name,
        interval=interval,
        until_idle=until_idle,
        **options,
    )
    if until_idle and out.reason == "stopped":
        out.reason = "idle"
    if out.batches == 0 and not decided:
        listener.idle(f"no new records in Kafka topic(s) {', '.join(spec.topics)}: nothing to do")
    return out


__all__ = ["stream_kafka"]
