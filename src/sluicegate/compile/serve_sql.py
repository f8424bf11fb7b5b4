"""The PostgreSQL statements of one serve, as sqlglot trees (rendered with ``postgres``).

One load of one table, inside the target's single transaction:

1. ``COPY stage FROM STDIN`` — the rows, into a temporary table shaped like the target;
2. ``DELETE`` the target rows of the load's scope whose key the stage no longer has;
3. ``INSERT … SELECT … ON CONFLICT (key) DO UPDATE … WHERE ROW(t.*) IS DISTINCT FROM
   ROW(EXCLUDED.*)`` — new keys are inserted, changed rows updated, and an unchanged row is
   not touched at all (its ``xmin`` stays: a rerun rewrites nothing).

A table without a key (a mart that declares none) is synced as a set instead: rows with no
identical stage row are deleted, stage rows with no identical target row inserted.
Types: :func:`pg_type` maps a contract's SQL type to the PostgreSQL type created, and
:func:`format_type` gives the text ``pg_catalog.format_type`` reports for it, so an
existing table is compared with what the load needs (:func:`type_clashes`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp

from .render import col, ident, lit

DIALECT = "postgres"
#: The served-ledger table in each target schema: which scope values (a fact's logical
#: dates) were loaded with which run ids, written in the load's transaction.
LEDGER = "_sluicegate_served"
LEDGER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("table_name", "VARCHAR"),
    ("scope_value", "VARCHAR"),
    ("signature", "VARCHAR"),
    ("run_id", "VARCHAR"),
    ("served_at", "TIMESTAMP"),
)
LEDGER_KEY = ("table_name", "scope_value")


def qualified(schema: str, table: str, alias: str | None = None) -> exp.Table:
    t = exp.Table(this=ident(table), db=ident(schema))
    if alias:
        t.set("alias", exp.TableAlias(this=ident(alias)))
    return t


# -- types -------------------------------------------------------------------------------

_FORMAT = {
    exp.DataType.Type.BIGINT: "bigint",
    exp.DataType.Type.INT: "integer",
    exp.DataType.Type.SMALLINT: "smallint",
    exp.DataType.Type.DOUBLE: "double precision",
    exp.DataType.Type.FLOAT: "real",
    exp.DataType.Type.VARCHAR: "text",  # postgres renders VARCHAR without length as TEXT
    exp.DataType.Type.TEXT: "text",
    exp.DataType.Type.BOOLEAN: "boolean",
    exp.DataType.Type.DATE: "date",
    exp.DataType.Type.TIMESTAMP: "timestamp without time zone",
    exp.DataType.Type.TIMESTAMPTZ: "timestamp with time zone",
}
_WIDER = {
    exp.DataType.Type.TINYINT: "SMALLINT",
    exp.DataType.Type.UTINYINT: "SMALLINT",
    exp.DataType.Type.USMALLINT: "INTEGER",
    exp.DataType.Type.UINT: "BIGINT",
    exp.DataType.Type.INT128: "DECIMAL(38, 0)",
    exp.DataType.Type.TIMESTAMPNTZ: "TIMESTAMP",
    exp.DataType.Type.UBIGINT: "DECIMAL(20, 0)",
    exp.DataType.Type.TIMESTAMP_S: "TIMESTAMP",
    exp.DataType.Type.TIMESTAMP_MS: "TIMESTAMP",
    exp.DataType.Type.TIMESTAMP_NS: "TIMESTAMP",
    exp.DataType.Type.DATETIME: "TIMESTAMP",
}


class TypeMappingError(ValueError):
    """A column type PostgreSQL serving has no mapping for."""


def pg_type(sql_type: str, dialect: str = "duckdb") -> exp.DataType:
    """The PostgreSQL column type for a contract/engine SQL type (``DECIMAL(10,2)`` → same).

    >>> pg_type("DECIMAL(10,2)").sql("postgres")
    'DECIMAL(10, 2)'
    """
    dt = exp.DataType.build(sql_type, dialect=dialect)
    if dt.this in _WIDER:
        dt = exp.DataType.build(_WIDER[dt.this])
    if dt.this == exp.DataType.Type.DECIMAL and not dt.expressions:
        dt = exp.DataType.build("DECIMAL(38, 9)")
    if dt.this != exp.DataType.Type.DECIMAL and dt.this not in _FORMAT:
        raise TypeMappingError(f"type {sql_type} has no PostgreSQL mapping")
    return dt


def format_type(dt: exp.DataType) -> str:
    """What ``pg_catalog.format_type`` prints for a column created with ``dt``."""
    if dt.this == exp.DataType.Type.DECIMAL:
        p, s = (int(e.name) for e in dt.expressions) if len(dt.expressions) == 2 else (38, 0)
        return f"numeric({p},{s})"
    return _FORMAT[dt.this]


_NUMERIC = re.compile(r"^numeric\((\d+),(\d+)\)$")


def type_clashes(
    existing: Sequence[tuple[str, str]], wanted: Sequence[tuple[str, str]]
) -> list[str]:
    """Differences between an existing table's (column, format_type) and the load's.

    A wider ``numeric`` (same scale, more digits) holds the load's values and is accepted;
    anything else that differs — a missing or extra column, another type — is a clash.
    """
    have = dict(existing)
    out = []
    for name, want in wanted:
        got = have.pop(name, None)
        if got is None:
            out.append(f"column {name} ({want}) is missing")
        elif got != want and not _fits(got, want):
            out.append(f"column {name} is {got}, the load needs {want}")
    out += [f"column {name} ({t}) is not in the served table" for name, t in have.items()]
    return out


def _fits(got: str, want: str) -> bool:
    g, w = _NUMERIC.match(got), _NUMERIC.match(want)
    return bool(g and w and g.group(2) == w.group(2) and int(g.group(1)) >= int(w.group(1)))


# -- DDL ---------------------------------------------------------------------------------


def create_schema(schema: str) -> exp.Create:
    return exp.Create(this=exp.Table(this=ident(schema)), kind="SCHEMA", exists=True)


def create_table(
    schema: str, table: str, columns: Sequence[tuple[str, exp.DataType]], key: Sequence[str]
) -> exp.Create:
    """``CREATE TABLE IF NOT EXISTS`` with the mapped types and the key as primary key."""
    defs: list[exp.Expression] = [
        exp.ColumnDef(
            this=ident(n),
            kind=t,
            constraints=[exp.ColumnConstraint(kind=exp.NotNullColumnConstraint())]
            if n in key
            else [],
        )
        for n, t in columns
    ]
    if key:
        defs.append(exp.PrimaryKey(expressions=[ident(k) for k in key]))
    return exp.Create(
        this=exp.Schema(this=qualified(schema, table), expressions=defs), kind="TABLE", exists=True
    )


def table_columns(schema: str, table: str) -> exp.Select:
    """(column, format_type) of an existing table, in column order; no rows if absent."""
    a, c, n = "a", "c", "n"
    return (
        exp.select(
            col("attname", a),
            exp.Anonymous(this="format_type", expressions=[col("atttypid", a), col("atttypmod", a)]),
        )
        .from_(exp.Table(this=ident("pg_attribute"), db=ident("pg_catalog"), alias=exp.TableAlias(this=ident(a))))
        .join(
            exp.Table(this=ident("pg_class"), db=ident("pg_catalog"), alias=exp.TableAlias(this=ident(c))),
            on=exp.EQ(this=col("attrelid", a), expression=col("oid", c)),
        )
        .join(
            exp.Table(this=ident("pg_namespace"), db=ident("pg_catalog"), alias=exp.TableAlias(this=ident(n))),
            on=exp.EQ(this=col("relnamespace", c), expression=col("oid", n)),
        )
        .where(
            exp.and_(
                exp.EQ(this=col("nspname", n), expression=lit(schema)),
                exp.EQ(this=col("relname", c), expression=lit(table)),
                exp.GT(this=col("attnum", a), expression=lit(0)),
                exp.Not(this=col("attisdropped", a)),
            )
        )
        .order_by(col("attnum", a))
    )  # fmt: skip


def create_stage(stage: str, schema: str, table: str) -> exp.Create:
    """A temporary table with the target's exact column types (COPY parses into them)."""
    return exp.Create(
        this=exp.Table(this=ident(stage)),
        kind="TABLE",
        expression=exp.select(exp.Star()).from_(qualified(schema, table)).where(exp.false()),
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )


def drop_stage(stage: str) -> exp.Drop:
    return exp.Drop(tables=[exp.Table(this=ident(stage))], kind="TABLE", exists=True)


def copy_in(stage: str, columns: Sequence[str]) -> exp.Copy:
    """``COPY stage (cols) FROM STDIN WITH (FORMAT CSV)`` (psycopg streams the rows)."""
    return exp.Copy(
        this=exp.Schema(this=exp.Table(this=ident(stage)), expressions=[ident(c) for c in columns]),
        kind=True,
        files=[exp.to_identifier("STDIN")],
        params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("CSV"))],
    )


# -- the load ------------------------------------------------------------------------------


def _match(key: Sequence[str], a: str, b: str, *, null_safe: bool) -> exp.Expression:
    eqs = [
        exp.NullSafeEQ(this=col(k, a), expression=col(k, b))
        if null_safe
        else exp.EQ(this=col(k, a), expression=col(k, b))
        for k in key
    ]
    return exp.and_(*eqs)


def _scope(scope: str | None, values: Sequence[str] | None) -> exp.Expression | None:
    if scope is None or values is None:
        return None
    if not values:
        return exp.false()
    return exp.In(this=exp.cast(col(scope, "t"), "VARCHAR"), expressions=[lit(v) for v in values])


def delete_missing(
    schema: str,
    table: str,
    stage: str,
    key: Sequence[str],
    columns: Sequence[str],
    *,
    scope: str | None = None,
    scope_values: Sequence[str] | None = None,
) -> exp.Delete:
    """Delete the rows of the scope whose key (or, keyless, whole row) the stage lacks."""
    match = _match(key or columns, "s", "t", null_safe=not key)
    missing = exp.Not(
        this=exp.Exists(
            this=exp.select(lit(1)).from_(exp.Table(this=ident(stage), alias=exp.TableAlias(this=ident("s")))).where(match)
        )
    )  # fmt: skip
    where = _scope(scope, scope_values)
    return exp.Delete(
        this=qualified(schema, table, "t"),
        where=exp.Where(this=missing if where is None else exp.and_(where, missing)),
    )


def upsert(
    schema: str,
    table: str,
    stage: str,
    columns: Sequence[str],
    key: Sequence[str],
    ignore: frozenset[str] = frozenset(),
) -> exp.Insert:
    """INSERT the stage; on a key conflict update only when a compared column differs."""
    select = exp.select(*[col(c) for c in columns]).from_(exp.Table(this=ident(stage)))
    target = exp.Schema(this=qualified(schema, table, "t"), expressions=[ident(c) for c in columns])
    if not key:  # a set: insert the rows the target does not have yet
        same = _match(columns, "t", "s", null_safe=True)
        select = (
            exp.select(*[col(c, "s") for c in columns])
            .from_(exp.Table(this=ident(stage), alias=exp.TableAlias(this=ident("s"))))
            .where(exp.Not(this=exp.Exists(this=exp.select(lit(1)).from_(qualified(schema, table, "t")).where(same))))
        )  # fmt: skip
        return exp.Insert(this=exp.Schema(this=qualified(schema, table), expressions=[ident(c) for c in columns]), expression=select)  # fmt: skip
    rest = [c for c in columns if c not in key]
    compared = [c for c in rest if c not in ignore]
    conflict_keys = [exp.Ordered(this=col(k), nulls_first=False) for k in key]
    if not compared:
        conflict = exp.OnConflict(conflict_keys=conflict_keys, action=exp.var("DO NOTHING"))
    else:
        excluded = "excluded"
        conflict = exp.OnConflict(
            conflict_keys=conflict_keys,
            action=exp.var("DO UPDATE"),
            expressions=[exp.EQ(this=col(c), expression=col(c, excluded)) for c in rest],
            where=exp.Where(
                this=exp.NullSafeNEQ(
                    this=exp.Anonymous(this="ROW", expressions=[col(c, "t") for c in compared]),
                    expression=exp.Anonymous(this="ROW", expressions=[col(c, excluded) for c in compared]),
                )
            ),
        )  # fmt: skip
    return exp.Insert(this=target, expression=select, conflict=conflict)


def ledger_rows(schema: str, table: str) -> exp.Select:
    """(scope_value, signature) already served for ``table``."""
    return (
        exp.select(col("scope_value"), col("signature"))
        .from_(qualified(schema, LEDGER))
        .where(exp.EQ(this=col("table_name"), expression=lit(table)))
    )


def ledger_upsert(schema: str, rows: Sequence[dict[str, str]]) -> exp.Insert:
    """Record served scope values; an unchanged signature rewrites nothing."""
    names = [n for n, _ in LEDGER_COLUMNS]
    values = exp.Values(
        expressions=[
            exp.Tuple(expressions=[exp.cast(lit(r.get(n)), t) for n, t in LEDGER_COLUMNS])
            for r in rows
        ]
    )
    excluded = "excluded"
    return exp.Insert(
        this=exp.Schema(this=qualified(schema, LEDGER, "t"), expressions=[ident(n) for n in names]),
        expression=values,
        conflict=exp.OnConflict(
            conflict_keys=[exp.Ordered(this=col(k), nulls_first=False) for k in LEDGER_KEY],
            action=exp.var("DO UPDATE"),
            expressions=[
                exp.EQ(this=col(n), expression=col(n, excluded))
                for n in names
                if n not in LEDGER_KEY
            ],
            where=exp.Where(
                this=exp.NullSafeNEQ(this=col("signature", "t"), expression=col("signature", excluded))
            ),
        ),
    )  # fmt: skip


def create_ledger(schema: str) -> exp.Create:
    return create_table(schema, LEDGER, [(n, pg_type(t)) for n, t in LEDGER_COLUMNS], LEDGER_KEY)
