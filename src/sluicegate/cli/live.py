"""The live progress display of a run on a terminal (rich's ``Progress``).

Its own module so that rich's progress machinery is imported only when a terminal shows
it: a piped, ``--json`` or ``--quiet`` run never needs it (cli/console.py).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text


class RecordsColumn(ProgressColumn):
    """``200,000 records  162,311/s`` — the count a stage handled and its rate."""

    def render(self, task: Task) -> Text:
        n = task.fields.get("records")
        if n is None:
            return Text("")
        secs = task.finished_time if task.finished else task.elapsed
        rate = f"  {n / secs:,.0f}/s" if secs and secs > 0 else ""
        return Text(f"{n:>11,} {task.fields.get('unit', 'records')}{rate}")


class _OnlyFor(ProgressColumn):
    """A column shown only for some kinds of task: ``overall`` (the run's bar over its
    stages), ``stage`` (one stage: its record count) and ``counted`` (work that counts
    towards a known total, like data generation: bar and count)."""

    def __init__(self, kinds: str, inner: ProgressColumn) -> None:
        super().__init__()
        self.kinds = set(kinds.split("|"))
        self.inner = inner

    def render(self, task: Task) -> Any:
        if task.fields.get("kind") not in self.kinds:
            return Text("")
        return self.inner.render(task)


def start_progress(console: Console) -> Progress:
    """A started progress display on ``console``: one bar for the run, a line per stage."""
    progress = Progress(
        SpinnerColumn(finished_text="[green]✓[/green]"),
        TextColumn("{task.description:<10}"),
        _OnlyFor("overall|counted", BarColumn(bar_width=16)),
        _OnlyFor("overall", MofNCompleteColumn()),
        _OnlyFor("overall|counted", TaskProgressColumn()),
        _OnlyFor("stage|counted", RecordsColumn()),
        TimeElapsedColumn(),
        console=console,
        refresh_per_second=8,
    )
    progress.start()
    return progress
