"""A command imports what it uses, not what the other commands use.

Every ``sluicegate`` process pays for its imports before it does anything (issue 22: ~1 s
of a small run's CPU). The command line imports each subcommand's module when that
command runs (cli/lazy.py), rich when something is drawn with it (cli/console.py), and the
heavy libraries where they are used. These tests run the real entry point with
``python -X importtime`` — which logs every module the process imports, whoever imports
it — and fail when a module a command does not need comes back into its import graph.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, copy_orders_example

#: The other commands' modules: ``run``, ``compile`` and ``validate`` live in cli/main.py.
OTHER_COMMANDS = {
    f"sluicegate.cli.{m}"
    for m in (
        "authoring_cmd",
        "dlq_cmd",
        "dlq_history_cmd",
        "facts_cmd",
        "ledger_cmd",
        "report_cmd",
        "schema_cmd",
        "serve_cmd",
        "snapshot_cmd",
        "watch_cmd",
        "live",
    )
}

#: Drivers and data libraries an embedded run of an NDJSON feed has no use for.
NOT_FOR_AN_EMBEDDED_RUN = {
    "pyarrow",
    "pandas",
    "polars",
    "pyspark",
    "py4j",
    "deltalake",
    "pyiceberg",
    "psycopg",
    "confluent_kafka",
    "boto3",
}


def imported(args: list[str], cwd: Path) -> tuple[set[str], subprocess.CompletedProcess]:
    """Every module the ``sluicegate`` process with ``args`` imported (from -X importtime)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sluicegate.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return names, proc


def top(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def test_help_imports_no_contract_sql_or_rendering_library():
    names, proc = imported(["--help"], REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "click" in names and "sluicegate.cli.common" in names  # the log is read
    assert top(names) & {"pydantic", "sqlglot", "rich", "ruamel", "duckdb", "numpy"} == set()


def test_compile_imports_neither_rich_nor_an_engine_nor_the_other_commands(tmp_path):
    root = copy_orders_example(tmp_path / "orders")
    names, proc = imported(["compile", "contract.yml"], root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sluicegate.compile.plan" in names and "sqlglot" in names  # the log is read
    assert top(names) & {"rich", "duckdb", "numpy", *NOT_FOR_AN_EMBEDDED_RUN} == set()
    assert names & OTHER_COMMANDS == set()
    # the optimizer is for marts only, and this contract has none
    assert "sqlglot.optimizer.qualify" not in names


def test_a_json_run_imports_no_rich_no_other_command_and_no_other_driver(tmp_path):
    root = copy_orders_example(tmp_path / "orders")
    names, proc = imported(["run", "contract.yml", "--json"], root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"status": "warn"' in proc.stdout  # it ran: the sample is mostly bad on purpose
    assert "duckdb" in names and "sluicegate.run.pipeline" in names  # the log is read
    assert top(names) & {"rich", *NOT_FOR_AN_EMBEDDED_RUN} == set()
    assert names & OTHER_COMMANDS == set()


def test_the_command_line_collects_less_and_freezes_its_heap_the_library_does_not():
    """cli/process.py: the entry point sets the young-generation threshold and freezes
    the heap before exit (the collections at exit then skip it); importing and using
    the library changes neither."""
    probe = (
        "import atexit, gc, runpy, sys\n"
        "import sluicegate.api\n"
        "print('library', gc.get_threshold()[0], gc.get_freeze_count(), flush=True)\n"
        "atexit.register(lambda: print('cli', gc.get_threshold()[0],"
        " gc.get_freeze_count() > 0, flush=True))\n"
        "sys.argv = ['sluicegate', '--version']\n"
        "runpy.run_module('sluicegate.cli.main', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert "library 700 0" in lines  # Python's default, nothing frozen
    assert "cli 10000 True" in lines
