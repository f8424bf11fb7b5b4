"""The CLI as an operator and a scheduler use it: typos caught with a suggestion (exit 2),
the DLQ listed by date and run with its source line, counts that reconcile, exit codes a
scheduler can act on, one warning channel, percentages for people."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from tests.conftest import copy_orders_example, run_cli

pytestmark = pytest.mark.duckdb
DAYS = ("2024-01-01", "2024-01-02")


@pytest.fixture(scope="module")
def orders(tmp_path_factory) -> Path:
    """The orders example run on two dates (the sample warns: 8 of 12 quarantined)."""
    root = copy_orders_example(tmp_path_factory.mktemp("operator") / "orders")
    for day in DAYS:
        r = run_cli("run", str(root / "contract.yml"), "--date", day, "-q")
        assert r.returncode == 0, r.stderr
    return root / "contract.yml"


def js(*args: str, code: int = 0) -> dict:
    r = run_cli(*args, "--json")
    assert r.returncode == code, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (
            ("facts", "trend", "{c}", "--check", "rule:non_positiv_amount"),
            "rule:non_positive_amount",
        ),
        (("facts", "trend", "{c}", "--check", "quarantine_shares"), "quarantine_share"),
        (("dlq", "list", "{c}", "--reason", "null_custmer"), "null_customer"),
        (("dlq", "list", "{c}", "--status", "quarantned"), "quarantined"),
        (("dlq", "summary", "{c}", "--reason", "unknown_custmer"), "unknown_customer"),
        (("dlq", "list", "{c}", "--date", "2024-01-03"), "2024-01-02"),
        (("dlq", "mark", "{c}", "--where", "amt = 0", "--status", "rejcted"), "rejected"),
        (("compile", "{c}", "-d", "trinoo"), "trino"),
        (("facts", "latest", "{c}", "--sql", "-d", "sparkk"), "spark"),
    ],
)
def test_typos_exit_2_with_a_suggestion_never_an_empty_result(orders, args, suggestion):
    argv = [str(orders) if a == "{c}" else a for a in args]
    r = run_cli(*argv)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout == ""  # nothing that looks like a (empty) result
    assert r.stderr.startswith("error: ")
    if suggestion:
        assert f"did you mean '{suggestion}'" in r.stderr
    doc = js(*argv, code=2)
    assert doc["errors"][0]["suggestion"] == suggestion


def test_dlq_list_shows_date_run_and_filters_by_them(orders):
    both = js("dlq", "list", str(orders), "--limit", "0")
    assert both["total"] == both["count"] == 16 and both["more"] == 0
    assert {r["_logical_date"] for r in both["rows"]} == set(DAYS)
    one = js("dlq", "list", str(orders), "--date", DAYS[1])
    assert one["total"] == 8 and {r["_logical_date"] for r in one["rows"]} == {DAYS[1]}
    (run_id,) = {r["_run_id"] for r in one["rows"]}
    by_run = js("dlq", "list", str(orders), "--run", run_id, "--reason", "null_customer")
    assert {(r["_run_id"], r["_reason"]) for r in by_run["rows"]} == {(run_id, "null_customer")}
    # the source as an operator opens it: below the source path, with its line
    assert {r["_source"] for r in one["rows"]} == {
        f"orders.json:{r['_source_line']}" for r in one["rows"]
    }
    text = run_cli("dlq", "list", str(orders), "--date", DAYS[1], env={"COLUMNS": "120"}).stdout
    assert DAYS[1] in text and run_id[:8] in text and DAYS[0] not in text.split("\n", 1)[1]
    assert "orders.json:2" in text


def test_dlq_list_has_a_default_limit_and_says_how_many_more(orders):
    doc = js("dlq", "list", str(orders), "--limit", "3")
    assert (doc["count"], doc["total"], doc["more"]) == (3, 16, 13)
    r = run_cli("dlq", "list", str(orders), "--limit", "3")
    assert r.stdout.rstrip().endswith("… 13 more (--limit 0 lists all, --json for scripts)")
    default = js("dlq", "list", str(orders))
    assert default["filters"]["limit"] == 20 and default["count"] == 16  # 16 < 20


def test_dlq_summary_counts_reconcile_with_an_independent_query(orders):
    doc = js("dlq", "summary", str(orders))
    con = duckdb.connect(str(orders.parent / "warehouse.duckdb"), read_only=True)
    want = con.execute(
        "SELECT CAST(_logical_date AS VARCHAR), _reason, _dlq_status, count(*) "
        "FROM quarantine GROUP BY ALL"
    ).fetchall()
    con.close()
    got = [(g["logical_date"], g["reason"], g["status"], g["rows"]) for g in doc["groups"]]
    assert sorted(got) == sorted(want) and doc["total"] == 16
    assert got[0][0] == DAYS[1]  # newest date first


def test_dlq_show_prints_json_without_asking(orders):
    key = js("dlq", "list", str(orders), "--limit", "1")["rows"][0]["_dlq_sk"]
    r = run_cli("dlq", "show", str(orders), key)
    assert r.returncode == 0 and json.loads(r.stdout)["row"]["_dlq_sk"] == key


def test_schedulers_get_a_non_zero_exit_when_asked(orders, tmp_path):
    c = str(copy_orders_example(tmp_path / "o") / "contract.yml")
    plain = run_cli("run", c, "--date", DAYS[0])
    assert plain.returncode == 0 and "warning: gate WARN" in plain.stderr
    strict = run_cli("run", c, "--date", DAYS[0], "--warn-error", "--json")
    assert strict.returncode == 1 and json.loads(strict.stdout)["status"] == "warn"
    assert "--warn-error" in strict.stderr
    warn = run_cli("facts", "attention", c, "--fail-on", "warn")
    assert warn.returncode == 1 and "quarantine_share warn" in warn.stderr
    assert run_cli("facts", "attention", c, "--fail-on", "fail").returncode == 0
    assert run_cli("facts", "attention", c).returncode == 0


def test_one_warning_channel_in_one_spelling(orders, tmp_path):
    c = str(copy_orders_example(tmp_path / "o") / "contract.yml")
    for extra in ((), ("--json",)):
        r = run_cli("run", c, "--date", DAYS[0], *extra)
        assert "warning: gate WARN — quarantine_share 66.67% > 5%" in r.stderr
        assert "WARNING" not in r.stdout + r.stderr and "notice:" not in r.stderr
    quiet = run_cli("run", c, "--date", DAYS[0], "-q")  # no progress, no summary: warnings only
    assert quiet.returncode == 0 and quiet.stdout == ""
    assert quiet.stderr and all(x.startswith("warning: ") for x in quiet.stderr.splitlines())


def test_human_output_shows_percentages_and_normalised_paths(orders):
    r = run_cli("facts", "latest", str(orders), env={"COLUMNS": "120"})
    assert r.returncode == 0
    assert "66.67%" in r.stdout and "0.666667" not in r.stdout
    title = r.stdout.splitlines()[0]
    assert "/../" not in title and title.endswith("warehouse.duckdb)")
    doc = js("facts", "latest", str(orders))
    qs = next(x for x in doc["rows"] if x["check_id"] == "quarantine_share")
    assert qs["metric"] == pytest.approx(0.666667) and qs["threshold_warn"] == 0.05
    assert "/../" not in doc["warehouse"]


def test_piped_tables_fit_the_terminal_width(orders):
    for cols in (80, 100):
        for args in (("facts", "ledger"), ("dlq", "list"), ("facts", "attention")):
            r = run_cli(*args, str(orders), env={"COLUMNS": str(cols)})
            assert r.returncode == 0, r.stderr
            lines = r.stdout.splitlines()
            assert max(len(x) for x in lines) <= cols, (args, cols, r.stdout)
    # keys are never folded: every key of the listing is on one line
    r = run_cli("dlq", "list", str(orders), "--limit", "0", env={"COLUMNS": "80"})
    keys = [x["_dlq_sk"] for x in js("dlq", "list", str(orders), "--limit", "0")["rows"]]
    assert all(re.search(rf"(^|\s){re.escape(k)}(\s|$)", r.stdout, re.M) for k in keys)
