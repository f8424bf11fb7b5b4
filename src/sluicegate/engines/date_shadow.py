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

A ``DELETE`` opens its dates without the rows it is about to remove: only the published
rows it spares are copied. A rerun replaces its date whole (``DELETE … WHERE
_logical_date = d``), so none of that date's published rows are copied only to be deleted
by the next statement (at 1M lines a day, ~1.6 s of a rerun's publish).

The shadow also keeps the dates its statements touched (engines/touched_dates.py), where
the engine looks for the changed dates at commit.
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
    (``every``: all of them), and the dates its statements touched (``touched``; None once
    a statement touched it in a way not tracked: compare the table whole at commit)."""

    name: str
    published: str
    opened: set[Any] = field(default_factory=set)
    every: bool = False
    touched: set[Any] | None = field(default_factory=set)

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
                kept = kept.where(exp.not_(_holds(in_dates(list(self.opened)))))
            body = exp.union(kept, part, distinct=False)
        return exp.Create(
            this=exp.Table(this=ident(self.name)),
            kind="VIEW",
            replace=True,
            properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
            expression=body,
        )

    def open(self, dates: list | None, deleting: exp.Delete | None = None) -> list[exp.Expression]:
        """Open ``dates`` (None: every date) not opened yet: the statements that copy their
        published rows into the part and recreate the view (none when every one was open).

        ``deleting``: the ``DELETE`` about to run on the part; the rows it selects are not
        copied (none at all when it removes whole dates). Its condition is evaluated twice
        (by the copy, then by the ``DELETE``), so it must give the same answer both times:
        no subquery (it could read the table, which the open changes), no volatile
        function. Otherwise the dates are copied whole."""
        if self.every:
            return []
        if dates is None:
            q = exp.select("*").from_(ident(self.published))
            if self.opened:
                q = q.where(exp.not_(_holds(in_dates(list(self.opened)))))
            self.every = True
        else:
            new = [d for d in dates if d not in self.opened]
            if not new:
                return []
            self.opened.update(new)
            spared = _spared(deleting)
            source = exp.Table(this=ident(self.published))
            if spared is not None:
                alias = deleting.this.alias or self.name
                source.set("alias", exp.TableAlias(this=ident(alias)))
            q = exp.select("*").from_(source).where(in_dates(new))
            if spared is not None:
                if spared == exp.false():
                    return [self.view()]  # it removes every row of these dates
                q = q.where(spared)
        return [exp.Insert(this=exp.Table(this=ident(self.part)), expression=q), self.view()]

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


def _holds(condition: exp.Expression) -> exp.Expression:
    """``condition`` is true (not false, not NULL): a row a ``WHERE`` selects."""
    return exp.func("COALESCE", condition, exp.false())


def _spared(delete: exp.Delete | None) -> exp.Expression | None:
    """The rows ``delete`` keeps, as a condition (FALSE: none of the dates it selects; None:
    cannot be said without reading the table, or no ``DELETE``)."""
    if delete is None:
        return None
    where = delete.args.get("where")
    if where is None or _whole_dates(where.this):
        return exp.false()
    if where.find(exp.Query, *_VOLATILE) is not None:
        return None
    return exp.not_(_holds(where.this.copy()))


#: functions that may answer differently when the condition is evaluated again (by the
#: copy, then by the ``DELETE``); any function sqlglot does not know may be one of them
_VOLATILE = (exp.Rand, exp.Randn, exp.Uuid, exp.Anonymous)


def _whole_dates(condition: exp.Expression) -> bool:
    """``condition`` is ``_logical_date = <literal>`` or ``_logical_date IN (<literals>)``:
    it selects every row of the dates it names (a rerun's ``DELETE``)."""
    if isinstance(condition, exp.EQ):
        column, values = condition.this, [condition.expression]
    elif isinstance(condition, exp.In) and not condition.args.get("query"):
        column, values = condition.this, condition.expressions
    else:
        return False
    return (
        isinstance(column, exp.Column)
        and column.name == PARTITION
        and all(_literal(v) for v in values)
    )


def _literal(value: exp.Expression) -> bool:
    """A literal, or a literal cast (``CAST('2026-01-01' AS DATE)``)."""
    if isinstance(value, exp.Cast):
        value = value.this
    return isinstance(value, exp.Literal)


__all__ = ["PART", "DateShadow"]
