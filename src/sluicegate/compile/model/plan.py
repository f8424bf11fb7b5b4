"""The model's statements for ``sluicegate compile``, in the order a run executes them.

Returned as ``(name, statement, comment)`` so ``compile/plan.py`` can wrap them in its
own steps: the dimension builds and the ``on_missing: quarantine`` reroute run before
publish (TEMP tables); dimensions, facts and marts are written inside the publish
transaction. The Parquet export is an engine write (a ``COPY`` on DuckDB), not SQL that
every dialect has, so the fact's comment names its destination instead.
"""

from __future__ import annotations

from sqlglot import exp

from ...contract.models import Contract
from .. import outputs as out_c
from ..render import ident
from .asof import fact_select, reroute_select
from .checks import compile_derive, compiled_marts
from .scd2 import scd2_select
from .schema import export_path, export_time, interval_type

PlanStep = tuple[str, exp.Expression, str]


def _dim_temp(name: str) -> str:
    return f"_sg_dim_{name}"


def _create(table: str, query: exp.Expression) -> exp.Create:
    return exp.Create(
        this=exp.Table(this=ident(table)), kind="TABLE", replace=True, expression=query.copy()
    )


def pre_publish(contract: Contract, routed: str = "_sg_routed") -> list[PlanStep]:
    """Dimensions into TEMP tables, then the reroute of rows with no version (if any)."""
    m = contract.model
    if m is None:
        return []
    steps: list[PlanStep] = []
    for name, dim in m.dimensions.items():
        ref = f"_sg_ref_{dim.reference}"
        steps.append(
            (
                _dim_temp(name),
                scd2_select(ref, dim, interval_type(dim, contract)),
                f"model: SCD2 dimension {name} from reference {dim.reference}",
            )
        )
    before = routed + "_premodel"
    rr = reroute_select(before, contract, {n: _dim_temp(n) for n in m.dimensions})
    if rr is not None:
        steps.append((before, exp.select(exp.Star()).from_(routed), "model: routed, as routed"))
        steps.append((routed, rr, "model: rows with no dimension version -> quarantine"))
    return steps


def publish(
    contract: Contract, clean: str, visible: dict, run_id: str, logical_date: str
) -> list[PlanStep]:
    """Inside the publish transaction: dimensions, this date's facts, marts in order."""
    m = contract.model
    if m is None:
        return []
    steps: list[PlanStep] = []
    for name in m.dimensions:
        steps.append(
            (name, _create(name, exp.select(exp.Star()).from_(_dim_temp(name))), "model: dimension")
        )
    for name, fact in m.facts.items():
        q = fact_select(
            clean,
            fact,
            contract,
            {d: d for d in m.dimensions},
            compile_derive(fact, visible),
            run_id,
        )
        where = export_path(name, fact, contract)
        note = f"; exported to {where}/year=/month= by {export_time(fact)}" if where else ""
        steps.append((name, out_c.delete_run(name, logical_date), f"model: fact {name}, rerun"))
        steps.append((name, out_c.insert_into(name, q), f"model: fact {name} as of{note}"))
    for mart in compiled_marts(contract):
        steps.append((mart.name, _create(mart.name, mart.query), f"model: mart {mart.name}"))
    return steps
