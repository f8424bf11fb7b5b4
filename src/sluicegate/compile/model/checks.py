"""What the names of a ``model:`` section mean: every problem, located, at load time.

Called by ``compile/contract_check.py`` with its ``add(key, message, suggestion)`` collector,
so model problems are reported together with the rest of the contract's, each with its
key path, line and a did-you-mean. A contract that passes these checks builds: every
column a dimension, fact or mart names exists with a compatible type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp

from ...contract.coltypes import parse_type
from ...contract.model_spec import Fact, FactExport, Model
from ...contract.models import Contract
from ...contract.suggest import closest
from ..rules import RuleError, check_expression, parse_predicate
from .marts import CompiledMart, MartError, compile_marts
from .schema import (
    DIM_SYSTEM,
    EXPORT_PARTITIONS,
    dimension_columns,
    export_path,
    export_time,
    fact_columns,
    fact_source_columns,
    reference_type,
    time_kind,
)

Add = Callable[..., None]


def output_tables(contract: Contract) -> set[str]:
    o = contract.outputs
    return {o.clean, o.quarantine, o.duplicates, o.facts, o.outbox}


def compile_derive(fact: Fact, columns: Mapping[str, object]) -> dict[str, exp.Expression]:
    """Parse and check each ``derive`` expression like a rule (row-level, deterministic).

    Raises RuleError; ``columns`` are the clean columns the expression may read.
    """
    out: dict[str, exp.Expression] = {}
    for name, text in fact.derive.items():
        tree = parse_predicate(text, what=f"derive.{name}")
        found = check_expression(tree, columns, allow_membership_in={}, what=f"derive.{name}")
        if found:  # pragma: no cover - no references are allowed, so none can be found
            raise RuleError(f"derive.{name} may not use a subquery")
        out[name] = tree
    return out


def model_schema(contract: Contract) -> dict[str, dict[str, str]]:
    """``{table: {column: type}}`` of every dimension and fact (types ``UNKNOWN`` if unknown)."""
    m = contract.model
    if m is None:
        return {}
    out: dict[str, dict[str, str]] = {}
    for name, dim in m.dimensions.items():
        out[name] = {c.name: c.type or "UNKNOWN" for c in dimension_columns(dim, contract)}
    for name, fact in m.facts.items():
        out[name] = {c.name: c.type or "UNKNOWN" for c in fact_columns(fact, contract)}
    return out


def compiled_marts(contract: Contract) -> list[CompiledMart]:
    """The marts in build order (raises MartError: call after the contract is checked)."""
    m = contract.model
    if m is None or not m.marts:
        return []
    return compile_marts({n: mt.sql for n, mt in m.marts.items()}, model_schema(contract))


def check_model(contract: Contract, visible: Mapping[str, object], add: Add) -> None:
    """Report every problem of ``contract.model``; ``visible`` are the source's columns."""
    m: Model | None = contract.model
    if m is None:
        return
    taken = output_tables(contract)
    for section in ("dimensions", "facts", "marts"):
        for name in getattr(m, section):
            if name in taken:
                add(
                    ("model", section, name),
                    f"'{name}' is already an output table (outputs:); choose another name",
                )
    dims_ok = _check_dimensions(contract, add)
    facts_ok = _check_facts(contract, visible, dims_ok, add)
    if m.marts and dims_ok and facts_ok:

        def mart_error(name: str, err: MartError) -> None:
            add(("model", "marts", name), f"mart '{name}': {err.message}", err.suggestion)

        compile_marts(
            {n: mt.sql for n, mt in m.marts.items()}, model_schema(contract), on_error=mart_error
        )


def _check_dimensions(contract: Contract, add: Add) -> bool:
    ok = True
    for name, dim in contract.model.dimensions.items():
        at = ("model", "dimensions", name)
        ref = contract.references.get(dim.reference)
        if ref is None:
            add(
                (*at, "reference"),
                f"unknown reference '{dim.reference}'",
                closest(dim.reference, contract.references),
            )
            ok = False
            continue
        cols = ref.columns
        for i, k in enumerate(dim.key):
            if k not in cols:
                add(
                    (*at, "key", i),
                    f"reference '{dim.reference}' has no column '{k}'",
                    closest(k, cols),
                )
                ok = False
        if dim.effective not in cols:
            add(
                (*at, "effective"),
                f"reference '{dim.reference}' has no column '{dim.effective}'",
                closest(dim.effective, cols),
            )
            ok = False
        elif time_kind(cols[dim.effective].type) is None:
            add(
                (*at, "effective"),
                f"effective column '{dim.effective}' is {cols[dim.effective].type}; "
                "it must be an integer, DATE or TIMESTAMP time",
            )
            ok = False
        seen: set[str] = set()
        for i, a in enumerate(dim.attributes):
            if a not in cols:
                add(
                    (*at, "attributes", i),
                    f"reference '{dim.reference}' has no column '{a}'",
                    closest(a, cols),
                )
                ok = False
            elif a in dim.key or a == dim.effective:
                add(
                    (*at, "attributes", i),
                    f"'{a}' is the key or the effective time, not an attribute",
                )
                ok = False
            elif a in DIM_SYSTEM:
                add(
                    (*at, "attributes", i),
                    f"'{a}' is a column every dimension adds; rename it in the reference",
                )
                ok = False
            elif a in seen:
                add((*at, "attributes", i), f"attribute '{a}' is listed twice")
                ok = False
            seen.add(a)
    return ok


def _check_facts(
    contract: Contract, visible: Mapping[str, object], dims_ok: bool, add: Add
) -> bool:
    ok = True
    m = contract.model
    for name, fact in m.facts.items():
        at = ("model", "facts", name)
        for i, c in enumerate(fact.columns or []):
            if c not in visible:
                add((*at, "columns", i), f"unknown column '{c}'", closest(c, visible))
                ok = False
        try:
            compile_derive(fact, visible)
        except RuleError as err:
            add((*at, "derive"), err.message, err.suggestion)
            ok = False
        for d in fact.derive:
            if d in fact_source_columns(fact, contract):
                add((*at, "derive", d), f"derived column '{d}' is already a column of the fact")
                ok = False
        names: set[str] = set()
        for i, j in enumerate(fact.joins):
            jat = (*at, "joins", i)
            if j.name in names:
                add((*jat, "alias"), f"two joins are named '{j.name}'; give one an alias")
                ok = False
            names.add(j.name)
            dim = m.dimensions.get(j.dimension)
            if dim is None:
                add(
                    (*jat, "dimension"),
                    f"unknown dimension '{j.dimension}'",
                    closest(j.dimension, m.dimensions),
                )
                ok = False
                continue
            if len(j.on) != len(dim.key):
                add(
                    (*jat, "on"),
                    f"dimension '{j.dimension}' has key {dim.key}; 'on' must name "
                    f"{len(dim.key)} fact column(s) in that order",
                )
                ok = False
            for k, (fc, dk) in enumerate(zip(j.on, dim.key, strict=False)):
                if fc not in visible:
                    add((*jat, "on", k), f"unknown column '{fc}'", closest(fc, visible))
                    ok = False
                elif dims_ok and not _same_kind(
                    _type_of(contract, fc), reference_type(contract, dim.reference, dk)
                ):
                    add(
                        (*jat, "on", k),
                        f"'{fc}' ({_type_of(contract, fc)}) cannot match key '{dk}' "
                        f"({reference_type(contract, dim.reference, dk)})",
                    )
                    ok = False
            if j.as_of not in visible:
                add((*jat, "as_of"), f"unknown column '{j.as_of}'", closest(j.as_of, visible))
                ok = False
            elif dims_ok:
                ft = _type_of(contract, j.as_of)
                dt_ = reference_type(contract, dim.reference, dim.effective)
                if time_kind(ft) is None or time_kind(ft) != time_kind(dt_):
                    add(
                        (*jat, "as_of"),
                        f"as_of column '{j.as_of}' is {ft or 'a partition folder (text)'} but "
                        f"'{j.dimension}' is effective by {dim.effective} ({dt_}); "
                        "both must be integer, both DATE or both TIMESTAMP",
                    )
                    ok = False
            for k, a in enumerate(j.attributes or []):
                if a not in dim.attributes:
                    add(
                        (*jat, "attributes", k),
                        f"'{a}' is not an attribute of '{j.dimension}'",
                        closest(a, dim.attributes),
                    )
                    ok = False
        if not (ok and dims_ok):
            continue  # the columns below depend on what is already reported
        cols = [c.name for c in fact_columns(fact, contract)]
        dupes = sorted({c for c in cols if cols.count(c) > 1})
        if dupes:
            add(
                (*at, "joins"),
                f"fact '{name}' would have duplicate columns {', '.join(dupes)}; "
                "set a join's prefix: (attributes) or alias: (version/unknown columns)",
            )
            ok = False
        ok = _check_export(contract, name, fact, cols, add) and ok
    return ok


def _check_export(contract: Contract, name: str, fact: Fact, cols: list[str], add: Add) -> bool:
    at = ("model", "facts", name, "export")
    wants = fact.export is True or isinstance(fact.export, FactExport)
    path = export_path(name, fact, contract)
    if path is None:
        if wants:
            add(at, "export needs a path: set export.path or outputs.export")
            return False
        return True
    t = export_time(fact)
    if t is None:
        add(at, "export needs a time column to partition by (export.time)")
        return False
    if t not in cols:
        add((*at, "time"), f"unknown column '{t}'", closest(t, cols))
        return False
    kind = time_kind(_type_of(contract, t))
    if kind not in ("date", "timestamp"):
        add(
            (*at, "time"),
            f"export time '{t}' must be a DATE or TIMESTAMP column to partition by year and month",
        )
        return False
    clash = [p for p in EXPORT_PARTITIONS if p in cols]
    if clash:
        add(
            at,
            f"the export adds partition columns {EXPORT_PARTITIONS}; the fact already has {clash}",
        )
        return False
    return True


def _type_of(contract: Contract, column: str) -> str | None:
    spec = contract.source.columns.get(column)
    return spec.parsed.canonical if spec else None


def _same_kind(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return True  # a partition folder (text) or unknown: the engine decides
    ka, kb = parse_type(a).kind, parse_type(b).kind
    numeric = {"integer", "decimal"}
    return ka == kb or (ka in numeric and kb in numeric)
