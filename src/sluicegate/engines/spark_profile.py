"""``run --profile`` on Spark: each engine call timed, with the JVM's CPU beside Python's.

On DuckDB every statement runs inside the Python process, so its process CPU is the
statement's CPU. A local Spark session runs in a JVM child process: Python's own CPU is
a fraction of the work. The clock therefore also reads the driver JVM's process CPU
(``OperatingSystemMXBean.getProcessCpuTime``, one py4j call) before and after each
call. With ``local[N]`` the executors are threads of that JVM, so the figure is the
whole statement's CPU; on a cluster it is the driver's share (planning, Delta logs)
and the executors' CPU is not in it. A Spark Connect session has no gateway: Python
CPU only.

Spark is lazy: a call is timed where it makes Spark work (a cached temporary table is
materialized when created, a durable one written, a fetch collected), so the time
lands on the call that caused it. ``commit`` is one entry: the table format's publish.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .base import StatementTiming

SQL_HEAD = 240  # characters of each statement kept in a profile


def jvm_cpu_clock(spark: Any) -> Callable[[], float]:
    """Seconds of CPU the driver JVM has used so far (0.0 where there is no JVM gateway).

    Read from ``/proc/<pid>/stat`` of the JVM (no py4j call per statement); where there
    is no ``/proc``, from the JVM's ``ProcessHandle``. (The management bean's
    ``getProcessCpuTime`` is not reachable through py4j on Java 17: its class is not
    exported.)"""
    try:
        jvm = spark.sparkContext._jvm  # noqa: SLF001 - py4j gateway of a classic session
        handle = jvm.java.lang.ProcessHandle.current()
        stat = Path(f"/proc/{int(handle.pid())}/stat")
    except Exception:  # noqa: BLE001 - Spark Connect: no gateway, Python CPU only
        return lambda: 0.0
    if stat.exists():
        ticks = os.sysconf("SC_CLK_TCK")

        def from_proc() -> float:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

        return from_proc
    return lambda: handle.info().totalCpuDuration().get().toNanos() / 1e9


class StatementClock:
    """Appends one :class:`StatementTiming` per timed call to ``engine.profile``."""

    def __init__(self, engine: Any, spark: Any) -> None:
        self._engine = engine
        self._jvm_cpu = jvm_cpu_clock(spark)

    @contextmanager
    def timed(self, label: Callable[[], str]) -> Iterator[None]:
        """Time the block; ``label`` (the statement's SQL, or what the call did) is only
        built when a profile is being kept."""
        if self._engine.profile is None:
            yield
            return
        wall, cpu, jvm = time.perf_counter(), time.process_time(), self._jvm_cpu()
        try:
            yield
        finally:
            self._engine.profile.append(
                StatementTiming(
                    self._engine.profile_stage,
                    round(time.perf_counter() - wall, 4),
                    round(time.process_time() - cpu + self._jvm_cpu() - jvm, 4),
                    " ".join(label().split())[:SQL_HEAD],
                )
            )
