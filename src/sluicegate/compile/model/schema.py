"""Names and column lists of the model's tables, known before anything runs.

Marts are checked against these columns at load time, ``sluicegate compile`` prints
statements built from them, and the run builds exactly these columns — one source of
truth, so a mart that passes the check cannot fail on a missing column at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract.coltypes import parse_type
from ...contract.model_spec import AsOfJoin, Dimension, Fact, FactExport
from ...contract.models import Contract

SENTINEL_INT = 9223372036854775807
"""``valid_to`` of the open version when the effective time is an integer (the largest BIGINT)."""
SENTINEL_TIMESTAMP = "9999-12-31 23:59:59"
SENTINEL_DATE = "9999-12-31"

DIM_SYSTEM = ["version", "valid_from", "valid_to", "is_current"]
"""Columns every dimension adds after its key and attributes (then the winning lineage)."""
LINEAGE = ["_source_file", "_source_line"]
RUN = ["_run_id", "_logical_date"]
EXPORT_PARTITIONS = ["year", "month"]


@dataclass(frozen=True)
class ModelColumn:
    """One column of a model table; ``type`` is SQL text or ``None`` when only the engine knows."""

    name: str
    type: str | None


def reference_type(contract: Contract, reference: str, column: str) -> str | None:
    ref = contract.references.get(reference)
    spec = ref.columns.get(column) if ref else None
    return spec.parsed.canonical if spec else None


def time_kind(type_text: str | None) -> str | None:
    """``integer`` | ``timestamp`` | ``date`` (the kinds an as-of time may have), else None."""
    if type_text is None:
        return None
    kind = parse_type(type_text).kind
    return kind if kind in ("integer", "timestamp", "date") else None


def interval_type(dim: Dimension, contract: Contract) -> str:
    """Type of ``valid_from`` / ``valid_to``: BIGINT for integer times (room for the sentinel)."""
    t = reference_type(contract, dim.reference, dim.effective) or "BIGINT"
    return "BIGINT" if time_kind(t) == "integer" else t


def dimension_columns(dim: Dimension, contract: Contract) -> list[ModelColumn]:
    def typed(c: str) -> ModelColumn:
        return ModelColumn(c, reference_type(contract, dim.reference, c))

    iv = interval_type(dim, contract)
    return [
        *(typed(k) for k in dim.key),
        *(typed(a) for a in dim.attributes),
        ModelColumn("version", "BIGINT"),
        ModelColumn("valid_from", iv),
        ModelColumn("valid_to", iv),
        ModelColumn("is_current", "BOOLEAN"),
        ModelColumn("_source_file", "VARCHAR"),
        ModelColumn("_source_line", "BIGINT"),
    ]


def fact_source_columns(fact: Fact, contract: Contract) -> list[str]:
    """The clean columns a fact keeps: ``columns:`` or every declared source column."""
    return list(fact.columns) if fact.columns is not None else list(contract.source.columns)


def join_attributes(join: AsOfJoin, dim: Dimension) -> list[str]:
    return list(join.attributes) if join.attributes is not None else list(dim.attributes)


def join_output_columns(join: AsOfJoin, dim: Dimension) -> list[tuple[str, str]]:
    """(output name, dimension column) of what a join adds to its fact, in order."""
    out = [(join.prefix + a, a) for a in join_attributes(join, dim)]
    out.append((f"{join.name}_version", "version"))
    return out


def unknown_flag(join: AsOfJoin) -> str | None:
    """The unknown-member flag column of a join (only ``on_missing: unknown_member``)."""
    return f"{join.name}_unknown" if join.on_missing == "unknown_member" else None


def fact_columns(fact: Fact, contract: Contract) -> list[ModelColumn]:
    """Every column of a fact table, in order (dimensions must exist: checked elsewhere)."""
    src = contract.source.columns
    out = [
        ModelColumn(c, src[c].parsed.canonical if c in src else None)
        for c in fact_source_columns(fact, contract)
    ]
    out += [ModelColumn(name, None) for name in fact.derive]
    dims = contract.model.dimensions if contract.model else {}
    for j in fact.joins:
        dim = dims.get(j.dimension)
        if dim is None:
            continue
        for name, dcol in join_output_columns(j, dim):
            t = "BIGINT" if dcol == "version" else reference_type(contract, dim.reference, dcol)
            out.append(ModelColumn(name, t))
        flag = unknown_flag(j)
        if flag:
            out.append(ModelColumn(flag, "BOOLEAN"))
    out += [
        ModelColumn("_source_file", "VARCHAR"),
        ModelColumn("_source_line", "BIGINT"),
        ModelColumn("_run_id", "VARCHAR"),
        ModelColumn("_logical_date", "DATE"),
    ]
    return out


def export_time(fact: Fact) -> str | None:
    """The column whose year and month partition the export (default: first join's as_of)."""
    if isinstance(fact.export, FactExport) and fact.export.time:
        return fact.export.time
    return fact.joins[0].as_of if fact.joins else None


def export_path(fact_name: str, fact: Fact, contract: Contract) -> str | None:
    """Where a fact is exported, or None: ``export.path``, else ``outputs.export/<fact>``."""
    if fact.export is False:
        return None
    if isinstance(fact.export, FactExport) and fact.export.path:
        return fact.export.path
    if contract.outputs.export:
        return contract.outputs.export.rstrip("/") + "/" + fact_name
    return None
