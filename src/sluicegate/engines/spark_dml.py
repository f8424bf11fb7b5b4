"""DELETE, UPDATE and MERGE as SELECTs of a table's new content (for Parquet on Spark).

Plain Parquet tables cannot be changed in place, so the Spark engine runs every change
the way a copy-on-write table format does: it computes the table's *new content* with a
query, writes it to a staging location, and swaps it in at commit. This module turns one
DML statement into that query, plus a query for the ``_logical_date`` partitions it
changes (only those are rewritten). It is pure sqlglot, so the rewrite can be checked
against DuckDB's own DML on the same data (tests/engines/conformance/test_dml_rewrite.py).

Semantics (the standard's, as DuckDB implements them):

* ``DELETE … WHERE c`` keeps the rows where ``c`` is not TRUE (FALSE and NULL stay).
* ``UPDATE … SET x = e WHERE c`` changes the rows where ``c`` is TRUE.
* ``MERGE``: target rows are LEFT JOINed to the source; the first WHEN clause whose
  condition holds acts (``WHEN MATCHED`` / ``WHEN NOT MATCHED BY SOURCE``: UPDATE or
  DELETE); unmatched source rows are inserted by the first applicable
  ``WHEN NOT MATCHED [BY TARGET]`` clause. A target row matched by several source rows
  is an error in the standard; here it would appear once per match (every MERGE
  sluicegate issues joins on a key that is unique in its source).

INSERT needs no rewrite (its rows are appended), see ``spark_engine``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from ..compile.render import col, ident

PARTITION = "_logical_date"
_S, _T, _ACT = "__sg_s", "__sg_t", "__sg_action"


@dataclass(frozen=True)
class Rewrite:
    """The new content of the target table and the partitions it touches."""

    table: str
    content: exp.Query
    touched: exp.Query | None
    """Rows (one column, ``_logical_date``) naming every partition that changes;
    None when the table is not partitioned (the whole table is rewritten)."""


def target_name(stmt: exp.Expression) -> str:
    """The table a DML statement changes."""
    t = stmt.this
    if isinstance(t, exp.Schema):
        t = t.this
    if not isinstance(t, exp.Table):
        raise NotImplementedError(f"cannot find the target table of {type(stmt).__name__}")
    return t.name


def _target(stmt: exp.Expression) -> tuple[exp.Table, str]:
    t = stmt.this
    alias = t.alias or t.name
    table = exp.Table(this=ident(t.name), alias=exp.TableAlias(this=ident(alias)))
    return table, alias


def _not_true(cond: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Is(this=exp.paren(cond.copy()), expression=exp.true()))


def _true(cond: exp.Expression) -> exp.Expression:
    return exp.Is(this=exp.paren(cond.copy()), expression=exp.true())


def _cast(e: exp.Expression, types: Mapping[str, exp.DataType], name: str) -> exp.Expression:
    t = types.get(name)
    return exp.Cast(this=e, to=t.copy()) if t is not None else e


def _touched(
    columns: Sequence[str], source: exp.Expression, where: exp.Expression | None
) -> exp.Select | None:
    if PARTITION not in columns:
        return None
    q = exp.select(exp.alias_(col(PARTITION), ident(PARTITION))).from_(source.copy())
    return q.where(where) if where is not None else q


def rewrite_delete(stmt: exp.Delete, columns: Sequence[str]) -> Rewrite:
    """``DELETE FROM t WHERE c`` → ``SELECT * FROM t WHERE c IS NOT TRUE``."""
    table, _alias = _target(stmt)
    where = stmt.args.get("where")
    cond = where.this if where is not None else exp.true()
    content = exp.select(*[col(c) for c in columns]).from_(table).where(_not_true(cond))
    return Rewrite(table.name, content, _touched(columns, table, _true(cond)))


def rewrite_update(
    stmt: exp.Update, columns: Sequence[str], types: Mapping[str, exp.DataType]
) -> Rewrite:
    """``UPDATE t SET x = e WHERE c`` → ``SELECT CASE WHEN c IS TRUE THEN e ELSE x END …``."""
    if stmt.args.get("from") is not None or stmt.args.get("from_") is not None:
        raise NotImplementedError("UPDATE … FROM is not supported on the Spark engine")
    table, alias = _target(stmt)
    where = stmt.args.get("where")
    cond = where.this if where is not None else exp.true()
    sets = {s.this.name: s.expression for s in stmt.expressions}
    unknown = set(sets) - set(columns)
    if unknown:
        raise ValueError(f"UPDATE {table.name}: no column {sorted(unknown)}")
    out = []
    for c in columns:
        if c in sets:
            value = exp.Case(
                ifs=[exp.If(this=_true(cond), true=_cast(sets[c].copy(), types, c))],
                default=col(c, alias),
            )
            out.append(exp.alias_(value, ident(c)))
        else:
            out.append(exp.alias_(col(c, alias), ident(c)))
    content = exp.select(*out).from_(table)
    touched = _touched(columns, table, _true(cond))
    if touched is not None and PARTITION in sets:
        moved = (
            exp.select(
                exp.alias_(_cast(sets[PARTITION].copy(), types, PARTITION), ident(PARTITION))
            )
            .from_(table.copy())
            .where(_true(cond))
        )
        touched = exp.union(touched, moved, distinct=False)
    return Rewrite(table.name, content, touched)


def _flagged(source: exp.Expression, alias: str, flag: str) -> exp.Subquery:
    """``(SELECT *, TRUE AS flag FROM source) AS alias``: tells a matched join row apart."""
    if isinstance(source, exp.Subquery):
        inner: exp.Expression = exp.Subquery(
            this=source.this.copy(), alias=exp.TableAlias(this=ident(alias))
        )
    else:
        inner = exp.Table(this=ident(source.name), alias=exp.TableAlias(this=ident(alias)))
    q = exp.select(exp.Star(), exp.alias_(exp.true(), ident(flag))).from_(inner)
    return exp.Subquery(this=q, alias=exp.TableAlias(this=ident(alias)))


def rewrite_merge(
    stmt: exp.Merge, columns: Sequence[str], types: Mapping[str, exp.DataType]
) -> Rewrite:
    """``MERGE`` → the kept/updated target rows ``UNION ALL`` the inserted source rows."""
    t = stmt.this
    t_alias = t.alias or t.name
    using = stmt.args["using"]
    s_alias = using.alias or using.name
    on = stmt.args["on"]
    whens = stmt.args["whens"].expressions
    target = _flagged(exp.Table(this=ident(t.name)), t_alias, _T)
    source = _flagged(using, s_alias, _S)
    matched = exp.Not(this=exp.Is(this=col(_S, s_alias), expression=exp.null()))

    # target side: which clause acts on each target row (0 = none)
    t_clauses = [
        (i, w) for i, w in enumerate(whens, 1) if w.args.get("matched") or w.args.get("source")
    ]
    ifs = []
    for i, w in t_clauses:
        base = matched.copy() if w.args.get("matched") else exp.Not(this=matched.copy())
        cond = w.args.get("condition")
        ifs.append(
            exp.If(
                this=exp.and_(base, _true(cond)) if cond is not None else base,
                true=exp.Literal.number(i),
            )
        )
    action = exp.Case(ifs=ifs, default=exp.Literal.number(0)) if ifs else exp.Literal.number(0)
    joined = (
        exp.select(
            *[col(c, t_alias) for c in columns],
            *[
                exp.alias_(_update_value(w, c), ident(f"__sg_u{i}_{j}"))
                for i, w in t_clauses
                if isinstance(w.args.get("then"), exp.Update)
                for j, c in enumerate(columns)
                if c in _set_names(w)
            ],
            exp.alias_(action, ident(_ACT)),
        )
        .from_(target)
        .join(source, on=on.copy(), join_type="LEFT")
    )
    deletes = [i for i, w in t_clauses if _is_delete(w.args.get("then"))]
    kept_cols = []
    for j, c in enumerate(columns):
        branches = [
            exp.If(
                this=exp.EQ(this=col(_ACT), expression=exp.Literal.number(i)),
                true=_cast(col(f"__sg_u{i}_{j}"), types, c),
            )
            for i, w in t_clauses
            if isinstance(w.args.get("then"), exp.Update) and c in _set_names(w)
        ]
        value = exp.Case(ifs=branches, default=_cast(col(c), types, c)) if branches else col(c)
        kept_cols.append(exp.alias_(value, ident(c)))
    j_alias = exp.TableAlias(this=ident("__sg_j"))
    kept = exp.select(*kept_cols).from_(exp.Subquery(this=joined, alias=j_alias))
    if deletes:
        kept = kept.where(
            exp.Not(
                this=exp.In(this=col(_ACT), expressions=[exp.Literal.number(i) for i in deletes])
            )
        )

    # source side: unmatched source rows, inserted by the first applicable clause
    s_clauses = [
        (i, w)
        for i, w in enumerate(whens, 1)
        if not w.args.get("matched") and not w.args.get("source")
    ]
    content: exp.Query = kept
    inserted = None
    if s_clauses:
        unmatched = (
            exp.select(exp.Column(this=exp.Star(), table=ident(s_alias)))
            .from_(source.copy())
            .join(target.copy(), on=on.copy(), join_type="LEFT")
            .where(exp.Is(this=col(_T, t_alias), expression=exp.null()))
        )
        ins_ifs = []
        for i, w in s_clauses:
            cond = w.args.get("condition")
            ins_ifs.append(
                exp.If(
                    this=_true(cond) if cond is not None else exp.true(), true=exp.Literal.number(i)
                )
            )
        u_alias = exp.TableAlias(this=ident(s_alias))
        chosen = exp.select(exp.Star(), exp.alias_(exp.Case(ifs=ins_ifs), ident(_ACT))).from_(
            exp.Subquery(this=unmatched, alias=u_alias)
        )
        values = []
        for c in columns:
            branches = [
                exp.If(
                    this=exp.EQ(this=col(_ACT), expression=exp.Literal.number(i)),
                    true=_insert_value(w, c),
                )
                for i, w in s_clauses
                if _insert_value(w, c) is not None
            ]
            value = exp.Case(ifs=branches) if branches else exp.null()
            values.append(exp.alias_(_cast(value, types, c), ident(c)))
        inserted = (
            exp.select(*values)
            .from_(exp.Subquery(this=chosen, alias=exp.TableAlias(this=ident(s_alias))))
            .where(exp.Not(this=exp.Is(this=col(_ACT), expression=exp.null())))
        )
        content = exp.union(kept, inserted, distinct=False)

    touched = None
    if PARTITION in columns:
        changed: exp.Query = (
            exp.select(exp.alias_(col(PARTITION), ident(PARTITION)))
            .from_(exp.Subquery(this=joined.copy(), alias=j_alias.copy()))
            .where(exp.GT(this=col(_ACT), expression=exp.Literal.number(0)))
        )
        moved = exp.select(exp.alias_(col(PARTITION), ident(PARTITION))).from_(
            exp.Subquery(this=kept.copy(), alias=exp.TableAlias(this=ident("__sg_k")))
        )
        if any(PARTITION in _set_names(w) for _i, w in t_clauses):
            changed = exp.union(changed, moved, distinct=False)
        if inserted is not None:
            new_rows = exp.select(exp.alias_(col(PARTITION), ident(PARTITION))).from_(
                exp.Subquery(this=inserted.copy(), alias=exp.TableAlias(this=ident("__sg_i")))
            )
            changed = exp.union(changed, new_rows, distinct=False)
        touched = changed
    return Rewrite(t.name, content, touched)


def _set_names(w: exp.When) -> list[str]:
    then = w.args.get("then")
    if isinstance(then, exp.Update):
        return [s.this.name for s in then.expressions]
    return []


def _update_value(w: exp.When, c: str) -> exp.Expression:
    for s in w.args["then"].expressions:
        if s.this.name == c:
            return s.expression.copy()
    raise KeyError(c)


def _insert_value(w: exp.When, c: str) -> exp.Expression | None:
    then = w.args.get("then")
    if not isinstance(then, exp.Insert):
        return None
    names = [e.name for e in then.this.expressions] if then.this is not None else None
    values = then.expression.expressions
    if names is None:
        raise NotImplementedError("MERGE … INSERT without a column list")
    if c not in names:
        return None
    return values[names.index(c)].copy()


def _is_delete(then: exp.Expression | None) -> bool:
    return isinstance(then, exp.Var) and then.name.upper() == "DELETE"


def rewrite(
    stmt: exp.Expression, columns: Sequence[str], types: Mapping[str, exp.DataType]
) -> Rewrite:
    """The :class:`Rewrite` of one DELETE, UPDATE or MERGE statement."""
    if isinstance(stmt, exp.Delete):
        return rewrite_delete(stmt, columns)
    if isinstance(stmt, exp.Update):
        return rewrite_update(stmt, columns, types)
    if isinstance(stmt, exp.Merge):
        return rewrite_merge(stmt, columns, types)
    raise NotImplementedError(f"no Parquet rewrite for {type(stmt).__name__}")


def static_partitions(stmt: exp.Expression, columns: Sequence[str]) -> list[str] | None:
    """The ``_logical_date`` values a statement can touch, when its text says (no job needed).

    A DELETE or UPDATE whose WHERE has a top-level conjunct ``_logical_date = <literal>``
    touches that date at most; an INSERT whose query projects a literal ``_logical_date``
    inserts that date only. Anything else returns None (the engine runs the ``touched``
    query). Values are the literal's text, e.g. ``'2024-01-01'``.
    """
    if isinstance(stmt, exp.Insert):
        query = stmt.expression
        if not isinstance(query, exp.Select) or any(
            isinstance(e, exp.Star) for e in query.expressions
        ):
            return None
        target = stmt.this
        names = (
            [e.name for e in target.expressions]
            if isinstance(target, exp.Schema)
            else list(columns)
        )
        if PARTITION not in names or len(names) != len(query.expressions):
            return None
        value = _literal_date(query.expressions[names.index(PARTITION)])
        return [value] if value is not None else None
    if isinstance(stmt, exp.Delete | exp.Update):
        if isinstance(stmt, exp.Update) and PARTITION in {s.this.name for s in stmt.expressions}:
            return None
        where = stmt.args.get("where")
        if where is None:
            return None
        for conjunct in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
            if isinstance(conjunct, exp.EQ):
                sides = (conjunct.this, conjunct.expression)
                for a, b in (sides, sides[::-1]):
                    if isinstance(a, exp.Column) and a.name == PARTITION:
                        value = _literal_date(b)
                        if value is not None:
                            return [value]
    return None


def _literal_date(e: exp.Expression) -> str | None:
    """The text of ``'2024-01-01'``, ``CAST('2024-01-01' AS DATE)`` or ``DATE '2024-01-01'``."""
    while isinstance(e, exp.Alias | exp.Paren):
        e = e.this
    if isinstance(e, exp.Cast) and e.to.is_type("date"):
        e = e.this
    text = None
    if isinstance(e, exp.Literal) and e.is_string:
        text = e.this
    elif isinstance(e, exp.Func) and e.sql_name().upper() == "DATE":
        if isinstance(e.this, exp.Literal):
            text = e.this.this
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        return None
