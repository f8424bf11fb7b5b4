"""Notifier outcomes as governed facts: a failed alert or lineage event is a fact.

The facts are MERGEd (key ``(run_id, check_id)``) into the contract's facts table after
the run, under the contract's writer lock, with ``severity: warning`` — they are shown to
operators (``sluicegate facts attention``, the report) and never change the run's status
or exit code. The run-metrics JSON is rewritten with them and the notification log.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from ..compile import facts as facts_c
from ..contract.loader import LoadedContract
from ..report.reader import open_warehouse

#: check_id prefix of notifier facts: ``notify:alert:<n>`` (n-th ``alerts:`` entry),
#: ``notify:lineage``.
PREFIX = "notify:"


def notifier_fact(check_id: str, ok: bool, detail: str, owner: str | None) -> dict[str, Any]:
    """A facts-table row (without the run's identity) for one notifier's outcome."""
    return {
        "check_id": check_id,
        "kind": "check",
        "rule_name": None,
        "version": 1,
        "owner": owner,
        "severity": "warning",
        "status": "pass" if ok else "warn",
        "metric": "0" if ok else "1",
        "threshold_warn": "0",
        "threshold_fail": None,
        "failed": 0 if ok else 1,
        "evaluated": 1,
        "diagnostic": "OK" if ok else "NOTIFY_FAILED",
        "detail": detail,
    }


def _naive(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def record(
    loaded: LoadedContract,
    metrics: dict[str, Any],
    metrics_path: Path | None,
    facts: list[dict[str, Any]],
    notifications: list[dict[str, Any]],
) -> str | None:
    """Write ``facts`` into the facts table and the metrics JSON; the error text, if that
    write itself failed (the facts stay in the returned metrics either way)."""
    from ..run.lock import WriterLock
    from ..workspace import Access, Workspace

    red = loaded.redactor
    facts = [{**f, "detail": red(f["detail"])} for f in facts]
    metrics["facts"] = [
        f for f in metrics.get("facts") or [] if not str(f.get("check_id")).startswith(PREFIX)
    ] + facts
    metrics["notifications"] = notifications
    if metrics_path is not None:
        text = red(json.dumps(metrics, indent=2, default=str)) + "\n"
        metrics_path.write_text(text, encoding="utf-8")
        (metrics_path.parent / "latest.json").write_text(text, encoding="utf-8")
    if not facts or not metrics.get("run_id"):
        return None
    now = dt.datetime.now(dt.UTC)
    started = metrics.get("started_at")
    started_at = dt.datetime.fromisoformat(started) if started else now
    rows = [
        {
            **f,
            "contract": loaded.contract.name,
            "run_id": metrics["run_id"],
            "logical_date": metrics.get("logical_date"),
            "run_started_at": _naive(started_at),
            "evaluated_at": _naive(now),
        }
        for f in facts
    ]
    table = loaded.contract.outputs.facts
    lock = WriterLock(Workspace(loaded).writer_lock, loaded.contract.name)
    try:
        with lock.hold(), open_warehouse(loaded, access=Access.OPERATE) as eng:
            if not eng.table_exists(table):
                eng.create_table_as(table, facts_c.empty_select(facts_c.FACT_COLUMNS))
            eng.execute(facts_c.merge_rows(table, facts_c.FACT_COLUMNS, facts_c.FACT_KEY, rows))
    except Exception as exc:  # noqa: BLE001 - a notifier's record never fails the run
        return red(f"{type(exc).__name__}: {exc}")
    return None
