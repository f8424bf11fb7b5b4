"""A date table's transaction copy that holds only the dates the transaction changes.

The embedded engine's lake stores run a transaction's statements on a copy (the shadow)
of each table they change and publish the differences at commit. Copied whole, a date
table's shadow (clean rows, facts, duplicates) grew with every date the table ever held:
a 1M-line daily run copied ~1M rows per earlier day into memory before its first
statement (at 1M lines a day, +1 s and +0.25 GiB per day of history).

So a date table's shadow is two parts behind its own name:

* ``_sg_part_<t>``, a DuckDB table: the rows of the dates *opened* so far, where every
  statement of the transaction runs (its target renamed, its alias kept);
* ``<t>``, a view: the published rows of every date not opened, then the part — what a
  reader inside the transaction sees, the table as the statements left it.

A date is opened (its published rows copied into the part) before a statement can
remove or change its rows: before a ``DELETE``, the dates of the rows it selects; before
an ``UPDATE`` or ``MERGE``, every date. An ``INSERT`` only adds rows, so it opens nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ..compile.render import ident
from .delta_journal import PARTITION, in_dates

PART = "_sg_part_"


@dataclass
class DateShadow:
    """One date table's shadow: its published relation, its part table, the opened dates
    (``every``: all of them)."""

    name: str
    published: str
    opened: set[Any] = field(default_factory=set)
    every: bool = False

    @property
    def part(self) -> str:
        return PART + self.name

    def create_part(self) -> exp.Create:
        """The part table: the published columns, no rows."""
        empty = exp.select("*").from_(ident(self.published)).where(exp.false())
        return exp.Create(this=exp.Table(this=ident(self.part)), kind="TABLE", expression=empty)

    def view(self) -> exp.Create:
        """``<t>`` as the transaction sees it: published rows of unopened dates, the part."""
        part = exp.select("*").from_(ident(self.part))
        if self.every:
            body: exp.Query = part
        else:
            kept = exp.select("*").from_(ident(self.published))
            if self.opened:
                hit = exp.func("COALESCE", in_dates(list(self.opened)), exp.false())
                kept = kept.where(exp.not_(hit))
            body = exp.union(kept, part, distinct=False)
        return exp.Create(
            this=exp.Table(this=ident(self.name)),
            kind="VIEW",
            replace=True,
            properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
            expression=body,
        )

    def open(self, dates: list | None) -> exp.Insert | None:
        """Copy the published rows of ``dates`` (None: every date) not opened yet into the
        part; the statement, or None when there is nothing to copy. Marks them opened: the
        view must be recreated after the statement ran."""
        if self.every:
            return None
        q = exp.select("*").from_(ident(self.published))
        if dates is None:
            if self.opened:
                hit = exp.func("COALESCE", in_dates(list(self.opened)), exp.false())
                q = q.where(exp.not_(hit))
            self.every = True
        else:
            new = [d for d in dates if d not in self.opened]
            if not new:
                return None
            q = q.where(in_dates(new))
            self.opened.update(new)
        return exp.Insert(this=exp.Table(this=ident(self.part)), expression=q)

    def retarget(self, stmt: exp.Expression) -> exp.Expression:
        """``stmt`` with its target table renamed to the part, keeping the name as an alias
        (an ``INSERT`` takes none) so qualified columns still resolve."""
        out = stmt.copy()
        target = out.this.this if isinstance(out.this, exp.Schema) else out.this
        assert isinstance(target, exp.Table) and target.name == self.name, stmt
        target.set("this", ident(self.part))
        target.set("db", None)
        target.set("catalog", None)
        if not isinstance(out, exp.Insert) and not target.alias:
            target.set("alias", exp.TableAlias(this=ident(self.name)))
        return out


def opens_dates(stmt: exp.Expression) -> str:
    """What ``stmt`` needs opened first: ``"none"`` (an appending INSERT), ``"selected"``
    (a DELETE: the dates of the rows it selects) or ``"all"`` (anything else)."""
    if isinstance(stmt, exp.Insert) and not (
        stmt.args.get("conflict") or stmt.args.get("alternative")
    ):
        return "none"
    if isinstance(stmt, exp.Delete) and not (stmt.args.get("using") or stmt.args.get("returning")):
        return "selected"
    return "all"


__all__ = ["PART", "PARTITION", "DateShadow", "opens_dates"]
