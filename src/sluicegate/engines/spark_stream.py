"""Spark Structured Streaming over a landing directory: each micro-batch is one run.

``sluicegate watch CONTRACT --engine spark`` and ``sluicegate run CONTRACT --engine spark
--incremental`` start a file-source stream (the ``text`` format) over the contract's
landing directory with a checkpoint under the warehouse
(``<warehouse>/.sluicegate/streams/<contract>/``). ``foreachBatch`` hands each
micro-batch's files to the same pipeline a batch run executes (``run_contract`` with
``Incremental(only=files)``): bind with SHA-256 and raw counts, the permissive reader
with exact line lineage (``spark_lines``), dedupe against earlier batches, route, gate,
DLQ MERGE, facts, and the publish transaction that also records the processed-file
ledger. ``--incremental`` uses ``trigger(availableNow=True)``; ``watch`` a processing-
time trigger every ``--interval`` seconds.

Why the batch's DataFrame is used only for its file names: the text source gives lines
without their physical line numbers, and lineage (``_source_file``, ``_source_line``) is
the identity the ledger is proven on. So each file is read again by the engine's exact
line reader — the same code a batch run uses, hence the same rows.

Exactly once (docs/streaming.md): Spark's own guarantee for ``foreachBatch`` is at least
once — a batch whose function returned but whose commit-log entry was not written yet is
replayed after a restart, with the same files. The processed-file ledger makes the
replay harmless: it committed with the outputs, so the replayed files are not new and the
replayed batch is a no-op. The checkpoint only makes file discovery incremental; the
ledger is the record of what was processed (losing the checkpoint re-lists every file,
and the ledger skips the processed ones).

Stopping: the stop event is honoured between batches. A batch that would start after it
is set raises inside ``foreachBatch`` so that Spark does not record it as done (its
files are offered again after a restart) — returning normally would make Spark's
checkpoint skip files the ledger never received.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from ..errors import SluiceError, UsageError
from .spark_lines import bound_path, spark_path
from .spark_session import open_session, resolve_spec
from .spark_warehouse import INTERNAL

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract
    from ..run.watch import WatchListener, WatchOutcome

#: Spark forgets files older than this relative to the newest it saw (``maxFileAge``);
#: a landing directory's late copies with old mtimes must not be forgotten.
MAX_FILE_AGE = "36500d"
#: How often the driver loop checks the stop event and the batch count.
TICK_SECONDS = 0.2
#: The one column the stream keeps: each line's file, as the binding spells paths.
PATH = "_sg_path"


class StopRequested(SluiceError):
    """Raised inside ``foreachBatch`` when the watch is stopping: Spark must not commit it."""


def checkpoint_dir(loaded: LoadedContract) -> Path:
    """``<warehouse>/.sluicegate/streams/<contract>``: beside the tables, hidden from them."""
    from ..run.pipeline import warehouse_path

    return Path(warehouse_path(loaded)) / INTERNAL / "streams" / loaded.contract.name


def landing_dir(loaded: LoadedContract) -> Path:
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


class _Driver:
    """The foreachBatch function and the state the driver loop watches."""

    def __init__(
        self,
        load: Callable[[], LoadedContract],
        listener: WatchListener,
        stop: threading.Event,
        engine_options: dict[str, Any] | None,
        max_batches: int | None,
    ) -> None:
        from ..run.watch import WatchOutcome

        self.load = load
        self.listener = listener
        self.stop = stop
        self.engine_options = engine_options
        self.max_batches = max_batches
        self.out: WatchOutcome = WatchOutcome(0, "stopped")
        self.done = threading.Event()  # the watch is decided (fail, ledger, max batches)
        self.busy = threading.Lock()  # held while a batch runs
        self.closing = False  # set under ``busy``: no batch may start any more
        self.error: BaseException | None = None

    def __call__(self, df: Any, batch_id: int) -> None:
        with self.busy:
            if self.closing or self.stop.is_set() or self.done.is_set():
                raise StopRequested(f"stopping: micro-batch {batch_id} left for the next start")
            files = sorted({r[0] for r in df.select(PATH).distinct().collect()})
            self._run(files, batch_id)

    def _run(self, files: list[str], batch_id: int) -> None:
        from ..run.incremental import Incremental
        from ..run.pipeline import run_contract
        from ..run.watch import judge

        loaded = self.load()
        try:
            result = run_contract(
                loaded,
                engine_name="spark",
                listener=self.listener,
                engine_options=self.engine_options,
                incremental=Incremental(only=files),
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the driver loop
            self.error = exc
            self.done.set()
            raise
        if result.status == "empty":  # a replay after a crash: its files are in the ledger
            self.listener.idle(
                f"micro-batch {batch_id}: its {len(files)} files are already processed "
                "(a replay after a restart): nothing to do"
            )
            return
        decided = judge(self.out, result, loaded.contract.gate.on_stream_fail, self.listener)
        if decided is not None or (
            self.max_batches is not None and self.out.batches >= self.max_batches
        ):
            if decided is None:
                self.out.reason = "max_batches"
            self.done.set()


def watch_stream(
    load: Callable[[], LoadedContract],
    *,
    listener: WatchListener,
    stop: threading.Event,
    engine_options: dict[str, Any] | None = None,
    interval: float = 5.0,
    max_batches: int | None = None,
    until_idle: bool = False,
) -> WatchOutcome:
    """Run the stream until ``stop``, a deciding batch, ``max_batches``, or (``until_idle``:
    ``trigger(availableNow=True)``) until the files present at the start are processed."""
    loaded = load()
    landing = landing_dir(loaded)
    eng_cfg = loaded.contract.engine
    opts = dict(engine_options or {})
    spec = resolve_spec(
        opts.get("master"),
        opts.get("remote"),
        opts.get("options") or eng_cfg.options or None,
        contract_master=eng_cfg.master,
        contract_remote=eng_cfg.remote,
    )
    spark, owned = _session_keeping_sigint(spec)
    driver = _Driver(load, listener, stop, engine_options, max_batches)
    ckpt = checkpoint_dir(loaded)
    ckpt.mkdir(parents=True, exist_ok=True)
    try:
        lines = (
            spark.readStream.format("text")
            .option("recursiveFileLookup", "true")
            .option("maxFileAge", MAX_FILE_AGE)
            .load(spark_path(str(landing)))
            .select(bound_path(F.col("_metadata.file_path")).alias(PATH))
        )
        writer = (
            lines.writeStream.foreachBatch(driver)
            .option("checkpointLocation", str(ckpt))
            .queryName(f"sluicegate_{loaded.contract.name}")
        )
        writer = (
            writer.trigger(availableNow=True)
            if until_idle
            else writer.trigger(processingTime=f"{max(interval, 0.1):g} seconds")
        )
        query = writer.start()
        _drive(query, driver, stop)
    finally:
        if owned:
            spark.stop()
    if driver.error is not None and not isinstance(driver.error, StopRequested):
        raise driver.error
    if until_idle and driver.out.reason == "stopped":
        driver.out.reason = "idle"
    if driver.out.batches == 0 and not driver.done.is_set():
        listener.idle(f"no new files under {landing}: nothing to do")
    return driver.out


def _session_keeping_sigint(spec: Any) -> tuple[Any, bool]:
    """Open the session without losing the caller's SIGINT handler.

    PySpark's SparkContext installs its own (cancel every job, raise KeyboardInterrupt),
    which would abort the batch in flight instead of letting ``watch`` finish it.
    """
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    session = open_session(spec)
    if main and before is not None and signal.getsignal(signal.SIGINT) is not before:
        signal.signal(signal.SIGINT, before)
    return session


def _drive(query: Any, driver: _Driver, stop: threading.Event) -> None:
    """Wait for the query to end by itself (availableNow) or for a reason to stop it."""
    try:
        while query.isActive:
            if stop.is_set() or driver.done.is_set():
                with driver.busy:  # the batch in flight finishes and publishes first
                    driver.closing = True
                query.stop()
                break
            time.sleep(TICK_SECONDS)
        exc = query.exception()
    finally:
        if query.isActive:
            query.stop()
    if exc is not None and driver.error is None and not (stop.is_set() or driver.done.is_set()):
        raise SluiceError(f"the Spark stream failed: {str(exc).strip().splitlines()[0]}")
