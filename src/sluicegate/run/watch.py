"""``sluicegate watch``: poll a landing directory and run micro-batches until stopped.

Each poll is one incremental run (run/incremental.py): new files → one micro-batch with
its own run id, ledger, gate and facts, published in one transaction with the
processed-file ledger; no new file → nothing happens. The loop itself holds no state
that matters for correctness — the warehouse's file ledger does — so a watcher killed at
any moment (SIGKILL included) is restarted and carries on exactly where the last COMMIT
left it. Between polls the landing folder is looked at every 0.05 s (run/landing.py): a
file landed there starts the next poll at once instead of after the rest of the interval.
The loop hands its batches one cache of typed references and dimensions (run/reuse.py),
so a reference whose files did not change is not typed again every batch.

Stopping: the caller passes a :class:`threading.Event` (the CLI sets it on SIGINT and
SIGTERM). It is checked between batches only, so the batch in flight finishes and
publishes; the loop then returns with exit 0.

A failing batch (gate ``fail``): ``gate.on_stream_fail: stop`` (the default) ends the
watch with exit 1; ``continue`` records it (its quarantine and facts are published, its
clean rows withheld, its files marked processed) and polls on. A ledger violation always
stops (exit 3): nothing of that batch was published, and a rerun would hit it again.

One watcher per contract: ``watch.lock`` beside the writer lock (same stale-takeover
rules, run/lock.py). A batch that finds the *writer* lock held — a manual ``sluicegate
run`` of the contract — waits for the next poll instead of failing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..engines import file_stream, kafka_stream
from ..errors import LockedError, UsageError
from ..report.events import Listener
from ..workspace import Workspace
from ..workspace import engine_name as engine_of
from ..workspace import engine_options as options_of
from .landing import listing, wait_for_landing
from .lock import WriterLock

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract
    from .state import RunResult


class WatchListener(Listener, Protocol):
    """A :class:`Listener` that is also told about whole batches and idle polls."""

    def batch(self, number: int, result: RunResult) -> None:
        """Micro-batch ``number`` (1-based, this watcher's) ended with ``result``."""

    def idle(self, message: str) -> None:
        """A poll found nothing new (or had to wait for the writer lock)."""


@dataclass
class WatchOutcome:
    """How a watch ended: exit code, why, and the batches it ran."""

    exit_code: int
    reason: str  # stopped | max_batches | idle | gate_failed | ledger_violation
    batches: int = 0
    failed: int = 0
    results: list[Any] = field(default_factory=list)  # RunResult of every non-empty batch


def watch_lock_path(loaded: LoadedContract) -> Path:
    """``<warehouse stem>.runs/<contract>/watch.lock``: one watcher per contract."""
    return Workspace(loaded).watch_lock


def watch(
    load: Callable[[], LoadedContract],
    *,
    listener: WatchListener,
    stop: threading.Event,
    engine_name: str | None = None,
    engine_options: dict[str, Any] | None = None,
    interval: float = 5.0,
    max_batches: int | None = None,
    until_idle: bool = False,
) -> WatchOutcome:
    """Run micro-batches until ``stop`` is set, ``max_batches`` ran, or (``until_idle``)
    a poll finds nothing new.

    ``load`` is called before every batch: with no pinned ``--logical-date`` each batch
    gets the current date (a watch that runs past midnight files the next batches under
    the new date). An engine with a streaming file source (``capabilities.file_stream``:
    Spark Structured Streaming, engines/spark_stream.py) finds the new files itself and
    hands them here; otherwise the landing directory is polled.
    """
    first = load()
    name = engine_of(first, engine_name)
    wlock = WriterLock(watch_lock_path(first), first.contract.name)
    with wlock.hold():
        if wlock.took_over is not None:
            listener.notice(f"took over a stale watch lock from {wlock.took_over.describe()}")
        if first.contract.source.format == "kafka":  # Kafka: a stream, or polled batches
            if kafka_stream(name) is not None:
                from .kafka_watch import stream_kafka

                return stream_kafka(
                    load,
                    listener,
                    stop,
                    name,
                    engine_options,
                    interval,
                    max_batches,
                    until_idle,
                    WatchOutcome(0, "stopped"),
                    judge,
                )
        elif file_stream(name) is not None:
            return _stream(
                load, listener, stop, name, engine_options, interval, max_batches, until_idle
            )
        return _poll(load, listener, stop, name, engine_options, interval, max_batches, until_idle)


def _poll(
    load: Callable[[], LoadedContract],
    listener: WatchListener,
    stop: threading.Event,
    engine_name: str,
    engine_options: dict[str, Any] | None,
    interval: float,
    max_batches: int | None,
    until_idle: bool,
) -> WatchOutcome:
    from .pipeline import run_contract
    from .reuse import RelationCache

    out = WatchOutcome(0, "stopped")
    reuse = RelationCache()  # unchanged references are typed once per watch (run/reuse.py)
    while not stop.is_set():
        loaded = load()
        polled = None if until_idle else listing(loaded)  # what this poll may find
        try:
            result = run_contract(
                loaded,
                engine_name=engine_name,
                listener=listener,
                engine_options=engine_options,
                incremental=True,
                reuse=reuse,
            )
        except LockedError as exc:
            if until_idle:  # a one-shot run is refused like any run (exit 5)
                raise
            listener.idle(f"waiting: {exc.message}")
            stop.wait(interval)
            continue
        if result.status == "empty":
            listener.idle(result.metrics.get("message", "no new files"))
            if until_idle:
                out.reason = "idle"
                return out
        else:
            decided = judge(out, result, loaded.contract.gate.on_stream_fail, listener)
            if decided is not None:
                return decided
            if max_batches is not None and out.batches >= max_batches:
                out.reason = "max_batches"
                return out
            if until_idle:
                continue  # new files may have landed while the batch ran
        wait_for_landing(loaded, stop, interval, polled)  # a landed file ends the wait early
    return out


def landing_dir(loaded: LoadedContract) -> Path:
    """The landing directory a file stream watches: ``source.path``, a folder of text files."""
    src = loaded.contract.source
    path = Path(loaded.resolve_path(src.path))
    if any(ch in src.path for ch in "*?[") or not path.is_dir():
        raise UsageError(
            f"a Spark stream needs source.path to be a landing directory; '{src.path}' is not",
            hint="point source.path at the folder upstream drops files into",
        )
    if src.format == "parquet":
        raise UsageError("the Spark stream reads text landing files (ndjson or csv), not parquet")
    return path


def _stream(
    load: Callable[[], LoadedContract],
    listener: WatchListener,
    stop: threading.Event,
    engine_name: str,
    engine_options: dict[str, Any] | None,
    interval: float,
    max_batches: int | None,
    until_idle: bool,
) -> WatchOutcome:
    """One incremental run per micro-batch of the engine's file stream (its files only)."""
    from .incremental import Incremental
    from .pipeline import run_contract

    loaded = load()
    landing = landing_dir(loaded)
    stream = file_stream(engine_name)
    assert stream is not None
    overrides = {k: v for k, v in (engine_options or {}).items() if k != "profile"}
    _name, options = options_of(loaded, engine=engine_name, overrides=overrides)
    out = WatchOutcome(0, "stopped")

    def on_files(files: list[str], batch_id: int) -> bool:
        """Run the micro-batch; True when the watch is decided."""
        batch_loaded = load()
        result = run_contract(
            batch_loaded,
            engine_name=engine_name,
            listener=listener,
            engine_options=engine_options,
            incremental=Incremental(only=files),
        )
        if result.status == "empty":  # a replay after a crash: its files are in the ledger
            listener.idle(
                f"micro-batch {batch_id}: its {len(files)} files are already processed "
                "(a replay after a restart): nothing to do"
            )
            return False
        decided = judge(out, result, batch_loaded.contract.gate.on_stream_fail, listener)
        if decided is None and max_batches is not None and out.batches >= max_batches:
            out.reason = "max_batches"
            return True
        return decided is not None

    decided = stream(
        landing,
        Workspace(loaded).stream_checkpoint,
        on_files,
        stop=stop,
        name=loaded.contract.name,
        interval=interval,
        until_idle=until_idle,
        **options,
    )
    if until_idle and out.reason == "stopped":
        out.reason = "idle"
    if out.batches == 0 and not decided:
        listener.idle(f"no new files under {landing}: nothing to do")
    return out


def judge(
    out: WatchOutcome, result: RunResult, on_stream_fail: str, listener: WatchListener
) -> WatchOutcome | None:
    """Count a finished batch; return the outcome if it ends the watch (shared with Spark)."""
    out.batches += 1
    out.results.append(result)
    listener.batch(out.batches, result)
    if result.status == "ledger_violation":
        out.exit_code, out.reason = 3, "ledger_violation"
        return out
    if result.status == "fail":
        out.failed += 1
        if on_stream_fail == "stop":
            out.exit_code, out.reason = 1, "gate_failed"
            return out
        listener.notice(
            f"batch {out.batches} failed its gate; gate.on_stream_fail is 'continue': "
            "its clean rows are withheld, the watch goes on"
        )
    return None


__all__ = ["WatchListener", "WatchOutcome", "judge", "landing_dir", "watch", "watch_lock_path"]
