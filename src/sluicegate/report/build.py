"""``sluicegate report``: one self-contained HTML file from the governed tables.

:func:`collect` reads the data, :mod:`charts` draws it as inline SVG, and a Jinja2
template (``templates/report.html.j2``, autoescaped) lays out the tables and charts.
The page loads nothing: no script, no stylesheet, no font, no image from anywhere —
the styles are inline and the charts are SVG elements in the document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup

from .._version import __version__
from ..contract.loader import LoadedContract
from ..workspace import Workspace
from . import charts
from .collect import ReportData, collect

#: The trend's default window: seed 001's 90 runs.
DEFAULT_RUNS = 90


def _rule_rows(m: dict[str, Any], loaded: LoadedContract) -> list[dict[str, Any]]:
    routed = (m.get("ledger") or {}).get("raw", 0) - (m.get("ledger") or {}).get("duplicates", 0)
    fact_status = {f["check_id"]: f.get("status") for f in m.get("facts") or []}
    per_rule = {r.name: r.fail_above for r in loaded.contract.rules}
    rows = []
    for name, n in (m.get("builtin") or {}).items():
        rows.append(
            {
                "name": name,
                "owner": loaded.contract.owner,
                "failed": int(n),
                "share": int(n) / routed if routed else 0.0,
                "status": fact_status.get(f"builtin:{name}", "pass"),
                "fail_above": None,
            }
        )
    for name, r in (m.get("rules") or {}).items():
        rows.append(
            {
                "name": name,
                "owner": r.get("owner"),
                "failed": int(r.get("failed") or 0),
                "share": float(r.get("share") or 0.0),
                "status": fact_status.get(f"rule:{name}", "pass"),
                "fail_above": per_rule.get(name),
            }
        )
    return rows


def context(data: ReportData, loaded: LoadedContract) -> dict[str, Any]:
    """The template's variables: plain values and the charts' SVG (marked safe)."""
    m = data.metrics
    led = m.get("ledger") or {}
    gate = loaded.contract.gate
    by_reason = dict(led.get("quarantined_by_reason") or {})
    rules = _rule_rows(m, loaded)
    ledger = {
        "raw": int(led.get("raw") or 0),
        "clean": int(led.get("clean") or 0),
        "quarantined": int(led.get("quarantined") or 0),
        "duplicates": int(led.get("duplicates") or 0),
        "balanced": bool(led.get("balanced")),
    }
    ledger_svg = charts.ledger_chart(
        ledger["raw"], ledger["clean"], by_reason, ledger["duplicates"], data.dlq_by_status
    )
    trends = [
        {
            "check_id": check,
            "points": len(points),
            "last": points[-1]["value"],
            "svg": Markup(
                charts.trend_chart(
                    check,
                    [(p["label"], p["value"], str(p["status"])) for p in points],
                    points[-1]["warn"],
                    points[-1]["fail"],
                )
            ),
        }
        for check, points in sorted(data.trend.items(), key=lambda kv: _trend_order(kv[0]))
    ]
    facts = m.get("facts") or []
    fresh = next((f for f in facts if f.get("check_id") == "freshness"), None)
    return {
        "version": __version__,
        "contract": data.contract,
        "warehouse": data.warehouse,
        "m": m,
        "ledger": ledger,
        "by_reason": by_reason,
        "ledger_svg": Markup(ledger_svg),
        "rules": rules,
        "rules_svg": Markup(charts.rule_chart(rules, gate.warn_above, gate.fail_above)),
        "gate": gate,
        "trends": trends,
        "runs_in_trend": data.runs_in_trend,
        "facts": facts,
        "freshness": fresh,
        "dlq_by_reason": data.dlq_by_reason,
        "dlq_by_status": data.dlq_by_status,
        "dlq_sample": data.dlq_sample,
        "model": m.get("model"),
        "files": (m.get("input") or {}).get("files") or [],
    }


def _trend_order(check: str) -> tuple[int, str]:
    """Governed run checks first, then built-in reasons, then rules, then the rest."""
    if check.startswith("rule:"):
        return 2, check
    if check.startswith("builtin:"):
        return 1, check
    if check.startswith("notify:"):
        return 3, check
    return 0, check


def render(data: ReportData, loaded: LoadedContract) -> str:
    """The page's HTML text."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader("sluicegate.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda n: "" if n is None else f"{int(n):,}"
    html = env.get_template("report.html.j2").render(**context(data, loaded))
    return loaded.redactor(html)


def default_path(loaded: LoadedContract) -> Path:
    """``report.html`` beside the run metrics: where ``report`` writes and alerts point."""
    return Workspace(loaded).contract_runs_dir / "report.html"


def write_report(
    loaded: LoadedContract,
    *,
    out: Path | None = None,
    runs: int = DEFAULT_RUNS,
    run_id: str | None = None,
) -> Path:
    """Collect, render and write the report (default :func:`default_path`); returns its
    absolute path."""
    return build_report(loaded, out=out, runs=runs, run_id=run_id)[0]


def build_report(
    loaded: LoadedContract,
    *,
    out: Path | None = None,
    runs: int = DEFAULT_RUNS,
    run_id: str | None = None,
) -> tuple[Path, ReportData]:
    """:func:`write_report`, also returning what the page shows (``report --json`` names
    the run it reported, which the caller may not have asked for by id)."""
    path = out or default_path(loaded)
    metrics_dir = Workspace(loaded).contract_runs_dir
    data = collect(loaded, runs=runs, run_id=run_id, metrics_dir=metrics_dir)
    html = render(data, loaded)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a page
    return path.resolve(), data  # absolute: alerts and orchestrators hand it on
