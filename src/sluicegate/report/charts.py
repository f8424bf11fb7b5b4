"""The report's charts, drawn by matplotlib and inlined as SVG.

Why matplotlib to SVG: the page must open offline and carry no script. An inline SVG
needs nothing but the browser; text stays text (``svg.fonttype: none``), so the numbers
on a chart can be searched, copied and checked by a test. Measured on the retail demo
(docs/report.md): a 20-chart report is ~0.3 MB and renders in well under a second; the
alternative of inlining a JS plotting library costs ~3.5 MB of script before any data.

Each function returns the SVG text of one figure; every number it draws is also written
as a label on the chart.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display, no GUI toolkit

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

PASS, WARN, FAIL, MUTED = "#2e7d32", "#f9a825", "#c62828", "#607d8b"
CLEAN, QUARANTINED, DUPLICATES = "#43a047", "#e53935", "#90a4ae"
STATUS_COLOURS = {"pass": PASS, "warn": WARN, "fail": FAIL}
DLQ_COLOURS = {"quarantined": "#e53935", "fixed": "#fb8c00", "recycled": "#43a047"}
DLQ_COLOURS["rejected"] = "#6d4c41"

_STYLE = {
    "svg.fonttype": "none",  # text as <text>, not paths: smaller, searchable
    "svg.hashsalt": "sluicegate",  # stable element ids: the same run gives the same file
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: inline in HTML


def _fmt(n: float) -> str:
    return f"{int(n):,}" if float(n).is_integer() else f"{n:.4g}"


def ledger_chart(
    raw: int, clean: int, by_reason: dict[str, int], duplicates: int, dlq: dict[str, int]
) -> str:
    """raw → clean + quarantined (one segment per reason) + duplicates; below, the DLQ
    inbox by status. Every segment is named with its count in the legend."""
    with plt.rc_context(_STYLE):
        fig, (top, bottom) = plt.subplots(
            2, 1, figsize=(9, 2.8), height_ratios=[1.5, 1], layout="constrained"
        )
        top.barh(1, raw, color=MUTED, height=0.6, label=f"raw {_fmt(raw)}")
        quarantined = sum(by_reason.values())
        segments = [("clean", clean, CLEAN), ("quarantined", quarantined, QUARANTINED)]
        segments.append(("duplicates", duplicates, DUPLICATES))
        left = 0
        for label, n, colour in segments:
            top.barh(0, n, left=left, color=colour, height=0.6, label=f"{label} {_fmt(n)}")
            left += n
        top.set_yticks([1, 0], ["input", "outcome"])
        top.set_xlim(0, max(raw, left, 1))
        top.set_xticks([])
        top.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        left = 0
        for status, n in dlq.items():
            colour = DLQ_COLOURS.get(status, MUTED)
            bottom.barh(0, n, left=left, color=colour, height=0.6, label=f"{status} {_fmt(n)}")
            left += n
        bottom.set_xlim(0, max(left, 1))
        bottom.set_yticks([0], ["DLQ inbox"])
        bottom.set_xticks([])
        bottom.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        return _svg(fig)


def rule_chart(rows: Sequence[dict[str, Any]], warn_above: float, fail_above: float) -> str:
    """Failed share per rule (and built-in reason) with the gate's warn/fail bands.

    ``rows``: ``name``, ``owner``, ``failed``, ``share``, ``status``, optional ``fail_above``.
    """
    with plt.rc_context(_STYLE):
        height = 0.8 + 0.32 * max(len(rows), 1)
        fig, ax = plt.subplots(figsize=(9, height), layout="constrained")
        top = max([r["share"] for r in rows] + [fail_above * 1.25, 1e-9])
        ax.axvspan(0, warn_above, color=PASS, alpha=0.08, lw=0)
        ax.axvspan(warn_above, fail_above, color=WARN, alpha=0.15, lw=0)
        ax.axvspan(fail_above, top * 1.15, color=FAIL, alpha=0.10, lw=0)
        ax.axvline(warn_above, color=WARN, lw=1, ls="--")
        ax.axvline(fail_above, color=FAIL, lw=1, ls="--")
        ax.text(warn_above, -0.9, f" warn {warn_above:g}", color="#8d6e00", va="bottom")
        ax.text(fail_above, -0.9, f" fail {fail_above:g}", color=FAIL, va="bottom")
        labels = []
        for i, r in enumerate(rows):
            ax.barh(i, r["share"], color=STATUS_COLOURS.get(r["status"], MUTED), height=0.6)
            ax.text(r["share"], i, f" {_fmt(r['failed'])} ({r['share']:.2%})", va="center")
            if r.get("fail_above") is not None:
                ax.plot([r["fail_above"]] * 2, [i - 0.35, i + 0.35], color=FAIL, lw=2)
            labels.append(f"{r['name']} · {r['owner'] or 'no owner'}")
        ax.set_yticks(range(len(rows)), labels)
        ax.set_ylim(len(rows) - 0.4, -1)
        ax.set_xlim(0, top * 1.15)
        ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=1))
        ax.set_xlabel("share of routed records that failed the rule")
        return _svg(fig)


def trend_chart(
    check_id: str,
    points: Sequence[tuple[str, float, str]],
    warn: float | None,
    fail: float | None,
) -> str:
    """One governed check over the last runs: ``(label, metric, status)`` oldest first,
    with its warn/fail thresholds drawn as bands; the newest value is labelled."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(4.2, 1.9), layout="constrained")
        xs = list(range(len(points)))
        ys = [p[1] for p in points]
        hi = max(ys + [v for v in (warn, fail) if v is not None] + [1e-9])
        lo = min(ys + [0.0])
        ceiling = hi * 1.2 if hi > 0 else 1.0
        if warn is not None:
            ax.axhspan(warn, fail if fail is not None else ceiling, color=WARN, alpha=0.15, lw=0)
        if fail is not None:
            ax.axhspan(fail, max(ceiling, fail * 1.2), color=FAIL, alpha=0.10, lw=0)
        ax.plot(xs, ys, color=MUTED, lw=1)
        dots = ax.scatter(
            xs, ys, c=[STATUS_COLOURS.get(p[2], MUTED) for p in points], s=14, zorder=3
        )
        dots.set_gid("points-" + re.sub(r"[^A-Za-z0-9_-]", "-", check_id))  # one mark per run
        if points:
            ax.annotate(
                _fmt(ys[-1]),
                (xs[-1], ys[-1]),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
            )
            ax.set_xticks([0, xs[-1]], [points[0][0], points[-1][0]])
        ax.set_ylim(lo, max(ceiling, fail * 1.2 if fail else ceiling))
        ax.set_title(f"{check_id} ({len(points)} runs)", loc="left", fontsize=9)
        return _svg(fig)
