"""What :func:`sluicegate.run` does around a run: the lineage START before it; after it the
lineage COMPLETE/FAIL event, the report an alert points at, the alerts, and a governed
fact for every notifier (delivered or not).

Nothing here raises to the caller for a notifier's sake: a lineage server that is down,
a webhook that answers 500 or a report that cannot be written becomes a ``notify:*``
fact with ``severity: warning``, and the run keeps its status and exit code.
"""

from __future__ import annotations

from typing import Any

from ..contract.loader import LoadedContract
from . import record as record_m


def before_run(loaded: LoadedContract, engine: str | None) -> Any:
    """Emit the lineage START event, if the contract has ``lineage:``; the run handle."""
    if loaded.contract.lineage is None:
        return None
    from . import lineage

    run = lineage.new_run()
    try:
        lineage.emit(loaded, lineage.start_event(loaded, run))
    except Exception as exc:  # noqa: BLE001 - any transport error is recorded, not raised
        run.start_error = f"{type(exc).__name__}: {exc}"
    return run


def after_run(loaded: LoadedContract, result: Any, started: Any) -> list[dict[str, Any]]:
    """Lineage end event, alerts and their facts; the notification log (also in metrics)."""
    c = loaded.contract
    if c.lineage is None and not c.alerts:
        return []
    metrics = result.metrics
    facts: list[dict[str, Any]] = []
    log: list[dict[str, Any]] = []
    if c.lineage is not None and started is not None:
        from . import lineage

        error = started.start_error
        if error is None:
            try:
                lineage.emit(loaded, lineage.end_event(loaded, started, metrics))
            except Exception as exc:  # noqa: BLE001
                error = f"{type(exc).__name__}: {exc}"
        detail = (
            f"OpenLineage events sent to {c.lineage.url}"
            if error is None
            else f"OpenLineage event to {c.lineage.url} not delivered: {error}"
        )
        facts.append(record_m.notifier_fact("notify:lineage", error is None, detail, c.owner))
        log.append(
            {
                "notifier": "lineage",
                "outcome": "sent" if error is None else "failed",
                "error": error,
            }
        )
    if c.alerts:
        from . import alerts

        state = (result.metrics_path.parent if result.metrics_path else None) or _runs_dir(loaded)
        triggered = any(
            alerts.wanted(a, t) for a in c.alerts for t in alerts.triggers(loaded, metrics).values()
        )
        report = _report(loaded) if triggered else None
        sent = alerts.deliver(loaded, metrics, state / "alerts_sent.json", report)
        log += [{"notifier": f"alert:{s['notifier']}", **s} for s in sent]
        for i in sorted({s["notifier"] for s in sent if s["outcome"] != "rate_limited"}):
            mine = [s for s in sent if s["notifier"] == i and s["outcome"] != "rate_limited"]
            failed = [s for s in mine if s["outcome"] == "failed"]
            events = ", ".join(s["event"] for s in mine)
            detail = (
                f"alert sent ({events})"
                if not failed
                else "alert not delivered ("
                + ", ".join(f"{s['event']}: {s['error']}" for s in failed)
                + ")"
            )
            facts.append(record_m.notifier_fact(f"notify:alert:{i}", not failed, detail, c.owner))
    error = record_m.record(loaded, metrics, result.metrics_path, facts, log)
    if error is not None:
        log.append({"notifier": "facts", "outcome": "failed", "error": error})
    return log


def _runs_dir(loaded: LoadedContract) -> Any:
    from ..workspace import Workspace

    return Workspace(loaded).contract_runs_dir


def _report(loaded: LoadedContract) -> str | None:
    """Write the report an alert points at (its default path); None if it cannot be."""
    from ..report.build import write_report

    try:
        return str(write_report(loaded))
    except Exception:  # noqa: BLE001 - an alert without a report still goes out
        return None
