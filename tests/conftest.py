"""Shared fixtures: contract files in temp folders, a CLI runner, one SparkSession per run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
# every DuckDB render in the suite (and in the CLI it starts) checks that rendering left
# its tree as it was: sluicegate renders without sqlglot's copy (compile/render.py)
os.environ["SLUICEGATE_VERIFY_RENDER"] = "1"
SLUICEGATE = [sys.executable, "-m", "sluicegate.cli.main"]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def copy_orders_example(dest: Path) -> Path:
    """A private copy of ``examples/orders`` at ``dest`` (returned): contract and data,
    without a warehouse or run metrics a local ``sluicegate run`` of the example left."""
    shutil.copytree(
        REPO / "examples/orders", dest, ignore=shutil.ignore_patterns("*.duckdb*", "*.runs")
    )
    return dest


def write_ndjson(path: Path, rows: list) -> Path:
    """Rows are dicts (serialised) or raw strings (written as they are)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run the CLI in a subprocess, as a user would."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(
        [*SLUICEGATE, *args], cwd=cwd, capture_output=True, text=True, env=e, timeout=600
    )


def run_json_script(script: str, *args: str, env: dict | None = None, timeout: float = 300) -> dict:
    """Run ``python -c script args`` from the repository in its own process (its own JVM
    when it starts Spark) and return the JSON object on its last line of stdout."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def record_calls(
    monkeypatch: pytest.MonkeyPatch, owner: type, name: str, note: Callable[..., Any]
) -> list:
    """Wrap the method ``owner.name`` for one test: each call first appends what
    ``note(*args, **kwargs)`` returns (unless None) to the list returned here, then runs
    the real method. How a test sees what an engine asked for without changing it."""
    seen: list = []
    real = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        item = note(*args, **kwargs)
        if item is not None:
            seen.append(item)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen


def run_cli_paused(
    args: list[str], point: str, action, cwd: Path, seconds: float = 3
) -> subprocess.CompletedProcess:  # noqa: ANN001
    """Run the CLI, pause it at checkpoint ``point`` (sluicegate/faults.py), run
    ``action()`` while it waits there, then let it finish and return its result."""
    marker = cwd / f"paused-{point.replace(':', '-')}"
    marker.unlink(missing_ok=True)
    env = dict(os.environ, SLUICEGATE_PAUSE=f"{point}:{seconds}", SLUICEGATE_PAUSE_FILE=str(marker))
    proc = subprocess.Popen(
        [*SLUICEGATE, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), f"the run never reached {point}: {proc.communicate(timeout=300)}"
    action()
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture
def tmp_write(tmp_path: Path):
    def _w(name: str, text: str) -> Path:
        return write(tmp_path / name, text)

    return _w


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test run (started only when a test asks)."""
    from pyspark.sql import SparkSession

    from sluicegate.engines.spark_jars import lakehouse_config
    from sluicegate.engines.spark_session import local_defaults

    builder = SparkSession.builder
    # Delta's jars (on the class path, as a local session sluicegate starts has them),
    # its extension and catalog
    for k, v in lakehouse_config({}, local=True).items():
        builder = builder.config(k, v)
    # The product's local defaults (a 4 GiB driver heap instead of Spark's 1 GiB, its GC
    # and JIT options): ~150 Spark tests share this JVM, and with 1 GiB a Delta publish
    # late in the CI run stalled past the 420 s per-test timeout.
    for k, v in local_defaults("local[2]", {"spark.sql.shuffle.partitions": "2"}).items():
        builder = builder.config(k, v)
    s = (
        builder.master("local[2]")
        .appName("sluicegate-tests")
        .config("spark.sql.ansi.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield s
    s.stop()


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL 15 server for the whole test run (tests/servers/postgres.py),
    started on a free loopback port when a test first asks, stopped and removed at the end."""
    from tests.servers.postgres import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="session")
def s3_server():
    """One real S3 API (moto's server mode, tests/servers/s3.py) for the whole test run,
    on a free loopback port, started when a test first asks and stopped at the end."""
    from tests.servers.s3 import S3Server

    with S3Server() as server:
        yield server


SPARK_UNVERIFIED_REASON = (
    "not yet seen passing to the end on the Delta-backed Spark engine on this project's "
    "two-core machine (a Spark run of it takes longer than the session that wrote it had): "
    "a failure is reported as XFAIL, a pass as XPASS, until it is"
)

#: Spark tests (node id prefixes) not yet seen passing since Spark stores Delta tables.
#: Every other Spark test has passed on the current code and fails the build if it breaks;
#: remove an entry once its test has passed (``pytest --runxfail <node id>``). Empty since
#: 2026-12-02: the last eleven (cluster, crash, stream, DLQ lifecycle, export read by
#: Spark) passed with ``--runxfail`` in 899 s, ten of them also in a fresh-clone CI run.
SPARK_UNVERIFIED: tuple[str, ...] = ()


#: Spark test modules that start Spark *processes* of their own (a CLI run, a killed and
#: restarted watch, a cluster, a Kafka stream): each pays a JVM start per process and
#: takes 1-4.5 minutes (all of them ~1,200 s of the ~2,500 s the Spark tests took on
#: 2026-12-04). They run last, in this order, so that a slow host's time budget cuts
#: these rather than the cheaper in-session proofs (differential, ledger, DLQ, model).
SPARK_LAST: tuple[str, ...] = (
    "tests/bench/test_bench_tiny.py",
    "tests/engines/spark/test_spark_cluster.py",
    "tests/engines/spark/test_spark_crash.py",
    "tests/engines/spark/test_s3_spark.py",
    "tests/engines/spark/test_stream_spark.py",
    "tests/kafka/test_kafka_spark.py",
)


def _spark_rank(item: pytest.Item) -> int:
    """0 for every test but the Spark tests of SPARK_LAST's modules: 1, 2, ... in its order."""
    if item.get_closest_marker("spark") is None:
        return 0
    path = item.nodeid.split("::", 1)[0]
    return SPARK_LAST.index(path) + 1 if path in SPARK_LAST else 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Only the Spark tests listed in SPARK_UNVERIFIED are reported as XFAIL/XPASS; the
    modules of SPARK_LAST run last (a stable sort: every other test keeps its place)."""
    for item in items:
        if item.get_closest_marker("spark") is None:
            continue
        if any(item.nodeid.startswith(prefix) for prefix in SPARK_UNVERIFIED):
            item.add_marker(pytest.mark.xfail(strict=False, reason=SPARK_UNVERIFIED_REASON))
    items.sort(key=_spark_rank)


#: Wall-clock seconds the Spark tests of one pytest run may take before the rest are
#: skipped (with this reason, listed by ``-rs``): CI has 90 minutes for everything on two
#: cores, and a Spark test on a loaded machine can take ten times its idle time.
SPARK_BUDGET_S = float(os.environ.get("SLUICEGATE_SPARK_BUDGET_S", "1800"))
#: A clock time (seconds since the epoch) after which no Spark test starts: ``make test``
#: sets it 65 minutes after it began, so a slow first phase leaves the Spark phase less
#: time and the whole command (then Flink, Dagster, Prefect) still ends inside 90.
SPARK_DEADLINE = float(os.environ.get("SLUICEGATE_SPARK_DEADLINE") or "inf")
_spark_started: list[float] = []
_spark_broken: list[str] = []  # the node id of a Spark test that hit pytest's timeout


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # noqa: ARG001
    """Remember a Spark test that timed out: pytest-timeout interrupts a Py4J call
    mid-answer, after which every later call on the shared session reads a stale reply
    (e.g. ``Method dropTempView does not exist``). Later Spark tests are skipped with
    that reason instead of failing with misleading errors; the timed-out test still fails."""
    outcome = yield
    report = outcome.get_result()
    if (
        item.get_closest_marker("spark") is not None
        and report.failed
        and "Timeout (>" in str(report.longrepr)
        and not _spark_broken
    ):
        _spark_broken.append(item.nodeid)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip the remaining Spark tests once the run's Spark budget is spent."""
    if item.get_closest_marker("spark") is None:
        return
    now = time.monotonic()
    if not _spark_started:
        _spark_started.append(now)
    if _spark_broken:
        pytest.skip(
            f"the shared SparkSession is unusable: {_spark_broken[0]} timed out inside a "
            "call to the JVM (its Py4J connection then answers the wrong calls)"
        )
    spent = now - _spark_started[0]
    if spent > SPARK_BUDGET_S:
        pytest.skip(
            f"Spark time budget spent ({spent:.0f} s > SLUICEGATE_SPARK_BUDGET_S="
            f"{SPARK_BUDGET_S:.0f}); run this test alone or raise the budget"
        )
    if time.time() > SPARK_DEADLINE:
        pytest.skip(
            f"past SLUICEGATE_SPARK_DEADLINE ({SPARK_DEADLINE:.0f}, set by `make test` 65 "
            "minutes after it began); run this test alone"
        )
