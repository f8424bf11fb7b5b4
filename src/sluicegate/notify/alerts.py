"""Alerts: tell people when a gate warns or fails, the ledger breaks, the source is stale
or the DLQ grows — through ``apprise``, so one URL reaches Slack, Teams, email or a webhook.

An alert names the contract, the run, the checks with their owners and the report's path.
Each (contract, notifier, event, check) is sent at most once per ``rate_limit`` window;
the last-sent times live beside the run metrics (``alerts_sent.json``), keyed by a digest
of the URL so that no secret in it is written down.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.loader import LoadedContract
from ..contract.notify_spec import Alert


@dataclass
class Trigger:
    """One event of one run and the checks behind it: ``(check, owner, detail)``."""

    event: str
    checks: list[tuple[str, str | None, str]] = field(default_factory=list)


def triggers(loaded: LoadedContract, metrics: dict[str, Any]) -> dict[str, Trigger]:
    """Which alert events this run raises, from its metrics (the facts and the verdict)."""
    owners = {f["check_id"]: f.get("owner") for f in metrics.get("facts") or []}
    default_owner = loaded.contract.owner
    status = metrics.get("status")
    out: dict[str, Trigger] = {}
    if status in ("fail", "warn"):
        t = out[status] = Trigger(status)
        for lv in (metrics.get("gate") or {}).get("levels") or []:
            if lv.get("status") == status:
                check = str(lv["check"])
                owner = owners.get(check, owners.get(f"rule:{check}", default_owner))
                t.checks.append((check, owner, str(lv.get("detail") or "")))
    if status == "ledger_violation":
        out["ledger_violation"] = Trigger(
            "ledger_violation",
            [("ledger_conserved", default_owner, str(metrics.get("error") or "ledger violation"))],
        )
    for f in metrics.get("facts") or []:
        if f.get("check_id") == "freshness" and f.get("status") != "pass":
            out["stale"] = Trigger("stale", [("freshness", f.get("owner"), str(f.get("detail")))])
    inserted = int(((metrics.get("dlq") or {}).get("inserted")) or 0)
    # the detail of dlq_growth is the number of rows the run added to the inbox
    out["dlq_growth"] = Trigger("dlq_growth", [("dlq_inbox", default_owner, str(inserted))])
    return out


def wanted(alert: Alert, trigger: Trigger) -> bool:
    if trigger.event not in alert.on:
        return False
    if trigger.event == "dlq_growth":
        return int(trigger.checks[0][2]) > alert.dlq_growth_above
    return bool(trigger.checks)


def message(
    loaded: LoadedContract, metrics: dict[str, Any], trigger: Trigger, report: str | None
) -> tuple[str, str]:
    """(title, body) of one alert: contract, run, event, checks with owners, report path."""
    c = loaded.contract
    title = f"sluicegate: {c.name} {trigger.event.upper()} ({metrics.get('logical_date')})"
    lines = [
        f"contract: {c.name}",
        f"run: {metrics.get('run_id')} (logical date {metrics.get('logical_date')}, "
        f"engine {metrics.get('engine')})",
        f"event: {trigger.event}",
        f"status: {metrics.get('status')}",
        "checks:",
    ]
    if trigger.event == "dlq_growth":
        check, owner, n = trigger.checks[0]
        lines.append(f"  - {check} (owner {owner or 'n/a'}): {n} rows added to the DLQ inbox")
    else:
        lines += [
            f"  - {check} (owner {owner or 'n/a'}): {detail}"
            for check, owner, detail in trigger.checks
        ]
    lines.append(f"report: {report or 'not written'}")
    return loaded.redactor(title), loaded.redactor("\n".join(lines))


def url_key(url: str) -> str:
    """A notifier's key in the rate-limit state: a digest, never the URL (it may hold a token)."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


class RateLimit:
    """Last-sent times per (contract, notifier, event, check), in a small JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.sent: dict[str, float] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.sent = {}

    def due(self, key: str, window: int, now: float) -> bool:
        return now - self.sent.get(key, float("-inf")) >= window

    def mark(self, key: str, now: float) -> None:
        self.sent[key] = now

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.sent, indent=1, sort_keys=True), encoding="utf-8")


def send(url: str, title: str, body: str) -> tuple[bool, str]:
    """Send one notification; (delivered, what went wrong). apprise never raises here."""
    import logging

    import apprise

    notifier = apprise.Apprise()
    if not notifier.add(url):
        return False, "not a notifier URL apprise knows"
    captured: list[str] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                captured.append(record.getMessage())

    log = logging.getLogger("apprise")
    handler = _Keep()
    log.addHandler(handler)
    try:
        ok = bool(notifier.notify(title=title, body=body, body_format=apprise.NotifyFormat.TEXT))
    finally:
        log.removeHandler(handler)
    return ok, "" if ok else ("; ".join(captured[-2:]) or "the notifier reported a failure")


def deliver(
    loaded: LoadedContract,
    metrics: dict[str, Any],
    state_path: Path,
    report: str | None,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """Send every alert this run raises; one record per (notifier, event): sent, failed or
    rate-limited. Never raises for a notifier's failure."""
    now = time.time() if now is None else now
    limits = RateLimit(state_path)
    found = triggers(loaded, metrics)
    name = loaded.contract.name
    out: list[dict[str, Any]] = []
    for i, alert in enumerate(loaded.contract.alerts):
        for trigger in found.values():
            if not wanted(alert, trigger):
                continue
            keys = {
                check: f"{name}|{url_key(alert.url)}|{trigger.event}|{check}"
                for check, _o, _d in trigger.checks
            }
            due = [
                c for c in trigger.checks if limits.due(keys[c[0]], alert.rate_limit_seconds, now)
            ]
            record = {
                "notifier": i,
                "event": trigger.event,
                "checks": [c[0] for c in trigger.checks],
            }
            if not due:
                out.append({**record, "outcome": "rate_limited"})
                continue
            title, body = message(loaded, metrics, Trigger(trigger.event, due), report)
            ok, why = send(alert.url, title, body)
            if ok:
                for check, _o, _d in due:
                    limits.mark(keys[check], now)
            out.append(
                {
                    **record,
                    "checks": [c[0] for c in due],
                    "outcome": "sent" if ok else "failed",
                    "error": loaded.redactor(why) if why else None,
                }
            )
    limits.save()
    return out
