"""The SparkSession a run uses: built or reused, with the settings that make Spark agree.

Spark and DuckDB disagree by default on casts, time zones and timestamp types; a run pins
them on its own session (``PINNED``) so the same contract gives the same rows on both:

* ``spark.sql.ansi.enabled=true`` — overflow and bad casts raise instead of wrapping; the
  compiler only ever uses TRY casts behind a regex guard, so nothing raises on data.
* ``spark.sql.session.timeZone=UTC`` and ``spark.sql.timestampType=TIMESTAMP_NTZ`` — a
  declared TIMESTAMP is a wall-clock value, as DuckDB's TIMESTAMP is; no conversion to the
  driver's local zone on collect or write.
* Parquet written with TIMESTAMP_MICROS and CORRECTED calendar rebasing, so DuckDB,
  pyarrow and Spark read the same instants back.
* ``spark.sql.sources.partitionOverwriteMode=dynamic`` — a rerun replaces only the
  partitions of its logical date.

Where the master comes from, first match wins: the ``master``/``remote`` arguments (the
CLI's ``--spark-master`` / ``--spark-remote``), the environment (``SLUICEGATE_SPARK_MASTER``
/ ``SLUICEGATE_SPARK_REMOTE``), the contract's ``engine:`` section, then ``local[*]``.
The pipeline passes the CLI and contract values already merged in that order; this
module only adds the environment and the default.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import EngineUnavailable, UsageError
from .jvm_options import merge_java_options
from .spark_cds import driver_flags
from .spark_jars import DELTA_EXTENSION, has_delta, lakehouse_config

DEFAULT_MASTER = "local[*]"
ENV_MASTER = "SLUICEGATE_SPARK_MASTER"
ENV_REMOTE = "SLUICEGATE_SPARK_REMOTE"
INSTALL_HINT = "pip install 'sluicegate[spark]'  (PySpark 4.x; needs Java 17 on PATH or JAVA_HOME)"

PINNED: dict[str, str] = {
    "spark.sql.ansi.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
    "spark.sql.mapKeyDedupPolicy": "LAST_WIN",
    "spark.sql.variant.allowDuplicateKeys": "true",
}
"""Runtime SQL settings every sluicegate session carries (they win over user options)."""

JAVA_OPTIONS = "spark.driver.extraJavaOptions"

QUIET: dict[str, str] = {"spark.ui.showConsoleProgress": "false"}
"""Static settings for a session sluicegate builds itself: logs stay clean (core never prints)."""

LOCAL_JVM = (
    "-XX:+UseParallelGC "
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
    "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000"
)
"""HotSpot flags for a local-mode driver (which is also the executor).

* JIT thresholds: only code that runs very often (the per-row loops of generated code)
  reaches the optimizing C2 compiler; planner code stays on C1. A run issues ~100
  queries, each with freshly generated classes, and with HotSpot's default thresholds C2
  compiled most of them and the planner besides: 51 of 107 CPU s of a 5,000-line retail
  run went to the JIT compiler threads; 63 CPU s in all with these thresholds, and the
  1M-line reader no slower (``-XX:TieredStopAtLevel=1``, C1 only, made it 1.8x slower).
* The parallel (throughput) collector: a run is a batch job, and G1's concurrent marking
  and write barriers cost a 1M-line run ~15 CPU s more (171 vs 155 CPU s).

See docs/spark.md ("Local mode defaults") and benchmarks/README.md (``sluicegate-spark``)."""

LOCAL_DRIVER_MEMORY = 4 << 30
"""Heap of a local-mode driver (it is also the executor) when the run's input size is
not known before it starts (a watch, a micro-batch, a table source): Spark's 1g default
made G1 collect all the time once the typed relation was cached (34 CPU s of a 1M-line
run, 9 CPU s with 4g). Capped at half of the machine's memory."""

LOCAL_HEAP_FLOOR = 1536 << 20
"""The smallest heap a local driver gets when the input's size is known: 1M-line retail
runs (230 MB) took the same time with 2g as with 4g and peaked ~400 MiB lower; 5M lines
(1.15 GB) 272.6 s / 3.1 GiB with 2g against 267.3 s / 5.1 GiB with 4g. With 1536m a
1M-line run was as fast again and peaked 250–400 MiB lower than with 2g, first runs and
next days' alike; 1g made it 20 % slower, collecting (benchmarks/RESULTS.md)."""

HEAP_PER_INPUT_BYTE = 2
"""A known input gets a heap of twice its bytes (between :data:`LOCAL_HEAP_FLOOR` and
:data:`LOCAL_DRIVER_MEMORY`): a 10M-line input (2.3 GB) ran a 2g driver out of heap and
finished in 4g; 2g held 5M lines (1.15 GB), so twice the bytes keeps ~15 % above both."""


def driver_heap(input_bytes: int | None, ram: int) -> int:
    """Bytes of heap for a local driver on a machine with ``ram`` bytes, reading
    ``input_bytes`` (None: not known before the session starts).

    >>> GiB = 1 << 30
    >>> [driver_heap(n, 24 * GiB) / GiB for n in (None, 230_000_000, 1_600 << 20, 3 * GiB)]
    [4.0, 1.5, 3.125, 4.0]
    >>> driver_heap(230_000_000, 2 * GiB) / GiB  # at most half the RAM, at least 1g
    1.0
    """
    most = max(1 << 30, min(LOCAL_DRIVER_MEMORY, ram // 2))
    if input_bytes is None:
        return most
    return min(most, max(LOCAL_HEAP_FLOOR, HEAP_PER_INPUT_BYTE * input_bytes))


LOCAL_YOUNG_MAX = 512 << 20
"""Largest young generation of a local-mode driver (``-XX:MaxNewSize``, at most a third
of its heap). The parallel collector grows the young generation to a third of the heap
(1.3 GiB of 4g) and every page it touched stays resident: a 1M-line run peaked at
3.5 GiB. A run's young objects are short-lived rows and plans, so a smaller young
generation costs no time: 1M-line runs alternating, 92.1 / 96.1 s and 3,525 / 3,480 MiB
as before, 91.9 / 96.4 s and 3,247 / 3,152 MiB with 512m (benchmarks/RESULTS.md)."""


def young_flag(heap: int) -> str:
    """``-XX:MaxNewSize`` for a driver of ``heap`` bytes: :data:`LOCAL_YOUNG_MAX`, or a
    third of a smaller heap (the collector's own share), in whole MiB.

    >>> young_flag(4 << 30), young_flag(1 << 30)
    ('-XX:MaxNewSize=512m', '-XX:MaxNewSize=341m')
    """
    return f"-XX:MaxNewSize={min(LOCAL_YOUNG_MAX, heap // 3) >> 20}m"


def local_cores(master: str | None) -> int | None:
    """Cores of a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master; None otherwise.

    >>> local_cores("local[2]"), local_cores("local"), local_cores("spark://h:7077")
    (2, 1, None)
    """
    m = re.fullmatch(r"local(?:\[(\*|[0-9]+)(?:,[0-9]+)?\])?", (master or "").strip())
    if m is None:
        return None
    if m.group(1) == "*":
        return os.cpu_count() or 1
    return max(1, int(m.group(1) or 1))


def local_defaults(
    master: str | None,
    options: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
    *,
    input_bytes: int | None = None,
) -> dict[str, str]:
    """Settings for a local-mode session sluicegate builds, where the user set none.

    * ``spark.sql.shuffle.partitions``: 2 per core instead of 200. A run's shuffles are
      small on one machine, and 200 tasks per shuffle over ~100 queries made a
      5,000-line run launch 2,200 tasks (20 CPU s of task overhead; 8.6 CPU s with 4).
    * ``spark.sql.adaptive.enabled``: false. Adaptive execution re-plans each query at
      every shuffle to coalesce or split partitions and switch join strategies; with 2
      partitions per core on one machine there is nothing to coalesce, and the re-planning
      of a run's ~100 queries cost ~6 % of a 1M-line run (benchmarks/RESULTS.md).
    * ``spark.sql.inMemoryColumnarStorage.compressed``: false. A run caches its typed,
      ranked and routed relations in the driver's own JVM; compressing the cached columns
      cost ~2.3 s of a 1M-line typed relation's 15 s and saved 14 % of its memory (48 vs
      56 MiB: string columns barely compress), ~5 % of a whole 1M-line run.
    * ``spark.driver.memory``: sized by the run's ``input_bytes`` when they are known
      before the session starts (:func:`driver_heap`), :data:`LOCAL_DRIVER_MEMORY`
      otherwise; at most half the RAM.
    * ``spark.driver.extraJavaOptions``: the log4j2 file, :data:`LOCAL_JVM`, the young
      generation's cap for the heap the driver gets (:func:`young_flag`) and the
      class-data-sharing archive when there is one (``spark_cds``).

    Anything in ``options`` (the contract's ``engine.options``) wins; so does
    ``SPARK_DRIVER_MEMORY`` in the environment. The contract's own
    ``spark.driver.extraJavaOptions`` is added to ours, flag by flag, its own winning
    (``jvm_options.merge_java_options``): setting one flag keeps the others.

    >>> local_defaults("local[2]", {}, {})["spark.sql.shuffle.partitions"]
    '4'
    >>> local_defaults("spark://h:7077", {}, {})
    {}
    """
    cores = local_cores(master)
    if cores is None:
        return {}
    env = os.environ if environ is None else environ
    out = {
        "spark.sql.shuffle.partitions": str(2 * cores),
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
    }
    if not env.get("SPARK_DRIVER_MEMORY"):
        try:
            ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
            ram = 2 * LOCAL_DRIVER_MEMORY
        out["spark.driver.memory"] = f"{driver_heap(input_bytes, ram) >> 20}m"
    heap_setting = options.get(
        "spark.driver.memory", env.get("SPARK_DRIVER_MEMORY") or out.get("spark.driver.memory")
    )
    heap = jvm_size(str(heap_setting or ""), 1 << 30)  # Spark's own default is 1g
    java = quiet_driver_options(env)[JAVA_OPTIONS]
    ours = " ".join(f for f in (java, LOCAL_JVM, young_flag(heap), driver_flags(env)) if f)
    out = {k: v for k, v in out.items() if k not in options}
    out[JAVA_OPTIONS] = merge_java_options(ours, str(options.get(JAVA_OPTIONS, "")))
    return out


LOG4J2 = """\
# sluicegate: Spark's driver logs errors only (a run's own report is the metrics JSON),
# each on one line: the message and its exception's first line, no stack frames
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m@EXCEPTION@%n
appender.console.layout.alwaysWriteExceptions = false
"""

#: how an error's exception is printed: its first line, or under ``--debug`` the whole
#: Java stack trace (log4j2 pattern fragments; the file is read as ISO-8859-1: ASCII only)
LOG4J2_EXCEPTION = {False: "%notEmpty{: %ex{1}{separator()}}", True: "%notEmpty{%n%ex}"}


_SIZE = re.compile(r"\s*([0-9]+)\s*([kmgt]?)b?\s*", re.IGNORECASE)


def jvm_size(text: str, default: int) -> int:
    """Bytes of a JVM memory setting (``4g``, ``512m``, ``2048`` in MiB as Spark reads it).

    >>> jvm_size("4g", 0), jvm_size("512M", 0), jvm_size("2048", 0), jvm_size("lots", 7)
    (4294967296, 536870912, 2147483648, 7)
    """
    m = _SIZE.fullmatch(text or "")
    if m is None:
        return default
    shift = {"k": 10, "m": 20, "g": 30, "t": 40, "": 20}[m.group(2).lower()]
    return int(m.group(1)) << shift


def heap_per_task(spark: Any, master: str | None) -> int:
    """The heap one task may count on: a local JVM's own maximum heap over its cores; on a
    cluster, ``spark.executor.memory`` (Spark's default 1g) over ``spark.executor.cores``
    (1 unless set). What the whole-file reader sizes itself by (spark_lines.py)."""
    cores = local_cores(master)
    if cores is not None:
        try:
            heap = int(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())
        except Exception:  # noqa: BLE001 - no JVM gateway (Spark Connect): the setting
            heap = jvm_size(spark.conf.get("spark.driver.memory", "1g"), 1 << 30)
        return heap // cores
    heap = jvm_size(spark.conf.get("spark.executor.memory", "1g"), 1 << 30)
    slots = str(spark.conf.get("spark.executor.cores", "1")).strip()
    return heap // max(1, int(slots) if slots.isdigit() else 1)


def quiet_driver_options(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A log4j2 file that keeps the driver to errors (Spark's default prints WARN lines).

    An error is one line — Spark's message and its exception's first line — because a
    user reads sluicegate's own one-line error, not the JVM's: a task out of heap used to
    print ~60 lines of Java stack frames before it. ``SLUICEGATE_DEBUG`` (``--debug``)
    keeps the whole stack traces, as it keeps Python's."""
    env = os.environ if environ is None else environ
    debug = env.get("SLUICEGATE_DEBUG", "") not in ("", "0")
    text = LOG4J2.replace("@EXCEPTION@", LOG4J2_EXCEPTION[debug])
    name = f"sluicegate-log4j2-{os.getuid()}{'-debug' if debug else ''}.properties"
    path = os.path.join(tempfile.gettempdir(), name)
    try:
        with open(path, encoding="utf-8") as f:
            current = f.read()
    except OSError:
        current = None
    if current != text:
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return {JAVA_OPTIONS: f"-Dlog4j2.configurationFile=file:{path}"}


@dataclass(frozen=True)
class SessionSpec:
    """Where and how to connect: resolved from arguments, environment and defaults."""

    master: str | None = None
    remote: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    app_name: str = "sluicegate"

    @property
    def target(self) -> str:
        return f"Spark Connect {self.remote}" if self.remote else f"master {self.master}"


def resolve_spec(
    master: str | None = None,
    remote: str | None = None,
    options: Mapping[str, str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    contract_master: str | None = None,
    contract_remote: str | None = None,
) -> SessionSpec:
    """Merge explicit values, the environment, the contract and the default, in that order.

    >>> resolve_spec(environ={}).master
    'local[*]'
    >>> resolve_spec("local[2]", environ={"SLUICEGATE_SPARK_MASTER": "spark://h:7077"}).master
    'local[2]'
    """
    env = os.environ if environ is None else environ
    if master and remote:
        raise UsageError(
            "choose either a Spark master or a Spark Connect remote, not both",
            hint="--spark-master spark://host:7077  or  --spark-remote sc://host:15002",
        )
    if not master and not remote:
        master = env.get(ENV_MASTER) or None
        remote = env.get(ENV_REMOTE) or None
        if master and remote:
            raise UsageError(f"both {ENV_MASTER} and {ENV_REMOTE} are set; unset one")
    if not master and not remote:
        master, remote = contract_master, contract_remote
    if not master and not remote:
        master = DEFAULT_MASTER
    if remote and not remote.startswith("sc://"):
        raise UsageError(f"a Spark Connect remote looks like sc://host:port, not '{remote}'")
    return SessionSpec(master=master, remote=remote, options=dict(options or {}))


def java_available() -> bool:
    """A JVM is needed for a local or cluster driver (not for a Spark Connect client)."""
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return True
    return shutil.which("java") is not None


def open_session(spec: SessionSpec, *, input_bytes: int | None = None):  # noqa: ANN201
    """A session for one engine: reuse the process's active session when there is one.

    ``input_bytes``: what the run will read, when known before it starts; a local driver
    sluicegate starts gets a heap sized by it (:func:`driver_heap`).

    Reuse means ``newSession()``: the same SparkContext (one JVM, one set of executors) but
    private temporary views and SQL settings, so a run's ``_sg_*`` views and pinned
    settings never leak into the caller's session. Returns ``(session, owned)``; an owned
    session is stopped when the engine closes.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - guarded by open_engine too
        raise EngineUnavailable(f"PySpark is not installed ({exc})", hint=INSTALL_HINT) from None
    if spec.remote:
        return _connect(SparkSession, spec), True
    active = SparkSession.getActiveSession()
    if active is not None:
        current = active.sparkContext.master
        explicit = spec.master not in (None, DEFAULT_MASTER)
        if explicit and current != spec.master:
            raise UsageError(
                f"this process already runs a SparkSession on {current}; "
                f"cannot also connect to {spec.master}",
                hint="run sluicegate in its own process for another master",
            )
        if not has_delta(active):
            raise EngineUnavailable(
                "this process's SparkSession has no Delta Lake support, and sluicegate's "
                "tables are Delta tables",
                hint=f"start it with spark.sql.extensions={DELTA_EXTENSION} and the "
                "delta-spark jar (make jars fetches it into .jars/spark)",
            )
        session = active.newSession()
        _configure(session, spec.options)
        return session, False
    if not java_available():
        raise EngineUnavailable(
            "the Spark engine needs Java 17, and no java was found (JAVA_HOME or PATH)",
            hint="install a JDK 17 (e.g. apt-get install openjdk-17-jre-headless) and set "
            "JAVA_HOME; " + INSTALL_HINT,
        )
    master = spec.master or DEFAULT_MASTER
    builder = SparkSession.builder.master(master).appName(spec.app_name)
    local = local_defaults(master, spec.options, input_bytes=input_bytes)
    driver = quiet_driver_options()
    driver[JAVA_OPTIONS] = merge_java_options(
        driver[JAVA_OPTIONS], str(spec.options.get(JAVA_OPTIONS, ""))
    )
    for k, v in {
        **QUIET,
        **dict(spec.options),
        **driver,
        **local,
        **lakehouse_config(spec.options, local=local_cores(master) is not None),
        **PINNED,
    }.items():
        builder = builder.config(k, v)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - JVM start-up errors have many types
        raise EngineUnavailable(
            f"could not start Spark on {spec.master}: {str(exc).strip().splitlines()[0]}",
            hint=INSTALL_HINT,
        ) from None
    session.sparkContext.setLogLevel("ERROR")
    _configure(session, spec.options)
    return session, True


def _connect(session_cls, spec: SessionSpec):  # noqa: ANN001, ANN202
    try:
        builder = session_cls.builder.remote(spec.remote).appName(spec.app_name)
        for k, v in dict(spec.options).items():
            builder = builder.config(k, v)
        session = builder.getOrCreate()
    except ImportError as exc:
        raise EngineUnavailable(
            f"the Spark Connect client is not installed ({exc})",
            hint="pip install 'pyspark[connect]'  (grpcio, grpcio-status, googleapis-common-protos)",
        ) from None
    except Exception as exc:  # noqa: BLE001 - gRPC errors have many types
        raise EngineUnavailable(
            f"could not connect to Spark Connect at {spec.remote}: "
            f"{str(exc).strip().splitlines()[0]}",
            hint="start the server (sbin/start-connect-server.sh) or check the address",
        ) from None
    _configure(session, {})
    return session


def _configure(session, options: Mapping[str, str]) -> None:  # noqa: ANN001
    """Apply user runtime options, then the pinned settings (pinned ones win)."""
    for k, v in {**dict(options), **PINNED}.items():
        try:
            session.conf.set(k, v)
        except Exception:  # noqa: BLE001, S112 - a static setting on a reused session
            if k in PINNED:
                raise
