"""Rendering for humans: rich on a terminal, plain lines when piped; ``--quiet`` silences.

Core code reports events (``sluicegate.report.events``); this module decides how they look.
Streams are fixed: results on stdout; progress, warnings and errors on stderr — a warning
is always one ``warning: …`` line there (on a terminal, ``warning:`` in yellow), whatever
the command and whether or not ``--json`` is on.

rich is imported when something is drawn with it (a table, colour on a terminal, the live
progress in cli/live.py), not when the module loads: ``compile``, ``--json`` and ``-q``
runs and plain lines never pay for it.
"""

from __future__ import annotations

import re
import sys
import time
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..contract.tokens import redact_secrets
from .present import count, fit_widths, is_share, norm_path, pct, shorten_middle, width

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


class CliConsole:
    """Progress and warnings on stderr, results on stdout; plain text when not a terminal.

    ``quiet`` and ``json_mode`` silence progress and summaries (stdout is then empty, or
    the JSON document); warnings and errors still go to stderr — with ``-q`` a warn would
    otherwise be invisible, since it exits 0 like a pass.
    """

    def __init__(self, *, quiet: bool = False, json_mode: bool = False) -> None:
        self.quiet = quiet
        self.json_mode = json_mode
        self.tty = sys.stderr.isatty()
        self._progress: Progress | None = None
        self._tasks: dict[str, Any] = {}
        self._overall: Any = None
        self._started: dict[str, float] = {}

    @cached_property
    def err(self) -> Console:
        """rich's console on stderr (made on first use: it imports rich)."""
        from rich.console import Console

        return Console(stderr=True, highlight=False, soft_wrap=True)

    @cached_property
    def out(self) -> Console:
        """rich's console on stdout (made on first use: it imports rich)."""
        from rich.console import Console

        return Console(highlight=False, soft_wrap=True)

    @property
    def silent(self) -> bool:
        return self.quiet or self.json_mode

    # -- Listener protocol -------------------------------------------------------
    def stage(self, name: str, detail: str = "") -> None:
        self._started[name] = time.perf_counter()
        if self.silent or not self.tty:
            return
        progress = self._live()
        if self._overall is None:
            from ..run.pipeline import STAGES  # loaded already: a run is announcing them

            self._overall = progress.add_task("run", total=len(STAGES), kind="overall")
        self._tasks[name] = progress.add_task(name, total=None, kind="stage")

    def finished(
        self, name: str, seconds: float, detail: str = "", records: int | None = None
    ) -> None:
        if self.silent:
            return
        if not self.tty:
            rate = f"  {records / seconds:,.0f} records/s" if records and seconds > 0 else ""
            count = f"  {records:,} records" if records is not None else ""
            print(
                f"stage {name:<11} {seconds:7.3f}s{count}{rate} {detail}".rstrip(), file=sys.stderr
            )
            return
        progress = self._live()
        task = self._tasks.pop(name, None)
        if task is None:
            task = progress.add_task(name, total=None, kind="stage")
        progress.update(task, total=1, completed=1, records=records)
        if self._overall is not None:
            progress.advance(self._overall)

    def progress_records(self, name: str, done: int, total: int | None, unit: str) -> None:
        """Live progress of long work that can count (the demo's data generation)."""
        if self.silent:
            return
        if not self.tty:
            if total and done >= total:
                print(f"{name}: {done:,} {unit}", file=sys.stderr)
            return
        progress = self._live()
        if name not in self._tasks:
            self._tasks[name] = progress.add_task(name, total=total, kind="counted", unit=unit)
        progress.update(self._tasks[name], completed=done, records=done, unit=unit)
        if total and done >= total:
            self._tasks.pop(name)

    def notice(self, message: str) -> None:
        self.warning(message)

    def warning(self, message: str) -> None:
        """The one warning channel: ``warning: …`` on stderr (never silenced)."""
        message = redact_secrets(message)
        if self.tty:
            from rich.text import Text

            self.err.print(Text.assemble(("warning:", "yellow"), " ", message), soft_wrap=False)
        else:
            print(f"warning: {message}", file=sys.stderr)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._tasks = {}
            self._overall = None

    def _live(self) -> Progress:
        if self._progress is None:
            from .live import start_progress

            self._progress = start_progress(self.err)
        return self._progress

    # -- output -------------------------------------------------------------------
    def line(self, text: str, style: str | None = None) -> None:
        if self.silent:
            return
        text = redact_secrets(text)  # an owner or a path may hold a secret
        if style and self.out.is_terminal:
            from rich.text import Text

            self.out.print(Text(text, style=style))
        else:
            print(text)

    def wrapped(self, text: str) -> None:
        """A line that may be long (a path): on a terminal it wraps at the terminal's width
        — folded, never cut — so the whole path is there to copy; piped, one line."""
        if self.silent:
            return
        text = redact_secrets(text)
        if self.out.is_terminal:
            from rich.text import Text

            self.out.print(Text(text), overflow="fold", soft_wrap=False)
        else:
            print(text)

    def error(self, text: str) -> None:
        text = redact_secrets(text)
        if sys.stderr.isatty():
            from rich.text import Text

            self.err.print(Text.assemble(("error:", "red"), " ", text), soft_wrap=False)
        else:
            print(f"error: {text}", file=sys.stderr)

    def table(
        self,
        title: str,
        columns: list[str],
        rows: list[list[Any]],
        *,
        numeric: set[str] | frozenset[str] = frozenset(),
        keep: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        """A table that fits the terminal (cells wrap, nothing is cut): rich with borders
        on a terminal, borderless plain text when piped."""
        if self.silent:
            return
        from rich import box
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        title = redact_secrets(title)  # an owner or a path may hold a secret
        terminal = self.out.is_terminal
        available = self.out.width if terminal else width()
        cells = [
            [
                count(v)
                if isinstance(v, int) and not isinstance(v, bool)
                else printable(redact_secrets(str(v)))  # data never drives the terminal
                for v in r
            ]
            for r in rows
        ]
        natural = [max([len(str(c))] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        # a short value (a date, a count, a run id) keeps its width and a header folds at
        # its words; when that is still too wide, every column but the ``keep`` ones (keys
        # an operator copies) folds further; long text folds inside its cell. No column
        # is ever cropped.
        longest = [max([0] + [len(r[i]) for r in cells]) for i in range(len(columns))]
        minimums = [
            n if c in keep else max(min(n, SHORT_VALUE), max(len(w) for w in str(c).split("_")))
            for c, n in zip(columns, longest, strict=True)
        ]
        frame = 3 * len(columns) + 1 if terminal else 2 * max(len(columns) - 1, 0)
        # tiers of minimums, each tried only when the one before does not fit: headers
        # fold at their words, then anywhere (values stay whole), then long values fold
        tiers = [
            minimums,
            [
                n if c in keep else min(n, SHORT_VALUE)
                for c, n in zip(columns, longest, strict=True)
            ],
            [n if c in keep else min(n, NARROW) for c, n in zip(columns, longest, strict=True)],
        ]
        widths = natural
        for tier in tiers:
            widths = fit_widths(widths, [max(m, 1) for m in tier], available - frame)
            if sum(widths) + frame <= available:
                break
        con = Console(
            width=max(available, sum(widths) + frame),
            no_color=not terminal,
            force_terminal=terminal,
            highlight=False,
        )
        # the title is its own line: a table's title would wrap at the table's width
        con.print(Text(title, style="bold" if terminal else ""), overflow="fold", width=available)
        t = Table(
            box=box.HEAVY_HEAD if terminal else None,
            pad_edge=terminal,
            show_edge=terminal,
            header_style="bold" if terminal else "",
        )
        for c, w in zip(columns, widths, strict=True):
            right = c in numeric or c in NUMERIC_HEADERS
            t.add_column(c, justify="right" if right else "left", overflow="fold", width=w)
        for r in cells:
            t.add_row(*[Text(v) for v in r])
        con.print(t)
        if not terminal:
            con.print()


#: Control characters (C0, DEL, C1) and bidirectional overrides: data shown to an operator
#: must not move the cursor, recolour, retitle the terminal or reorder what is read.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape (ESC → ``\\x1b``)."""
    return _UNPRINTABLE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


#: Values up to this long keep their width when a table must shrink; longer ones fold.
SHORT_VALUE = 16
#: ... and when even that does not fit, every column but the kept ones folds to this.
NARROW = 6

NUMERIC_HEADERS = {
    "records",
    "failed",
    "share",
    "count",
    "rows",
    "seconds",
    "metric",
    "warn_above",
    "fail_above",
}


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
        [name, r["failed"], pct(r["share"]), r["on_fail"], r.get("owner") or ""]
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
                show_metric(lv["check"], lv["metric"], lv.get("detail", "")),
                show_metric(lv["check"], lv["threshold_warn"], lv.get("detail", "")),
                show_metric(lv["check"], lv["threshold_fail"], lv.get("detail", "")),
            ]
            for lv in gate.get("levels", [])
        ],
    )


def render_verdict(con: CliConsole, m: dict[str, Any], status: str, *, brief: bool = False) -> None:
    """The gate's verdict after a run or a batch: ``gate PASS`` on stdout, a warning or an
    error on stderr (shown under ``--json`` and ``-q`` too)."""
    levels = (m.get("gate") or {}).get("levels", [])
    if status == "warn":
        reasons = "; ".join(
            f"{lv['check']} {show_metric(lv['check'], lv['metric'], lv.get('detail', ''))} > "
            f"{show_metric(lv['check'], lv['threshold_warn'], lv.get('detail', ''))}"
            if lv["threshold_warn"] is not None
            else f"{lv['check']}: {lv['detail']}"
            for lv in levels
            if lv["status"] == "warn"
        )
        con.warning(f"gate WARN — {reasons}")
    elif status == "fail":
        reasons = "; ".join(
            f"{lv['check']}: {lv['detail']}" for lv in levels if lv["status"] == "fail"
        )
        con.error(f"gate FAILED — {reasons}; clean rows were not published")
    elif status == "ledger_violation":
        con.error(m.get("error") or "ledger violation")
    elif not brief:
        con.line("gate PASS", "green")


def show_metric(check: str, value: Any, detail: str = "") -> str:
    """A check's metric or threshold for people: a percentage for shares, else as is."""
    if value is None or value == "":
        return "—"
    return pct(value) if is_share(check, detail) else str(value)


def render_model_summary(con: CliConsole, model: dict[str, Any] | None) -> None:
    """The star schema a run built: dimensions, facts (and their export), marts."""
    if not model:
        return
    rows: list[list[Any]] = []
    for name, d in (model.get("dimensions") or {}).items():
        rows.append(
            [
                name,
                "SCD2 dimension",
                f"{count(d.get('rows', 0))} versions, {count(d.get('current', 0))} current",
            ]
        )
    for name, f in (model.get("facts") or {}).items():
        unknown = sum((f.get("unknown_member") or {}).values())
        detail = f"{count(f.get('rows', 0))} rows, {count(unknown)} unknown members"
        exp_ = f.get("export")
        if exp_:
            where = shorten_middle(norm_path(exp_.get("path")), max(24, width() - 40))
            detail += f"; Parquet: {exp_.get('partitions', 0)} partitions in {where}"
        rows.append([name, "as-of fact", detail])
    for name, n in (model.get("marts") or {}).items():
        rows.append([name, "mart", f"{count(n)} rows"])
    con.table("Star schema", ["table", "kind", "detail"], rows)


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
