"""Spark Structured Streaming as a file source: each micro-batch's new files, handed on.

``stream_files`` starts a file-source stream (the ``text`` format) over a landing
directory with its checkpoint folder, and calls ``on_files(files, batch_id)`` with the
sorted list of files each micro-batch brought. What is done with them — one incremental
run per batch, the gate policy, ``--max-batches`` — is the caller's (run/watch.py): this
engine module never calls the pipeline. ``until_idle`` uses ``trigger(availableNow=True)``;
otherwise a processing-time trigger every ``interval`` seconds.

Why the batch's DataFrame is used only for its file names: the text source gives lines
without their physical line numbers, and lineage (``_source_file``, ``_source_line``) is
the identity the ledger is proven on. So the caller reads each file again with the
engine's exact line reader — the same code a batch run uses, hence the same rows.

Exactly once (docs/streaming.md): Spark's own guarantee for ``foreachBatch`` is at least
once — a batch whose function returned but whose commit-log entry was not written yet is
replayed after a restart, with the same files. The caller's processed-file ledger makes
the replay harmless. The checkpoint only makes file discovery incremental.

Stopping: the stop event is honoured between batches. A batch that would start after it
is set (or after ``on_files`` said the watch is decided) raises inside ``foreachBatch``
so that Spark does not record it as done (its files are offered again after a restart) —
returning normally would make Spark's checkpoint skip files the ledger never received.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from ..errors import SluiceError
from .spark_lines import bound_path, spark_path
from .spark_session import open_session, resolve_spec

#: Spark forgets files older than this relative to the newest it saw (``maxFileAge``);
#: a landing directory's late copies with old mtimes must not be forgotten.
MAX_FILE_AGE = "36500d"
#: How often the driver loop checks the stop event and the batch count.
TICK_SECONDS = 0.2
#: The one column the stream keeps: each line's file, as the binding spells paths.
PATH = "_sg_path"


#: ``on_files(files, batch_id)`` → True when the watch is decided (no batch may follow)
OnFiles = Callable[[list[str], int], bool]


class StopRequested(SluiceError):
    """Raised inside ``foreachBatch`` when the watch is stopping: Spark must not commit it."""


class _Driver:
    """The foreachBatch function and the state the driver loop watches."""

    def __init__(self, on_files: OnFiles, stop: threading.Event) -> None:
        self.on_files = on_files
        self.stop = stop
        self.done = threading.Event()  # the watch is decided (fail, ledger, max batches)
        self.busy = threading.Lock()  # held while a batch runs
        self.closing = False  # set under ``busy``: no batch may start any more
        self.error: BaseException | None = None

    def __call__(self, df: Any, batch_id: int) -> None:
        with self.busy:
            if self.closing or self.stop.is_set() or self.done.is_set():
                raise StopRequested(f"stopping: micro-batch {batch_id} left for the next start")
            files = sorted({r[0] for r in df.select(PATH).distinct().collect()})
            try:
                decided = self.on_files(files, batch_id)
            except BaseException as exc:  # noqa: BLE001 - reported by the driver loop
                self.error = exc
                self.done.set()
                raise
            if decided:
                self.done.set()


def stream_files(
    landing: Path,
    checkpoint: Path,
    on_files: OnFiles,
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
    """Stream ``landing``'s new files to ``on_files`` until ``stop``, a deciding batch, or
    (``until_idle``: ``trigger(availableNow=True)``) until the files present at the start
    are handed on. Returns whether a batch decided the end (``on_files`` returned True).

    The session options are the engine's (``SparkEngine``): CLI > environment > contract.
    """
    spec = resolve_spec(
        master, remote, options, contract_master=contract_master, contract_remote=contract_remote
    )
    spark, owned = _session_keeping_sigint(spec)
    driver = _Driver(on_files, stop)
    checkpoint.mkdir(parents=True, exist_ok=True)
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
            .option("checkpointLocation", str(checkpoint))
            .queryName(f"sluicegate_{name}")
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
    return driver.done.is_set()


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
