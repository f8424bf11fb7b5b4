"""Rendering for humans: rich on a terminal, plain lines when piped; ``--quiet`` silences.

Core code reports events (``sluicegate.report.events``); this module decides how they look.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from ..contract.tokens import redact_secrets


class CliConsole:
    """Progress on stderr, results on stdout; plain text when not a terminal."""

    def __init__(self, *, quiet: bool = False, json_mode: bool = False) -> None:
        self.quiet = quiet
        self.json_mode = json_mode
        self.tty = sys.stderr.isatty()
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self.out = Console(highlight=False, soft_wrap=True)
        self._status = None

    # -- Listener protocol -------------------------------------------------------
    def stage(self, name: str, detail: str = "") -> None:
        if self.quiet:
            return
        if self.tty:
            if self._status is None:
                self._status = self.err.status(f"{name} …")
                self._status.start()
            else:
                self._status.update(f"{name} …")

    def finished(self, name: str, seconds: float, detail: str = "") -> None:
        if self.quiet:
            return
        line = f"  {name:<11} {seconds:7.3f}s {detail}".rstrip()
        if self.tty:
            self.err.print(f"[green]✓[/green]{line}")
        else:
            print(f"stage{line}", file=sys.stderr)

    def notice(self, message: str) -> None:
        if self.quiet:
            return
        if self.tty:
            self.err.print(f"[yellow]![/yellow] {message}")
        else:
            print(f"notice: {message}", file=sys.stderr)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    # -- output -------------------------------------------------------------------
    def line(self, text: str, style: str | None = None) -> None:
        if self.quiet:
            return
        text = redact_secrets(text)  # an owner or a path may hold a secret
        if self.out.is_terminal and style:
            self.out.print(f"[{style}]{text}[/{style}]")
        else:
            print(text)

    def error(self, text: str) -> None:
        text = redact_secrets(text)
        if sys.stderr.isatty():
            self.err.print(f"[red]error:[/red] {text}", markup=True, highlight=False)
        else:
            print(f"error: {text}", file=sys.stderr)

    def table(self, title: str, columns: list[str], rows: list[list[Any]]) -> None:
        """A table: rich on a terminal, aligned plain text otherwise."""
        if self.quiet:
            return
        title = redact_secrets(title)
        rows = [[redact_secrets(str(v)) for v in r] for r in rows]
        if self.out.is_terminal:
            t = Table(title=title, title_justify="left")
            for c in columns:
                t.add_column(c, justify="right" if c in NUMERIC_HEADERS else "left")
            for r in rows:
                t.add_row(*[str(v) for v in r])
            self.out.print(t)
            return
        widths = [
            max(len(str(c)), *(len(str(r[i])) for r in rows)) if rows else len(c)
            for i, c in enumerate(columns)
        ]
        print(title)
        print("  ".join(str(c).ljust(w) for c, w in zip(columns, widths, strict=True)))
        for r in rows:
            print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)))
        print()


NUMERIC_HEADERS = {"records", "failed", "share", "count", "rows", "seconds", "metric"}


def render_run_summary(con: CliConsole, m: dict[str, Any]) -> None:
    """The end-of-run summary: the ledger, per-rule counts, the gate verdict."""
    led = m["ledger"]
    rows = [
        ["raw records", led.get("raw", 0)],
        ["clean", led.get("clean", 0)],
        ["quarantined", led.get("quarantined", 0)],
        ["duplicates", led.get("duplicates", 0)],
        ["(blank lines, not records)", led.get("blank_lines", 0)],
    ]
    for reason, n in (led.get("quarantined_by_reason") or {}).items():
        rows.append([f"  quarantined: {reason}", n])
    balanced = "balanced" if led.get("balanced") else "NOT BALANCED"
    con.table(
        f"Ledger of run {m['run_id']} ({m['logical_date']}): {balanced}",
        ["outcome", "records"],
        rows,
    )
    rule_rows = [
        [name, r["failed"], r["share"], r["on_fail"], r.get("owner") or ""]
        for name, r in m["rules"].items()
    ]
    for name, n in m.get("builtin", {}).items():
        if n:
            rule_rows.insert(0, [f"{name} (built-in)", n, "", "quarantine", ""])
    if rule_rows:
        con.table("Rules", ["rule", "failed", "share", "on_fail", "owner"], rule_rows)
    render_model_summary(con, m.get("model"))
    render_serve_summary(con, m.get("serve"))
    gate = m.get("gate") or {}
    con.table(
        "Gate",
        ["check", "status", "metric", "warn_above", "fail_above"],
        [
            [
                lv["check"],
                lv["status"],
                lv["metric"],
                _dash(lv["threshold_warn"]),
                _dash(lv["threshold_fail"]),
            ]
            for lv in gate.get("levels", [])
        ],
    )


def _dash(v: Any) -> Any:
    return "—" if v is None else v


def render_model_summary(con: CliConsole, model: dict[str, Any] | None) -> None:
    """The star schema a run built: dimensions, facts (and their export), marts."""
    if not model:
        return
    rows: list[list[Any]] = []
    for name, d in (model.get("dimensions") or {}).items():
        rows.append(
            [name, "SCD2 dimension", f"{d.get('rows', 0)} versions, {d.get('current', 0)} current"]
        )
    for name, f in (model.get("facts") or {}).items():
        unknown = sum((f.get("unknown_member") or {}).values())
        detail = f"{f.get('rows', 0)} rows, {unknown} unknown members"
        exp_ = f.get("export")
        if exp_:
            detail += f"; Parquet: {exp_.get('partitions', 0)} partitions in {exp_.get('path')}"
        rows.append([name, "as-of fact", detail])
    for name, n in (model.get("marts") or {}).items():
        rows.append([name, "mart", f"{n} rows"])
    con.table("Star schema", ["table", "kind", "rows"], rows)


def render_serve_summary(con: CliConsole, serve: list[dict[str, Any]] | None) -> None:
    """What each serve: target received (run/serve_step.py), or why it did not."""
    if not serve:
        return
    rows: list[list[Any]] = []
    for t in serve:
        if t["status"] != "pass":
            rows.append([t["target"], "—", "FAILED", "", "", ""])
            continue
        for tb in t["tables"]:
            scope = "all" if tb["scope"] is None else ",".join(tb["scope"]) or "(up to date)"
            rows.append(
                [t["target"], tb["target"], scope, tb["copied"], tb["written"], tb["deleted"]]
            )
    con.table(
        "Served (PostgreSQL; written = inserted or changed rows)",
        ["target", "table", "scope", "copied", "written", "deleted"],
        rows,
    )
