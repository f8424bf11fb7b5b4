"""Load a contract and check what it means: rules, dedupe, freshness, outputs, model.

Shape errors are pydantic's job (contract/models.py) and the file's syntax the loader's
(contract/loader.py); the checks here compile each rule and the model against the schema,
so they live in ``compile``. :func:`load_contract` is the one entry point every command
and test uses: parse, then check, every problem in one :class:`ContractError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sqlglot import exp
from sqlglot.errors import ParseError

from ..contract.loader import LoadedContract, format_path, parse_contract
from ..contract.partitions import partition_names
from ..contract.suggest import closest
from ..contract.tokens import SecretProvider, env_secret_provider
from ..errors import ContractError, ContractProblem
from .model.checks import check_model
from .output_names import check_output_names
from .rules import RuleError, compile_rules
from .serve_plan import check_serve


def load_contract(
    path: str | Path,
    *,
    variables: Mapping[str, str] | None = None,
    logical_date: str | None = None,
    secret_provider: SecretProvider = env_secret_provider,
    check_semantics: bool = True,
) -> LoadedContract:
    """Load and validate a contract file.

    Args:
        path: the YAML contract.
        variables: ``--var k=v`` overrides; they win over the contract's ``vars:``.
        logical_date: ISO date for ``${logical_date}`` (default: today, UTC).
        secret_provider: resolves ``${secret:scope/key}``.
        check_semantics: also compile the rules against the schema.

    Raises:
        ContractError: with every problem found, each with key path and line.
    """
    loaded = parse_contract(
        path, variables=variables, logical_date=logical_date, secret_provider=secret_provider
    )
    if check_semantics:
        try:
            check_contract(loaded)
        except ContractError as exc:
            raise loaded.located(exc) from None
    return loaded


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
    check_output_names(c, add)  # reserved and derived table names (compile/output_names.py)
    check_model(c, visible, add)  # model: section (compile/model/checks.py)
    check_serve(c, add)  # serve: section (compile/serve_plan.py)
    check_serve(c, add)  # serve: section (compile/serve_plan.py)
    if problems:
        raise ContractError(str(loaded.path), problems)
