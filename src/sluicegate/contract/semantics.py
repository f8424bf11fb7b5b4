"""Checks that span sections: rules against the schema, dedupe and freshness columns.

Shape errors are pydantic's job (``models.py``); this module knows what the names mean.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import ParseError

from ..compile.model.checks import check_model
from ..compile.rules import RuleError, compile_rules
from ..errors import ContractError, ContractProblem
from .loader import LoadedContract, format_path
from .models import Source
from .suggest import closest


def check_contract(loaded: LoadedContract) -> None:
    """Raise one ContractError listing every semantic problem."""
    c = loaded.contract
    problems: list[ContractProblem] = []

    def add(key: tuple, message: str, suggestion: str | None = None) -> None:
        problems.append(ContractProblem(format_path(key), message, loaded.line(*key), suggestion))

    columns = c.source.columns
    partition_columns = partition_names(c.source)
    visible = {**columns, **dict.fromkeys(partition_columns, None)}
    references = {name: ref.columns for name, ref in c.references.items()}

    def rule_error(i: int, err: RuleError) -> None:
        add(("rules", i, "expect"), f"rule '{c.rules[i].name}': {err.message}", err.suggestion)

    compile_rules(c.rules, visible, references, on_error=rule_error)

    seen: dict[str, int] = {}
    for i, rule in enumerate(c.rules):
        if rule.name in seen:
            add(
                ("rules", i, "name"),
                f"rule name '{rule.name}' is used twice (also rules[{seen[rule.name]}])",
            )
        seen[rule.name] = i
        if rule.name in ("corrupt_record", "type_mismatch", "missing_required"):
            add(("rules", i, "name"), f"'{rule.name}' is a built-in reason; choose another name")

    if c.dedupe:
        for i, k in enumerate(c.dedupe.key):
            if k not in visible:
                add(("dedupe", "key", i), f"unknown column '{k}'", closest(k, visible))
        for i, o in enumerate(c.dedupe.order_by):
            try:
                ordered = exp.maybe_parse(o, into=exp.Ordered, dialect="duckdb")
            except ParseError:
                add(
                    ("dedupe", "order_by", i),
                    f"'{o}' is not `column [ASC|DESC] [NULLS FIRST|LAST]`",
                )
                continue
            name = ordered.this.name if isinstance(ordered.this, exp.Column) else None
            if name is None or name not in visible:
                add(
                    ("dedupe", "order_by", i),
                    f"unknown column '{name or o}'",
                    closest(name or o, visible),
                )
    if c.source.freshness and c.source.freshness.column not in visible:
        f = c.source.freshness.column
        add(("source", "freshness", "column"), f"unknown column '{f}'", closest(f, visible))
    for i, p in enumerate(c.outputs.partition_by or []):
        if p not in visible and p != "_logical_date":
            add(("outputs", "partition_by", i), f"unknown column '{p}'", closest(p, visible))
    if len({c.outputs.clean, c.outputs.quarantine, c.outputs.duplicates, c.outputs.facts}) < 4:
        add(("outputs",), "clean, quarantine, duplicates and facts must be four different tables")
    check_model(c, visible, add)  # model: section (compile/model/checks.py)
    if problems:
        raise ContractError(str(loaded.path), problems)


def partition_names(source: Source) -> list[str]:
    """Partition columns of a source: ``source.partitions``, then ``name=`` folders in its path.

    Only these become columns (VARCHAR): the schema is declared, never inferred. Hive
    folders found in the data but not declared are reported as drift.
    """
    names = list(source.partitions)
    return names + [p for p in hive_partition_names(source.path) if p not in names]


def hive_partition_names(path: str) -> list[str]:
    """Column names contributed by Hive-style folders written in the path (``month=*``)."""
    names = []
    for part in path.replace("\\", "/").split("/"):
        if "=" in part:
            names.append(part.split("=", 1)[0])
    return names
