"""Parse and check each rule's ``expect``; rewrite reference membership to a semi-join.

A rule is one SQL boolean expression over the row's declared columns. The one allowed
subquery is ``col IN (SELECT key FROM <reference>)``; it is rewritten to a flag computed
from a LEFT JOIN on the reference's DISTINCT non-NULL keys, so duplicate keys never
multiply rows and a NULL in the reference never turns FALSE into NULL.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ..contract.suggest import closest
from . import functions
from .render import col, ident
from .rule_errors import describe_parse_error, not_a_condition

NONDETERMINISTIC_CLASSES = tuple(
    c
    for c in (
        getattr(exp, n, None)
        for n in (
            "Rand",
            "Randn",
            "Uuid",
            "CurrentDate",
            "CurrentTime",
            "CurrentTimestamp",
            "CurrentDatetime",
            "CurrentTimestampLTZ",
            "Localtime",
            "Localtimestamp",
            "UnixSeconds",
        )
    )
    if c is not None
)
NONDETERMINISTIC_NAMES = {
    "random",
    "rand",
    "randn",
    "uuid",
    "gen_random_uuid",
    "now",
    "today",
    "current_timestamp",
    "current_date",
    "nextval",
    "currval",
    "setseed",
    "get_current_time",
    "unix_timestamp",
    "monotonically_increasing_id",
    "spark_partition_id",
    "input_file_name",
}


#: Statement nodes that may never appear anywhere in a rule or a --where predicate.
STATEMENT_CLASSES = tuple(
    c
    for c in (
        getattr(exp, n, None)
        for n in (
            "DDL",
            "DML",
            "Command",
            "Set",
            "Drop",
            "Alter",
            "TruncateTable",
            "Attach",
            "Detach",
            "Pragma",
            "Use",
            "Install",
            "Describe",
            "Show",
            "Grant",
            "Commit",
            "Rollback",
            "Transaction",
            "Create",
            "Insert",
            "Update",
            "Delete",
            "Merge",
            "Copy",
        )
    )
    if isinstance(c, type)
)


class RuleError(Exception):
    """A rule cannot be compiled. ``suggestion`` is a did-you-mean, if any."""

    def __init__(self, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.suggestion = suggestion


@dataclass(frozen=True)
class Membership:
    """``column IN (SELECT key FROM reference)``, computed once per (column, reference, key)."""

    alias: str
    column: str
    reference: str
    key: str


@dataclass
class CompiledRule:
    """A checked rule: its original text and its expression over row columns + membership flags."""

    index: int
    name: str
    text: str
    expr: exp.Expression
    on_fail: str = "quarantine"
    owner: str | None = None
    version: int = 1
    fail_above: float | None = None
    description: str | None = None
    columns: list[str] = field(default_factory=list)

    @property
    def flag(self) -> str:
        """Name of the pass-flag column of this rule in the routed relation."""
        return f"_p{self.index}"

    @property
    def routes(self) -> bool:
        """Does a failure move the row to quarantine? (``warn`` keeps it clean.)"""
        return self.on_fail in ("quarantine", "abort")


def parse_predicate(text: str, what: str = "expect") -> exp.Expression:
    """Parse one SQL boolean expression; refuse statements and multiple statements.

    A contract is compiled more than once per command (validation, then the plan or the
    run), so parses are memoized by text; each caller gets its own copy to rewrite.
    """
    return _parse_predicate(text, what).copy()


#: Parentheses deeper than this are refused before parsing: the parser and every tree walk
#: recurse, and 5,000 nested brackets exhausted Python's stack (a RecursionError).
MAX_NESTING = 100
MAX_PREDICATE_CHARS = 20_000


def _nesting(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        if ch in "([":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]":
            depth -= 1
    return deepest


@functools.lru_cache(maxsize=4096)
def _parse_predicate(text: str, what: str) -> exp.Expression:
    if len(text) > MAX_PREDICATE_CHARS:
        raise RuleError(f"{what} is {len(text)} characters long; at most {MAX_PREDICATE_CHARS}")
    if _nesting(text) > MAX_NESTING:
        raise RuleError(f"{what} nests brackets more than {MAX_NESTING} deep; simplify it")
    try:
        statements = [s for s in sqlglot.parse(text, read="duckdb") if s is not None]
    except (ParseError, TokenError) as exc:
        raise RuleError(describe_parse_error(text, exc, what)) from None
    except RecursionError:
        raise RuleError(f"{what} is nested too deeply; simplify it") from None
    if not statements:
        raise RuleError(f"{what} is empty")
    if len(statements) > 1:
        raise RuleError(f"{what} must be one expression, found {len(statements)} statements")
    tree = statements[0]
    # An allowlist: in sqlglot 30 DROP, ALTER, ATTACH, PRAGMA … are not exp.DDL subclasses.
    if not isinstance(tree, exp.Condition) or any(
        isinstance(n, STATEMENT_CLASSES) for n in tree.walk()
    ):
        found = next((n for n in tree.walk() if isinstance(n, STATEMENT_CLASSES)), tree)
        raise RuleError(f"{what} must be a boolean expression, not a {found.key.upper()} statement")
    return tree


def check_expression(
    tree: exp.Expression,
    columns: Mapping[str, object],
    *,
    allow_membership_in: Mapping[str, Mapping[str, object]] | None = None,
    what: str = "expect",
) -> list[tuple[exp.In, str, str]]:
    """Validate ``tree``; returns the membership subqueries found as (node, reference, key).

    Raises RuleError for aggregates, windows, non-deterministic functions, other
    subqueries, qualified or unknown columns.
    """
    allow = allow_membership_in or {}
    memberships: list[tuple[exp.In, str, str]] = []
    inside_membership: set[int] = set()
    for node in tree.walk():
        if isinstance(node, exp.In) and node.args.get("query") is not None:
            ref, key = _membership(node, allow, what)
            memberships.append((node, ref, key))
            for sub in node.args["query"].walk():
                inside_membership.add(id(sub))
    for node in tree.walk():
        if id(node) in inside_membership:
            continue
        if isinstance(node, exp.Window):
            raise RuleError(f"{what} may not use window functions (found {node.sql()[:60]})")
        if isinstance(node, exp.AggFunc):
            raise RuleError(
                f"{what} may not use aggregate functions (found {node.sql()[:60]}); "
                "rules judge one row at a time"
            )
        if isinstance(node, NONDETERMINISTIC_CLASSES) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in NONDETERMINISTIC_NAMES
        ):
            raise RuleError(
                f"{what} may not use non-deterministic function {node.sql()[:40]}: "
                "a rerun must route every row the same way"
            )
        if isinstance(node, exp.Query | exp.Subquery):
            raise RuleError(
                f"{what} may not contain a subquery other than "
                "`col IN (SELECT key FROM <reference>)`"
            )
        if (
            isinstance(node, exp.Func)
            and not isinstance(node, exp.Exists)
            and type(node).__name__ not in functions.ALLOWED
        ):
            raise RuleError(
                f"{what} may not call {functions.describe(node)}(): only portable scalar "
                "functions are allowed (docs/security.md lists them)"
            )
        if isinstance(node, exp.Star):
            raise RuleError(f"{what} may not use *")
        if isinstance(node, exp.Placeholder | exp.Parameter):
            raise RuleError(f"{what} may not use parameters")
        if isinstance(node, exp.Column):
            if node.table:
                raise RuleError(
                    f"{what}: column '{node.sql()}' must not be qualified with a table name"
                )
            _resolve_column(node, columns, what)
    return memberships


def _resolve_column(node: exp.Column, columns: Mapping[str, object], what: str) -> None:
    name = node.name
    if name in columns:
        return
    lower = {c.lower(): c for c in columns}
    if name.lower() in lower:
        node.set("this", ident(lower[name.lower()]))
        return
    raise RuleError(f"{what}: unknown column '{name}'", closest(name, columns))


def _membership(
    node: exp.In, allow: Mapping[str, Mapping[str, object]], what: str
) -> tuple[str, str]:
    query = node.args["query"]
    select = query.this if isinstance(query, exp.Subquery) else query
    shape = (
        "`col IN (SELECT key FROM <reference>)` is the only subquery allowed, with a plain "
        "column on the left, one key column and one reference table, nothing else"
    )
    if not isinstance(select, exp.Select) or not isinstance(node.this, exp.Column):
        raise RuleError(f"{what}: {shape}")
    extras = [k for k, v in select.args.items() if v and k not in ("expressions", "from_", "from")]
    from_ = select.args.get("from_") or select.args.get("from")
    if extras or from_ is None or len(select.expressions) != 1:
        raise RuleError(f"{what}: {shape}")
    tbl = from_.this
    key_col = select.expressions[0]
    if not isinstance(tbl, exp.Table) or tbl.db or not isinstance(key_col, exp.Column):
        raise RuleError(f"{what}: {shape}")
    ref = tbl.name
    if ref not in allow:
        raise RuleError(f"{what}: unknown reference '{ref}'", closest(ref, allow))
    key = key_col.name
    if key not in allow[ref]:
        raise RuleError(
            f"{what}: reference '{ref}' has no column '{key}'", closest(key, allow[ref])
        )
    return ref, key


def compile_rules(
    rules: list,
    columns: Mapping[str, object],
    references: Mapping[str, Mapping[str, object]],
    *,
    on_error: Callable[[int, RuleError], None] | None = None,
) -> tuple[list[CompiledRule], list[Membership]]:
    """Compile every rule; membership tests on the same (column, reference, key) share one join.

    ``on_error(rule_index, error)`` collects problems so all are reported at once.
    """
    compiled: list[CompiledRule] = []
    by_key: dict[tuple[str, str, str], Membership] = {}
    for i, rule in enumerate(rules):
        try:
            tree = parse_predicate(rule.expect)
            if (value := not_a_condition(tree, rule.expect)) is not None:
                raise RuleError(value)  # `amount >> 0` parses, but is not TRUE or FALSE
            found = check_expression(tree, columns, allow_membership_in=references)
        except RuleError as exc:
            if on_error is None:
                raise
            on_error(i, exc)
            continue
        for node, ref, key in found:
            column = node.this.name
            k = (column, ref, key)
            if k not in by_key:
                by_key[k] = Membership(f"_m{len(by_key)}", column, ref, key)
            m = by_key[k]
            if node is tree:
                tree = membership_flag(m)
            else:
                node.replace(membership_flag(m))
        compiled.append(
            CompiledRule(
                index=i,
                name=rule.name,
                text=rule.expect,
                expr=tree,
                on_fail=rule.on_fail,
                owner=rule.owner,
                version=rule.version,
                fail_above=rule.fail_above,
                description=rule.description,
                columns=sorted({c.name for c in tree.find_all(exp.Column) if not c.table}),
            )
        )
    return compiled, list(by_key.values())


def membership_flag(m: Membership) -> exp.Expression:
    """NULL when the row's value is NULL, else whether the DISTINCT key join found a match."""
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=col(m.column), expression=exp.null()), true=exp.null()),
        ],
        default=exp.Not(this=exp.Is(this=col("_k", m.alias), expression=exp.null())),
    )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:200]
