"""What a ``serve:`` target loads, table by table, and the checks behind it (pure, no engine).

Each servable name maps to a :class:`ServedTable`: where its rows come from in the
warehouse, its key in PostgreSQL, its *scope* (which target rows one load replaces) and
the columns a change is not judged by. The defaults, chosen so a rerun rewrites nothing:

=================  ===========================================  ===================
table              key                                          scope
=================  ===========================================  ===================
dimension          natural key + ``version`` (SCD2)             whole table
fact               ``_logical_date, _source_file, _source_line``  the logical dates
                                                                loaded (replaced)
mart               ``key:`` if given, else every column (a set) whole table
quality facts      ``run_id, check_id`` (wall-clock columns      whole table
                   are not compared: a rerun re-stamps them)
``dlq_summary``    ``source_table, reason, status``             whole table
=================  ===========================================  ===================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from ..contract.models import Contract
from ..contract.serve_spec import ServeTarget
from ..contract.suggest import closest
from .facts import FACT_COLUMNS, FACT_KEY, WALL_CLOCK_COLUMNS
from .model.schema import dimension_columns, fact_columns
from .render import col, ident, lit

DLQ_SUMMARY = "dlq_summary"
#: The DLQ summary's columns: one row per source table, reason and status, with its rows.
DLQ_SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source_table", "VARCHAR"),
    ("reason", "VARCHAR"),
    ("status", "VARCHAR"),
    ("rows", "BIGINT"),
)
FACT_SCOPE = "_logical_date"
FACT_KEY_COLUMNS = ("_logical_date", "_source_file", "_source_line")


@dataclass(frozen=True)
class ServedTable:
    """One table of a target: read ``query`` from the warehouse, load into ``target``."""

    name: str  # the warehouse (servable) name
    target: str  # the table name in PostgreSQL
    kind: str  # dimension | fact | mart | facts | dlq_summary
    key: tuple[str, ...]  # empty: every column (the table is synced as a set)
    columns: tuple[str, ...] | None  # known before the run (None: only the engine knows)
    types: dict[str, str] = field(default_factory=dict)  # contract SQL types, where declared
    scope: str | None = None  # a column: a load replaces only the rows of the values it has
    ignore: frozenset[str] = frozenset()  # not compared when deciding whether a row changed

    def query(self, contract: Contract, scope_values: list[str] | None = None) -> exp.Select:
        """The warehouse query whose rows this table is loaded from."""
        if self.kind == DLQ_SUMMARY:
            return dlq_summary_select(contract.outputs.quarantine)
        q = exp.select(exp.Star()).from_(exp.to_table(self.name))
        if self.kind == "facts":  # a target's own serve:<target> status is not served back
            q = q.where(exp.Not(this=exp.Like(this=col("check_id"), expression=lit("serve:%"))))
        if self.scope and scope_values is not None and not scope_values:
            q = q.where(exp.false())  # no date to load: the shape only (creates the table)
        elif self.scope and scope_values is not None:
            q = q.where(
                exp.In(
                    this=exp.cast(col(self.scope), "VARCHAR"),
                    expressions=[lit(v) for v in scope_values],
                )
            )
        return q


def dlq_summary_select(inbox: str) -> exp.Select:
    """Rows of the DLQ inbox per source table, reason and status (what operators watch)."""
    cols = [
        exp.alias_(col("_dlq_source_table"), "source_table"),
        exp.alias_(col("_reason"), "reason"),
        exp.alias_(col("_dlq_status"), "status"),
    ]
    return (
        exp.select(*cols, exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), "rows"))
        .from_(exp.to_table(inbox))
        .group_by(col("_dlq_source_table"), col("_reason"), col("_dlq_status"))
    )


def servable(contract: Contract) -> dict[str, ServedTable]:
    """Every name a ``serve:`` target may list, with its default key, scope and columns."""
    out: dict[str, ServedTable] = {}
    m = contract.model
    if m is not None:
        for name, dim in m.dimensions.items():
            cols = dimension_columns(dim, contract)
            out[name] = ServedTable(
                name, name, "dimension", (*dim.key, "version"), tuple(c.name for c in cols),
                {c.name: c.type for c in cols if c.type},
            )  # fmt: skip
        for name, fact in m.facts.items():
            cols = fact_columns(fact, contract)
            out[name] = ServedTable(
                name, name, "fact", FACT_KEY_COLUMNS, tuple(c.name for c in cols),
                {c.name: c.type for c in cols if c.type}, scope=FACT_SCOPE,
            )  # fmt: skip
        marts = _mart_columns(contract)
        for name in m.marts:
            out[name] = ServedTable(name, name, "mart", (), marts.get(name))
    facts = contract.outputs.facts
    out[facts] = ServedTable(
        facts, facts, "facts", FACT_KEY, tuple(n for n, _ in FACT_COLUMNS),
        dict(FACT_COLUMNS), ignore=WALL_CLOCK_COLUMNS,
    )  # fmt: skip
    out[DLQ_SUMMARY] = ServedTable(
        DLQ_SUMMARY, DLQ_SUMMARY, DLQ_SUMMARY, ("source_table", "reason", "status"),
        tuple(n for n, _ in DLQ_SUMMARY_COLUMNS), dict(DLQ_SUMMARY_COLUMNS),
    )  # fmt: skip
    return out


def _mart_columns(contract: Contract) -> dict[str, tuple[str, ...] | None]:
    from .model.checks import compiled_marts
    from .model.marts import MartError

    try:
        return {m.name: tuple(m.columns) or None for m in compiled_marts(contract)}
    except MartError:  # reported by the model's own checks
        return {}


def target_tables(contract: Contract, target: ServeTarget) -> list[ServedTable]:
    """The tables of ``target`` with its renames and keys applied (a checked contract)."""
    known = servable(contract)
    out = []
    for t in target.tables:
        base = known[t.table]
        key = tuple(t.key) if t.key is not None else base.key
        out.append(
            ServedTable(
                base.name, t.target, base.kind, key, base.columns, base.types, base.scope,
                base.ignore,
            )
        )  # fmt: skip
    return out


Add = Callable[..., None]


def check_serve(contract: Contract, add: Add) -> None:
    """Report unknown tables and key columns (with a did-you-mean) and name clashes."""
    if not contract.serve:
        return
    known = servable(contract)
    names: set[str] = set()
    for i, target in enumerate(contract.serve):
        if target.name in names:
            add(("serve", i, "name"), f"target name '{target.name}' is used twice")
        names.add(target.name)
        targets: set[str] = set()
        for j, t in enumerate(target.tables):
            base = known.get(t.table)
            if base is None:
                add(
                    ("serve", i, "tables", j),
                    f"unknown table '{t.table}'; servable: {', '.join(sorted(known))}",
                    closest(t.table, known),
                )
                continue
            if t.target in targets:
                add(("serve", i, "tables", j), f"table '{t.target}' is served twice")
            targets.add(t.target)
            for k, c in enumerate(t.key or []):
                if base.columns is not None and c not in base.columns:
                    add(
                        ("serve", i, "tables", j, "key", k),
                        f"unknown column '{c}' of '{t.table}'",
                        closest(c, base.columns),
                    )
            if t.key is not None and base.scope and base.scope not in t.key:
                add(
                    ("serve", i, "tables", j, "key"),
                    f"the key of fact '{t.table}' must include {base.scope} "
                    "(a load replaces a logical date's rows)",
                )


def ident_table(schema: str, table: str) -> exp.Table:
    return exp.Table(this=ident(table), db=ident(schema))
