"""Alerts through apprise to a webhook on loopback: what they carry, the rate limit, and a
failing notifier that is recorded as a fact and never changes the verdict."""

from __future__ import annotations

from pathlib import Path

import duckdb

import sluicegate
from tests.conftest import run_cli

from .conftest import orders_contract


def _alerts(url: str, *, on: str = "[fail, warn, ledger_violation, stale, dlq_growth]") -> str:
    return f"alerts:\n  - url: json://{url}/hooks\n    on: {on}\n"


def _facts(warehouse: Path, run_id: str) -> dict[str, dict]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT check_id, status, severity, detail FROM quality_facts WHERE run_id = ?",
            [run_id],
        ).fetchall()
    return {r[0]: {"status": r[1], "severity": r[2], "detail": r[3]} for r in rows}


def test_failing_gate_alerts_the_webhook_with_contract_run_checks_owners_report(
    tmp_path: Path, receiver
) -> None:
    contract = orders_contract(tmp_path / "o", _alerts(receiver.url), fail_above=0.1)
    result = sluicegate.run(contract, logical_date="2024-01-31")
    assert (result.status, result.exit_code) == ("fail", 1)
    fail_posts = [doc for path, doc in receiver.posts if "FAIL" in doc["title"]]
    assert len(fail_posts) == 1, receiver.posts
    assert receiver.posts[0][0] == "/hooks"
    body = fail_posts[0]["message"]
    assert "contract: orders" in body
    assert f"run: {result.run_id}" in body
    # the failing check, with its owner (the contract's, for the governed share check)
    level = next(lv for lv in result.metrics["gate"]["levels"] if lv["status"] == "fail")
    assert f"{level['check']} (owner orders-team@example.com)" in body
    report = body.split("report: ", 1)[1].strip()
    assert Path(report).is_file() and result.run_id in Path(report).read_text(encoding="utf-8")
    # dlq_growth: the run added rows to the inbox (threshold 0)
    growth = [doc for _p, doc in receiver.posts if "DLQ_GROWTH" in doc["title"]]
    added = result.metrics["dlq"]["inserted"]
    assert added > 0 and f"{added} rows added to the DLQ inbox" in growth[0]["message"]
    facts = _facts(tmp_path / "o" / "warehouse.duckdb", result.run_id)
    assert facts["notify:alert:0"]["status"] == "pass"
    assert [n["outcome"] for n in result.notifications] == ["sent", "sent"]

    # the same failure again within the rate limit: nothing new is sent, the verdict stands
    before = len(receiver.posts)
    again = sluicegate.run(contract, logical_date="2024-01-31")
    assert (again.status, again.exit_code) == ("fail", 1)
    assert len(receiver.posts) == before
    assert {n["outcome"] for n in again.notifications} == {"rate_limited"}


def test_a_broken_notifier_is_a_fact_and_never_changes_the_verdict(
    tmp_path: Path, receiver
) -> None:
    receiver.status = 500
    contract = orders_contract(tmp_path / "o", _alerts(receiver.url, on="[warn]"))
    result = sluicegate.run(contract, logical_date="2024-01-31")
    assert (result.status, result.exit_code) == ("warn", 0)  # the sample's share warns
    assert receiver.posts, "the notifier was tried"
    fact = _facts(tmp_path / "o" / "warehouse.duckdb", result.run_id)["notify:alert:0"]
    assert (fact["status"], fact["severity"]) == ("warn", "warning")
    assert "not delivered" in fact["detail"]
    assert next(f for f in result.facts if f["check_id"] == "notify:alert:0")["status"] == "warn"


def test_cli_run_is_the_api_run_alerts_included(tmp_path: Path, receiver) -> None:
    """``sluicegate run`` goes through sluicegate.run: the alert and its fact are there."""
    contract = orders_contract(tmp_path / "o", _alerts(receiver.url, on="[fail]"), fail_above=0.1)
    p = run_cli("run", str(contract), "--logical-date", "2024-01-31", "--json")
    assert p.returncode == 1, p.stderr
    assert len(receiver.posts) == 1 and "FAIL" in receiver.posts[0][1]["title"]
    assert '"notify:alert:0"' in p.stdout


def test_alerts_section_errors_name_the_key(tmp_path: Path) -> None:
    contract = orders_contract(tmp_path / "o", "alerts:\n  - url: nowhere\n    on: [fial]\n")
    p = run_cli("validate", str(contract))
    assert p.returncode == 2
    assert "alerts" in p.stderr and "Traceback" not in p.stderr
