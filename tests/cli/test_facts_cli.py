"""``sluicegate facts latest|trend|attention``: as an operator meets it after a failing run,
as JSON for scripts, as SQL for another warehouse, and while a run is going."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from sluicegate.cli.facts_cmd import DECIMAL_TEXT
from sluicegate.cli.present import number
from tests.conftest import SLUICEGATE, run_cli
from tests.engines.test_publish import feed, govern_contract, run, write_rows

pytestmark = pytest.mark.duckdb


@pytest.fixture
def failed(tmp_path: Path) -> Path:
    """A contract whose run just failed its gate (40% quarantined > 30%)."""
    c = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(10, bad=4))
    assert run(c, "2024-01-01").exit_code == 1
    return c


def test_attention_after_a_failing_run_shows_owner_threshold_and_metric(tmp_path):
    failed = govern_contract(tmp_path)
    write_rows(tmp_path / "data.json", feed(10, bad=4))
    ran = run_cli("run", str(failed), "--logical-date", "2024-01-01")
    assert ran.returncode == 1 and "gate FAILED" in ran.stderr
    r = run_cli("facts", "attention", str(failed), env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[1].split()
    assert header[:8] == [
        "source",
        "check",
        "status",
        "severity",
        "owner",
        "metric",
        "warn_above",
        "fail_above",
    ]
    rows = {ln.split()[1]: ln.split() for ln in lines[2:] if ln.strip()}
    assert rows["quarantine_share"][2:8] == [  # shares as percentages for people
        "fail",
        "error",
        "team@example.com",
        "40%",
        "10%",
        "30%",
    ]
    assert rows["rule:a_pos"][2:8] == ["fail", "error", "rules@example.com", "40%", "10%", "30%"]
    # the DLQ rows waiting, with the owner of the rule that quarantined them
    assert rows["dlq:a_pos"][2:6] == ["waiting", "error", "rules@example.com", "4"]


def test_attention_json_is_one_document_matching_an_independent_query(failed, tmp_path):
    r = run_cli("facts", "attention", str(failed), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    got = {row["check_id"]: row for row in doc["rows"]}
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    want = {
        c: (s, o, number(m), number(w), number(f))  # canonical decimal text → JSON numbers
        for c, s, o, m, w, f in con.execute(
            "SELECT check_id, status, owner, metric, threshold_warn, threshold_fail FROM facts "
            "WHERE status IN ('warn', 'fail')"
        ).fetchall()
    }
    waiting = con.execute(
        "SELECT _reason, count(*) FROM dlq WHERE _dlq_status IN ('quarantined', 'fixed') GROUP BY 1"
    ).fetchall()
    con.close()
    facts = {k: v for k, v in got.items() if v["source"] == "fact"}
    assert {
        k: (v["status"], v["owner"], v["metric"], v["threshold_warn"], v["threshold_fail"])
        for k, v in facts.items()
    } == want
    assert {k[4:]: int(v["metric"]) for k, v in got.items() if v["source"] == "dlq"} == dict(
        waiting
    )


def test_latest_and_trend(failed, tmp_path):
    write_rows(tmp_path / "data.json", feed(10, bad=0))
    assert run(failed, "2024-01-02").exit_code == 0
    latest = json.loads(run_cli("facts", "latest", str(failed), "--json").stdout)
    qs = {r["check_id"]: r for r in latest["rows"]}["quarantine_share"]
    assert (qs["status"], qs["logical_date"]) == ("pass", "2024-01-02")
    trend = json.loads(
        run_cli("facts", "trend", str(failed), "--check", "quarantine_share", "--json").stdout
    )
    assert [(r["logical_date"], r["metric"], r["status"]) for r in trend["rows"]] == [
        ("2024-01-01", 0.4, "fail"),
        ("2024-01-02", 0, "pass"),
    ]
    one = json.loads(
        run_cli(
            "facts", "trend", str(failed), "--check", "quarantine_share", "--runs", "1", "--json"
        ).stdout
    )
    assert [r["logical_date"] for r in one["rows"]] == ["2024-01-02"]


@pytest.mark.parametrize("query", ["latest", "trend", "attention"])
def test_printed_duckdb_sql_runs_and_returns_what_the_command_shows(failed, tmp_path, query):
    sql = run_cli("facts", query, str(failed), "--sql", "--dialect", "duckdb")
    assert sql.returncode == 0, sql.stderr
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    cur = con.execute(sql.stdout)
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    con.close()
    shown = json.loads(run_cli("facts", query, str(failed), "--json").stdout)["rows"]
    printed = [{k: number(v) if k in DECIMAL_TEXT else v for k, v in r.items()} for r in rows]
    assert json.loads(json.dumps(printed, default=str)) == [
        {
            k: (v.replace("T", " ") if isinstance(v, str) and k.endswith("_at") else v)
            for k, v in r.items()
        }
        for r in shown
    ]


def test_sql_for_trino_and_unknown_dialect(failed):
    r = run_cli("facts", "attention", str(failed), "--sql", "--dialect", "trino")
    assert r.returncode == 0 and "LIMIT 1000" in r.stdout and "CONCAT(" in r.stdout
    bad = run_cli("facts", "latest", str(failed), "--sql", "--dialect", "nosuch")
    assert bad.returncode == 2 and "no such SQL dialect" in bad.stderr


def test_no_warehouse_yet_is_a_clear_error(tmp_path):
    c = govern_contract(tmp_path)
    r = run_cli("facts", "latest", str(c))
    assert (
        r.returncode == 2 and "run the contract first" in r.stderr and "Traceback" not in r.stderr
    )


# -- reading while a run is going --------------------------------------------------------

RUN_SCRIPT = textwrap.dedent(
    """
    import sys
    from sluicegate.compile.contract_check import load_contract
    from sluicegate.run.pipeline import run_contract
    staging = sys.argv[3] == "staging"
    r = run_contract(load_contract(sys.argv[1], logical_date=sys.argv[2]),
                     engine_options={"staging": staging})
    sys.exit(r.exit_code)
    """
)


def paused_run(contract: Path, point: str, seconds: float, marker: Path, mode: str = "staging"):
    env = dict(os.environ, SLUICEGATE_PAUSE=f"{point}:{seconds}", SLUICEGATE_PAUSE_FILE=str(marker))
    p = subprocess.Popen(
        [sys.executable, "-c", RUN_SCRIPT, str(contract), "2024-01-02", mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return p


def facts_latest(contract: Path, wait: str = "30") -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SLUICEGATE, "facts", "latest", str(contract), "--json", "--wait", wait],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_facts_work_while_a_run_does_its_heavy_work(failed, tmp_path):
    write_rows(tmp_path / "data.json", feed(10, bad=0))
    proc = paused_run(
        failed, "after_route", 12, tmp_path / "m1"
    )  # wide: the CLI must start inside it on a loaded machine
    r = facts_latest(failed, wait="0")  # no waiting needed: the run does not hold the file
    assert proc.poll() is None  # the run was still going
    assert r.returncode == 0, r.stderr
    assert {row["logical_date"] for row in json.loads(r.stdout)["rows"]} == {"2024-01-01"}
    assert proc.wait(timeout=120) == 0


def test_facts_wait_out_the_publish_transaction(failed, tmp_path):
    write_rows(tmp_path / "data.json", feed(10, bad=0))
    proc = paused_run(failed, "publish:written", 1.5, tmp_path / "m2")
    r = facts_latest(failed)  # the file is held for the publish: the reader waits it out
    assert r.returncode == 0, r.stderr
    days = {row["logical_date"] for row in json.loads(r.stdout)["rows"]}
    assert days in ({"2024-01-01"}, {"2024-01-02"})  # before or after, never half
    assert proc.wait(timeout=120) == 0


def test_mutant_run_holding_the_warehouse_throughout_is_caught(failed, tmp_path):
    write_rows(tmp_path / "data.json", feed(10, bad=0))
    proc = paused_run(failed, "after_route", 12, tmp_path / "m3", mode="direct")
    r = facts_latest(failed, wait="0.5")
    assert r.returncode == 5 and "in use by another process" in r.stderr
    proc.wait(timeout=120)
