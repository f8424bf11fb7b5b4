"""``sluicegate watch CONTRACT`` and ``sluicegate run CONTRACT --incremental``: micro-batches.

The loop lives in ``run/watch.py`` (core, silent); this module renders it — a line per
batch, a note when the landing directory goes idle, the full run summary for a single
``run --incremental`` — and turns SIGINT/SIGTERM into "finish the current batch, then
stop" (exit 0). A second signal stops at once: nothing is half-published by that, since
every batch commits in one transaction (docs/streaming.md).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..contract.tokens import redact_secrets
from .common import (
    CONTEXT,
    contract_argument,
    engine_option,
    examples,
    json_option,
    logical_date_option,
    var_option,
)
from .console import CliConsole, render_run_summary, render_verdict
from .present import dumps, norm_path

EXIT_BY_STATUS = {"pass": 0, "warn": 0, "empty": 0, "fail": 1, "ledger_violation": 3}


class WatchConsole(CliConsole):
    """The CLI console plus the two watch events: a finished batch and an idle poll."""

    def __init__(self, *, quiet: bool = False, json_mode: bool = False, full: bool = False):
        super().__init__(quiet=quiet, json_mode=json_mode)
        self.full = full  # the whole run summary per batch (run --incremental), not a line
        self._idle_shown = False

    # stage progress per batch is noise in a long-running watch: only the summary line
    def stage(self, name: str, detail: str = "") -> None:
        if self.full:
            super().stage(name, detail)

    def finished(
        self, name: str, seconds: float, detail: str = "", records: int | None = None
    ) -> None:
        if self.full:
            super().finished(name, seconds, detail, records)

    def batch(self, number: int, result: Any) -> None:
        self.stop()
        self._idle_shown = False
        m = result.metrics
        if self.json_mode:
            click.echo(redact_secrets(dumps(m, compact=True)))
            return
        if self.quiet:
            return
        if self.full:
            render_run_summary(self, m)
            self.wrapped(f"metrics: {norm_path(result.metrics_path)}")
            verdict_line(self, m, result.status)
            return
        led = m.get("ledger") or {}
        inc = m.get("incremental") or {}
        style = {"pass": "green", "warn": "yellow"}.get(result.status, "red")
        self.line(
            f"batch {number}: run {m.get('run_id')} ({m.get('logical_date')}), "
            f"{_input(inc)}: raw {led.get('raw', 0)} = clean "
            f"{led.get('clean', 0)} + quarantined {led.get('quarantined', 0)} + duplicates "
            f"{led.get('duplicates', 0)}; gate {result.status.upper()}"
            + ("" if result.status != "fail" else " (clean rows withheld)"),
            style,
        )
        if result.status in ("warn", "fail", "ledger_violation"):
            verdict_line(self, m, result.status, brief=True)

    def idle(self, message: str) -> None:
        self.stop()
        if not self._idle_shown and not self.json_mode and not self.full:
            self.line(message)  # a note like the batch lines, not a warning
        self._idle_shown = True


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def _input(inc: dict[str, Any]) -> str:
    """What a micro-batch read: files, or a Kafka source's offset ranges."""
    if "offsets_table" in inc:
        return f"{inc.get('records', 0)} records ({offsets_text(inc.get('partitions'))})"
    return _files(inc.get("new_files", 0))


def offsets_text(ranges: list[dict[str, Any]] | None) -> str:
    """``orders/0 [0, 12) orders/1 [0, 9)``: each partition's offsets of a batch."""
    out = []
    for r in ranges or []:
        p = r.get("partition_id", r.get("partition"))
        out.append(f"{r['topic']}/{p} [{r['from_offset']}, {r['to_offset']})")
    return " ".join(out)


#: The gate's verdict after a batch, as ``sluicegate run`` prints it (cli/console.py).
verdict_line = render_verdict


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (the batch in flight finishes); a second one stops now.

    The handler does not call ``stop.set()``: a Python handler runs on the main thread
    between two bytecodes, possibly while that thread holds the event's own lock inside
    ``Event.wait`` (the watcher waits on it between polls), and ``set()`` then waits on
    that lock forever — a watcher that never exits. The handler only writes a byte to a
    pipe, which takes no lock; a helper thread reads it and sets the event.
    """
    seen = 0
    wake_r, wake_w = os.pipe()

    def relay() -> None:
        while os.read(wake_r, 1) == b"s":
            stop.set()

    def handler(signum: int, _frame: Any) -> None:
        nonlocal seen
        seen += 1
        if seen > 1:
            raise KeyboardInterrupt
        os.write(wake_w, b"s")
        name = signal.Signals(signum).name
        os.write(2, f"{name}: finishing the current batch, then stopping\n".encode())

    relay_thread = threading.Thread(target=relay, name="sluicegate-stop-relay", daemon=True)
    relay_thread.start()
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        os.write(wake_w, b"q")  # the relay ends
        relay_thread.join(timeout=5)
        os.close(wake_w)
        os.close(wake_r)


def _nothing_new(load: Callable) -> str:
    try:
        kafka = load().contract.source.format == "kafka"
    except Exception:  # noqa: BLE001 - the message only
        kafka = False
    if kafka:
        return (
            "no new records: nothing to do (every offset up to the end of the topics is published)"
        )
    return "no new files: nothing to do (every file under the source path is processed)"


def _watched(loaded: Any) -> str:
    """What a watch polls: the landing folder, or the Kafka topics and brokers."""
    src = loaded.contract.source
    if src.format == "kafka":
        return f"Kafka topic(s) {', '.join(src.kafka.topics)} on {src.kafka.bootstrap_servers}"
    return os.path.abspath(loaded.resolve_path(src.path))


def _loader(contract: str, variables: dict[str, str], logical_date: str | None) -> Callable:
    from ..compile.contract_check import load_contract

    return lambda: load_contract(contract, variables=variables, logical_date=logical_date)


def run_incremental(
    contract: str,
    variables: dict[str, str],
    logical_date: str | None,
    engine: str | None,
    *,
    as_json: bool,
    quiet: bool,
    engine_options: dict[str, Any] | None = None,
    warn_error: bool = False,
) -> None:
    """``sluicegate run --incremental``: everything that is new now, then exit.

    Exit 0 (pass, warn, or nothing new), 1 if a batch failed its gate, 3 on a ledger
    violation — as ``sluicegate run``. On DuckDB that is one micro-batch; Spark's
    ``trigger(availableNow=True)`` may split a large backlog into several.
    """
    from ..run.watch import watch

    con = WatchConsole(quiet=quiet, json_mode=as_json, full=True)
    load = _loader(contract, variables, logical_date)
    try:
        out = watch(
            load,
            listener=con,
            stop=threading.Event(),
            engine_name=engine,
            engine_options=engine_options,
            interval=0.0,
            until_idle=True,
        )
    finally:
        con.stop()
    if out.batches == 0:
        if not as_json and not quiet:
            con.line(_nothing_new(load))
        elif as_json:
            click.echo(json.dumps({"status": "empty", "batches": 0}))
    by_status = {**EXIT_BY_STATUS, "warn": 1} if warn_error else EXIT_BY_STATUS
    worst = max((by_status.get(r.status, 1) for r in out.results), default=0)
    sys.exit(max(worst, out.exit_code))


@click.command("watch", context_settings=CONTEXT)
@contract_argument
@engine_option("Engine (default: the contract's, else duckdb). Spark runs Structured Streaming.")
@click.option(
    "--interval",
    type=click.FloatRange(0, 86_400),
    default=5.0,
    show_default=True,
    help="Seconds between polls of the landing directory (DuckDB: a file landed in between is "
    "noticed within ~0.2 s and starts the next poll at once).",
)
@click.option(
    "--max-batches",
    type=click.IntRange(1, None),
    help="Stop (exit 0) after N micro-batches that processed files.",
)
@var_option()
@logical_date_option(
    "File every batch under this date (default: the current UTC date at each batch)."
)
@json_option("One JSON line of run metrics per batch.")
@click.option("-q", "--quiet", is_flag=True, help="No per-batch lines (the exit code still tells).")
@examples(
    "sluicegate watch contract.yml --interval 10",
    "sluicegate watch contract.yml --max-batches 1 --json",
)
def watch_cmd(
    contract: str,
    engine: str | None,
    interval: float,
    max_batches: int | None,
    variables: tuple[str, ...],
    logical_date: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Poll CONTRACT's landing directory and run a micro-batch whenever files arrive.

    Each batch processes only files no earlier batch processed — one run with its own
    run id, ledger, gate and facts, committed together with the processed-file ledger, so
    a crash never loses or doubles a file. SIGINT/SIGTERM finish the current batch, then
    exit 0. A failing batch stops the watch with exit 1 (gate.on_stream_fail: stop, the
    default) or is recorded and skipped past (continue); a ledger violation exits 3.
    """
    from ..errors import SluiceError
    from ..run.watch import watch
    from .common import fail, parse_vars

    con = WatchConsole(quiet=quiet, json_mode=as_json)
    stop = threading.Event()
    try:
        with stop_on_signals(stop):
            load = _loader(contract, parse_vars(variables), logical_date)
            if not quiet and not as_json:
                loaded = load()
                src = _watched(loaded)
                con.line(f"watching {src} every {interval:g}s (Ctrl-C stops after the batch)")
            out = watch(
                load,
                listener=con,
                stop=stop,
                engine_name=engine,
                interval=interval,
                max_batches=max_batches,
            )
    except SluiceError as exc:
        con.stop()
        fail(exc, as_json=as_json)
    finally:
        con.stop()
    if not quiet and not as_json:
        why = {
            "stopped": "stopped",
            "max_batches": f"reached --max-batches {max_batches}",
            "gate_failed": "a batch failed its gate (gate.on_stream_fail: stop)",
            "ledger_violation": "a batch violated the ledger (nothing of it was published)",
        }.get(out.reason, out.reason)
        failed = f", {out.failed} failed" if out.failed else ""
        con.line(f"watch ended: {why}; {out.batches} batches{failed}")
    sys.exit(out.exit_code)
