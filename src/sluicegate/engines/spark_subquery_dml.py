"""UPDATE / DELETE whose condition is ``key IN (SELECT …)``, rewritten as a MERGE for Delta.

Delta Lake on Spark refuses subqueries in UPDATE and DELETE conditions
(``DELTA_UNSUPPORTED_SUBQUERY``), while the engine-neutral DLQ lifecycle targets its rows
exactly that way (``_dlq_sk IN (SELECT _dlq_sk FROM target)``), which DuckDB and delta-rs
accept. Rather than teach the DLQ a Spark dialect, the Spark engine turns such a statement
into the equivalent MERGE — the keys (made distinct, so a row matches at most once) are
the source, the IN's left side is the join, the rest of the condition guards the WHEN.
"""

from __future__ import annotations

from sqlglot import exp

from ..errors import SluiceError

#: names the rewrite introduces; a statement using them already would be ambiguous
KEYS_ALIAS = "_sg_keys"
KEY_COLUMN = "_sg_key"


def _conjuncts(cond: exp.Expression) -> list[exp.Expression]:
    return list(cond.flatten()) if isinstance(cond, exp.And) else [cond]


def _keyed_in(part: exp.Expression) -> bool:
    return isinstance(part, exp.In) and part.args.get("query") is not None


def merge_for_subquery_dml(stmt: exp.Expression) -> exp.Expression:
    """``stmt`` unchanged unless it is an UPDATE/DELETE with one ``x IN (SELECT k …)``
    conjunct; then the MERGE that changes exactly the same rows."""
    if not isinstance(stmt, exp.Update | exp.Delete):
        return stmt
    where = stmt.args.get("where")
    if where is None:
        return stmt
    parts = _conjuncts(where.this.unnest())
    keyed = [p for p in parts if _keyed_in(p)]
    rest = [p for p in parts if not _keyed_in(p)]
    if not keyed:
        if where.find(exp.Subquery, exp.Select) is not None:
            raise SluiceError("Spark with Delta cannot run an UPDATE/DELETE with this subquery")
        return stmt
    if len(keyed) > 1 or any(p.find(exp.Subquery, exp.Select) for p in rest):
        raise SluiceError("Spark with Delta takes at most one IN (SELECT …) in UPDATE/DELETE")
    (key_in,) = keyed
    query = key_in.args["query"]
    select = (query.this if isinstance(query, exp.Subquery) else query).copy()
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        raise SluiceError("IN (SELECT …) in UPDATE/DELETE must select exactly one column")
    select.set("expressions", [exp.alias_(select.expressions[0], KEY_COLUMN)])
    select = select.distinct()
    target = stmt.this.copy()
    then: exp.Expression = (
        exp.Update(expressions=[e.copy() for e in stmt.expressions])
        if isinstance(stmt, exp.Update)
        else exp.var("DELETE")
    )
    return exp.Merge(
        this=target,
        using=exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(KEYS_ALIAS))),
        on=exp.EQ(this=key_in.this.copy(), expression=exp.column(KEY_COLUMN, table=KEYS_ALIAS)),
        whens=exp.Whens(
            expressions=[
                exp.When(
                    matched=True,
                    condition=exp.and_(*[p.copy() for p in rest]) if rest else None,
                    then=then,
                )
            ]
        ),
    )
