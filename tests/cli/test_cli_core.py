"""The CLI as a user meets it: help, compile, errors without tracebacks, the demo."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, run_cli

ORDERS = str(REPO / "examples/orders/contract.yml")


def test_help_teaches_commands_and_exit_codes():
    r = run_cli("--help")
    assert r.returncode == 0
    for word in ("demo", "validate", "run", "compile", "Exit codes"):
        assert word in r.stdout


@pytest.mark.parametrize("dialect", ["duckdb", "spark", "trino"])
def test_compile_prints_sql(dialect):
    r = run_cli("compile", ORDERS, "--dialect", dialect)
    assert r.returncode == 0, r.stderr
    assert "_failed_rules" in r.stdout and "INSERT INTO" in r.stdout


def test_compile_unknown_dialect_is_usage_error():
    r = run_cli("compile", ORDERS, "--dialect", "nosuchsql")
    assert r.returncode == 2 and "no such SQL dialect" in r.stderr and "duckdb" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_contract_and_missing_input_are_clean_errors(tmp_path):
    r = run_cli("run", str(tmp_path / "nope.yml"))
    assert r.returncode == 2 and "not found" in r.stderr and "Traceback" not in r.stderr
    c = tmp_path / "c.yml"
    c.write_text(
        "name: x\nsource: {path: missing.json, columns: {a: INTEGER}}\n"
        "outputs: {warehouse: w.duckdb, clean: c, quarantine: q}\n"
    )
    r = run_cli("run", str(c))
    assert r.returncode == 2 and "missing.json" in r.stderr and "Traceback" not in r.stderr


def test_bad_var_syntax_is_usage_error():
    r = run_cli("run", ORDERS, "--var", "novalue")
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr


def test_demo_runs_the_retail_job_and_matches_the_generator_truth(tmp_path):
    r = run_cli("demo", "--dir", str(tmp_path / "d"), "--lines", "3000", "--json")
    assert r.returncode in (0, 1), r.stderr
    m = json.loads(r.stdout)
    truth = json.loads((tmp_path / "d" / "feed" / "expected.json").read_text())
    led = m["ledger"]
    assert led["balanced"] is True
    assert led["raw"] == led["clean"] + led["quarantined"] + led["duplicates"] == truth["raw_lines"]
    assert (
        led["duplicates"] == truth["duplicates_dropped"]
        and led["corrupt"] == truth["corrupt_lines"]
    )
    assert led["clean"] == truth["clean"]
    assert {k: v["failed"] for k, v in m["rules"].items()} == truth["rule_failures"]
    assert m["model"]["facts"]["fct_sales"]["rows"] == truth["fact_rows"]


def test_demo_with_a_relative_dir_as_make_demo_runs_it(tmp_path):
    """``make demo`` passes ``--dir .demo``: relative to where it runs, not to the
    contract the demo writes inside it."""
    r = run_cli("demo", "--dir", ".demo", "--lines", "2000", "--json", cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    m = json.loads(r.stdout)
    assert m["ledger"]["raw"] == 2000 and m["ledger"]["balanced"] is True
    assert (tmp_path / ".demo" / "warehouse.duckdb").is_file()
    assert not (tmp_path / ".demo" / ".demo").exists()


def test_demo_orders_feed(tmp_path):
    r = run_cli(
        "demo", "--feed", "orders", "--dir", str(tmp_path / "o"), "--lines", "2000", "--json"
    )
    assert r.returncode in (0, 1), r.stderr
    m = json.loads(r.stdout)
    assert m["ledger"]["balanced"] is True and m["contract"]["name"] == "demo_orders"


def test_packaged_retail_contract_is_the_example():
    """Equal but for the example's first line: the editor's schema comment, a path
    relative to examples/retail/ that would be wrong inside the package."""
    packaged = REPO / "src/sluicegate/examples/retail.yml"
    example = (REPO / "examples/retail/contract.yml").read_text()
    modeline, rest = example.split("\n", 1)
    assert modeline.startswith("# yaml-language-server: $schema=")
    assert packaged.read_text() == rest


def test_quiet_run_prints_nothing_on_pass(tmp_path):
    r = run_cli(
        "demo", "--feed", "orders", "--dir", str(tmp_path / "d"), "--lines", "2000", "--quiet"
    )
    assert r.stdout.strip() == ""


def test_profile_times_every_statement_of_a_run(tmp_path):
    """``run --profile``: each statement with its stage and timings, in the metrics and
    summarized on the terminal; without the flag the metrics carry no profile."""
    wh = f"warehouse={tmp_path / 'w.duckdb'}"
    r = run_cli("run", ORDERS, "--var", wh, "--json", "--profile")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    prof = m["profile"]
    stages = {s["stage"] for s in prof}
    assert {"read", "route", "publish"} <= stages
    assert any(s["sql"].startswith("INSERT INTO") for s in prof if s["stage"] == "publish")
    assert all(s["wall_s"] >= 0 and s["cpu_s"] >= 0 and s["sql"] for s in prof)
    assert sum(s["wall_s"] for s in prof) <= m["timings"]["total"]
    r = run_cli("run", ORDERS, "--var", wh, "--profile")
    assert r.returncode == 0, r.stderr
    assert "profile:" in r.stdout and "statements" in r.stdout and "wall s" in r.stdout
    r = run_cli("run", ORDERS, "--var", wh, "--json")
    assert "profile" not in json.loads(r.stdout)


def test_an_error_whose_text_cannot_be_read_is_still_one_line(capsys):
    """A py4j error fetches its text from the JVM; once the JVM is dead ``str()`` raises
    inside the handler. The handler must still print one line and exit 70."""
    from sluicegate.cli.common import handled

    class Unreadable(Exception):
        def __str__(self) -> str:
            raise ConnectionRefusedError("the gateway is gone")

    @handled
    def command(as_json: bool = False) -> None:
        raise Unreadable

    with pytest.raises(SystemExit) as done:
        command()
    assert done.value.code == 70
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Unreadable (its message could not be read)" in err[0], err
