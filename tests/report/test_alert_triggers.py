"""Which alert events a run raises, from its metrics (no engine): every event kind,
thresholds, owners, and the rate limit's window."""

from __future__ import annotations

from pathlib import Path

from sluicegate.compile.contract_check import load_contract
from sluicegate.notify import alerts

from .conftest import orders_contract


def _loaded(tmp_path: Path, on: str, extra: str = ""):
    contract = orders_contract(
        tmp_path / "o", f"alerts:\n  - url: json://127.0.0.1:9/x\n    on: {on}\n{extra}"
    )
    return load_contract(contract)


def _metrics(status: str, **more) -> dict:
    return {
        "status": status,
        "run_id": "r1",
        "logical_date": "2024-01-31",
        "gate": {"levels": more.pop("levels", [])},
        "facts": more.pop("facts", []),
        "dlq": more.pop("dlq", None),
        "error": more.pop("error", None),
    }


def test_each_event_kind(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "[fail, warn, ledger_violation, stale, dlq_growth]")
    alert = loaded.contract.alerts[0]
    stale = {"check_id": "freshness", "status": "warn", "owner": "ops", "detail": "36h old"}
    rule = {"check_id": "rule:unknown_customer", "owner": "crm-team@example.com"}
    m = _metrics(
        "fail",
        levels=[{"check": "unknown_customer", "status": "fail", "detail": "5 of 12"}],
        facts=[stale, rule],
        dlq={"inserted": 3},
    )
    found = alerts.triggers(loaded, m)
    assert found["fail"].checks == [("unknown_customer", "crm-team@example.com", "5 of 12")]
    assert found["stale"].checks == [("freshness", "ops", "36h old")]
    assert all(alerts.wanted(alert, found[e]) for e in ("fail", "stale", "dlq_growth"))
    assert "warn" not in found
    led = alerts.triggers(loaded, _metrics("ledger_violation", error="raw 12 != 11"))
    assert led["ledger_violation"].checks[0][2] == "raw 12 != 11"
    assert alerts.wanted(alert, led["ledger_violation"])
    title, body = alerts.message(loaded, m, found["fail"], "/r.html")
    assert title == "sluicegate: orders FAIL (2024-01-31)"
    assert "unknown_customer (owner crm-team@example.com): 5 of 12" in body
    assert body.endswith("report: /r.html")


def test_dlq_growth_threshold_and_unsubscribed_events(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "[dlq_growth]", "    dlq_growth_above: 5\n")
    alert = loaded.contract.alerts[0]
    assert not alerts.wanted(
        alert, alerts.triggers(loaded, _metrics("pass", dlq={"inserted": 5}))["dlq_growth"]
    )
    assert alerts.wanted(
        alert, alerts.triggers(loaded, _metrics("pass", dlq={"inserted": 6}))["dlq_growth"]
    )
    fail = alerts.triggers(
        loaded, _metrics("fail", levels=[{"check": "x", "status": "fail", "detail": ""}])
    )
    assert not alerts.wanted(alert, fail["fail"])  # not in `on`


def test_rate_limit_window(tmp_path: Path) -> None:
    limits = alerts.RateLimit(tmp_path / "sent.json")
    assert limits.due("k", 3600, now=1000.0)
    limits.mark("k", 1000.0)
    limits.save()
    again = alerts.RateLimit(tmp_path / "sent.json")
    assert not again.due("k", 3600, now=4599.0) and again.due("k", 3600, now=4600.0)
    assert "json://" not in (tmp_path / "sent.json").read_text()
