"""Marts: named SELECTs over the model, checked before anything runs.

A mart is one SQL query (DuckDB-flavoured, like rules) that reads only model tables —
dimensions, facts and other marts. At load time each mart is parsed with sqlglot, its
tables are resolved (an unknown table is a located contract error with a did-you-mean),
its dependencies on other marts are ordered topologically (a cycle is a contract error
naming it), and its columns are resolved with sqlglot's qualifier against the model's
columns (an unknown column is an error with a did-you-mean). Output columns must be
named (``AS``) so a mart has the same column names on every engine.

Marts are rebuilt in dependency order inside the publish transaction, so a mart always
agrees with the dimensions and facts committed with it.
"""

from __future__ import annotations

import graphlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError

from ...contract.suggest import closest
from .. import functions
from ..rules import NONDETERMINISTIC_CLASSES, NONDETERMINISTIC_NAMES

READ_DIALECT = "duckdb"


class MartError(Exception):
    """A mart cannot be used; ``suggestion`` is a did-you-mean, if any."""

    def __init__(self, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.suggestion = suggestion


@dataclass
class CompiledMart:
    """A checked mart: its query, the model tables it reads and its output columns."""

    name: str
    query: exp.Query
    reads: list[str]
    columns: list[str] = field(default_factory=list)

    def copy(self) -> CompiledMart:
        """A mart with a tree of its own (rendering may change a tree)."""
        return CompiledMart(self.name, self.query.copy(), list(self.reads), list(self.columns))


def parse_mart(sql: str) -> exp.Query:
    """Parse one SELECT (or set operation); anything else is refused."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=READ_DIALECT) if s is not None]
    except (ParseError, TokenError) as exc:
        first = str(exc).strip().splitlines()[0][:200]
        raise MartError(f"not valid SQL: {first}") from None
    if len(statements) != 1:
        raise MartError(f"must be exactly one SELECT, found {len(statements)} statements")
    q = statements[0]
    if not isinstance(q, exp.Query):
        raise MartError(f"must be a SELECT, not a {q.key.upper()} statement")
    for node in q.walk():
        if isinstance(node, NONDETERMINISTIC_CLASSES) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in NONDETERMINISTIC_NAMES
        ):
            raise MartError(
                f"may not use non-deterministic function {node.sql()[:40]}: "
                "a rerun must rebuild the same mart"
            )
        if isinstance(node, exp.Placeholder | exp.Parameter):
            raise MartError("may not use parameters")
        if isinstance(node, exp.Table) and _is_table_function(node):
            raise MartError("may read only model tables (no table functions)")
    # The specific refusals above come first: they say why; the allow-list says only "not listed".
    bad = functions.disallowed(q, functions.ALLOWED | functions.MART_ONLY)
    if bad is not None:
        raise MartError(
            f"may not call {functions.describe(bad)}(): only portable scalar functions, "
            "aggregates and ranking windows are allowed (docs/security.md)"
        )
    return q


def _is_table_function(t: exp.Table) -> bool:
    """``FROM read_parquet(...)``: a table whose source is a call, not a name."""
    return (
        not t.name and isinstance(t.this, exp.Expression) and not isinstance(t.this, exp.Identifier)
    )


def cte_names(q: exp.Expression) -> set[str]:
    return {cte.alias_or_name for cte in q.find_all(exp.CTE)}


def read_tables(q: exp.Query, allowed: Mapping[str, object]) -> list[str]:
    """The model tables ``q`` reads, in first-seen order; unknown ones raise MartError."""
    ctes = cte_names(q)
    out: list[str] = []
    for t in q.find_all(exp.Table):
        if _is_table_function(t):
            raise MartError("may read only model tables (no table functions)")
        if t.db or t.catalog:
            raise MartError(f"table '{t.sql()}' must not be qualified: marts read model tables")
        name = t.name
        if name in ctes and not t.db:
            continue
        if name not in allowed:
            raise MartError(
                f"unknown table '{name}'; marts read the model's dimensions, facts and marts",
                closest(name, allowed),
            )
        if name not in out:
            out.append(name)
    return out


def mart_order(
    marts: Mapping[str, list[str]],
) -> list[str]:
    """Marts in dependency order (``marts`` maps a mart to the tables it reads).

    Raises MartError naming the cycle when marts depend on each other in a loop.
    """
    graph = {m: [r for r in reads if r in marts] for m, reads in marts.items()}
    try:
        return list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        raise MartError("marts depend on each other in a cycle: " + " -> ".join(cycle)) from None


_UNRESOLVED = (
    re.compile(r"Unknown column: (\S+)"),
    re.compile(r"Column '(.+?)' could not be resolved"),
)


def check_columns(
    name: str, q: exp.Query, schema: Mapping[str, Mapping[str, str]], reads: list[str]
) -> list[str]:
    """Resolve every column of ``q`` against ``schema``; return the output column names."""
    from sqlglot.optimizer.qualify import qualify  # the optimizer: only for marts (~50 ms)

    try:
        qualified = qualify(
            q.copy(), schema={k: dict(v) for k, v in schema.items()}, dialect=READ_DIALECT
        )
    except OptimizeError as exc:
        text = str(exc)
        for pattern in _UNRESOLVED:
            m = pattern.search(text)
            if m:
                bad = m.group(1).strip('"`')
                candidates = [c for t in reads for c in schema.get(t, {})]
                raise MartError(f"unknown column '{bad}'", closest(bad, candidates)) from None
        raise MartError(text.splitlines()[0]) from None
    outer = q
    while isinstance(outer, exp.SetOperation):
        outer = outer.left
    if isinstance(outer, exp.Select):
        for proj in outer.expressions:
            if not isinstance(proj, exp.Alias | exp.Column) and not isinstance(proj, exp.Star):
                raise MartError(
                    f"output column '{proj.sql(dialect=READ_DIALECT)[:60]}' needs a name (add AS <name>)"
                )
    columns = list(qualified.named_selects)
    dupes = sorted({c for c in columns if columns.count(c) > 1})
    if dupes:
        raise MartError(f"output column names must be unique: {', '.join(dupes)}")
    return columns


#: Marts that compiled without a problem, by their SQL and the model's schema: a run
#: compiles them when its contract is checked and again at publish, and a ``watch``
#: reloads its contract every batch (qualifying three marts costs ~0.05 s each time).
_COMPILED: dict[tuple, list[CompiledMart]] = {}
_COMPILED_MAX = 16


def compile_marts(
    marts: Mapping[str, str],
    model_schema: Mapping[str, Mapping[str, str]],
    *,
    on_error: Callable[[str, MartError], None] | None = None,
) -> list[CompiledMart]:
    """Check every mart and return them in build order.

    ``marts`` maps a mart name to its SQL; ``model_schema`` maps every dimension and fact
    to ``{column: type}``. ``on_error(mart, error)`` collects problems so all are
    reported at once; without it the first problem raises. The result depends on these
    two only, so one that had no problem is remembered (callers never change it).
    """
    key = (
        tuple(marts.items()),
        tuple((t, tuple(cols.items())) for t, cols in model_schema.items()),
    )
    done = _COMPILED.get(key)
    if done is not None:  # copies: a caller may render (and so change) its trees
        return [m.copy() for m in done]
    problems: list[str] = []

    def fail(mart: str, err: MartError) -> None:
        problems.append(mart)
        if on_error is None:
            raise err
        on_error(mart, err)

    allowed = {*model_schema, *marts}
    parsed: dict[str, tuple[exp.Query, list[str]]] = {}
    for mart, sql in marts.items():
        try:
            q = parse_mart(sql)
            reads = read_tables(q, allowed)
            if mart in reads:
                raise MartError(f"mart '{mart}' reads itself")
        except MartError as err:
            fail(mart, err)
            continue
        parsed[mart] = (q, reads)
    try:
        order = mart_order({m: reads for m, (_q, reads) in parsed.items()})
    except MartError as err:
        fail(next(iter(parsed)), err)
        return []
    schema: dict[str, dict[str, str]] = {k: dict(v) for k, v in model_schema.items()}
    compiled: list[CompiledMart] = []
    broken: set[str] = set(marts) - set(parsed)
    for mart in order:
        q, reads = parsed[mart]
        if broken & set(reads):
            broken.add(mart)  # its input is already reported; don't pile on
            continue
        try:
            columns = check_columns(mart, q, schema, reads)
        except MartError as err:
            broken.add(mart)
            fail(mart, err)
            continue
        schema[mart] = dict.fromkeys(columns, "UNKNOWN")
        compiled.append(CompiledMart(mart, q, reads, columns))
    if not problems:
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        _COMPILED[key] = [m.copy() for m in compiled]
    return compiled
