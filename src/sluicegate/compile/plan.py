"""The statements a run executes, in order — what ``sluicegate compile`` prints."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..contract.loader import LoadedContract
from ..contract.partitions import partition_names
from . import dedupe as dedupe_c
from . import outputs as out_c
from . import route as route_c
from .model import plan as model_plan
from .read.table import typed_select
from .render import col, render
from .rules import compile_rules

READER_DIALECTS = {"duckdb"}


@dataclass
class Step:
    name: str
    expression: exp.Expression
    comment: str


def plan(loaded: LoadedContract, dialect: str, *, run_id: str = "<run_id>") -> list[Step]:
    """Build every statement of a run for ``dialect`` (the reader only where it compiles)."""
    c = loaded.contract
    partitions = partition_names(c.source)
    visible = {**c.source.columns, **dict.fromkeys(partitions, None)}
    rules, memberships = compile_rules(
        c.rules, visible, {n: r.columns for n, r in c.references.items()}
    )
    refs = {n: f"_sg_ref_{n}" for n in c.references}
    day = loaded.logical_date
    steps: list[Step] = []
    if c.source.format == "ndjson" and _has_reader(dialect):
        steps.append(
            Step(
                "_sg_typed",
                typed_select("_sg_lines", c.source, partitions, dialect),
                "read: lines → typed rows",
            )
        )
    steps.append(
        Step(
            "_sg_ranked",
            dedupe_c.ranked_select("_sg_typed", c.dedupe),
            "dedupe: rank by the total order",
        )
    )
    steps.append(
        Step(
            "_sg_kept",
            exp.select(exp.Star())
            .from_("_sg_ranked")
            .where(exp.EQ(this=col("_rn"), expression=exp.Literal.number(1))),
            "dedupe: the kept rows",
        )
    )
    steps.append(
        Step(
            "_sg_flags",
            route_c.flags_select("_sg_kept", c, rules, memberships, refs),
            "route: one pass flag per check",
        )
    )
    steps.append(
        Step(
            "_sg_routed",
            route_c.routed_select("_sg_flags", rules),
            "route: _ok, _reason, _failed_rules",
        )
    )
    steps += [Step(*s) for s in model_plan.pre_publish(c)]  # model: before publish
    o = c.outputs
    steps.append(
        Step(
            o.clean,
            out_c.insert_into(
                o.clean, out_c.clean_select("_sg_routed", c, partitions, rules, run_id, day)
            ),
            "publish: clean = WHERE _ok",
        )
    )
    steps.append(
        Step(
            o.quarantine,
            out_c.insert_into(
                o.quarantine, out_c.quarantine_select("_sg_routed", c, partitions, run_id, day)
            ),
            "publish: quarantine = WHERE NOT _ok",
        )
    )
    steps.append(
        Step(
            o.duplicates,
            out_c.insert_into(
                o.duplicates, out_c.duplicates_select("_sg_ranked", c, partitions, run_id, day)
            ),
            "publish: duplicates",
        )
    )
    steps += [Step(*s) for s in model_plan.publish(c, o.clean, visible, run_id, day)]  # model
    return steps


def _has_reader(dialect: str) -> bool:
    return dialect in READER_DIALECTS


def render_plan(steps: list[Step], dialect: str) -> str:
    """Render the steps as one SQL script with comments."""
    out = []
    for s in steps:
        if isinstance(s.expression, exp.Insert | exp.Create | exp.Delete):
            body = render(s.expression, dialect, pretty=True)
        else:
            body = render(
                exp.Create(
                    this=exp.to_table(s.name),
                    kind="TABLE",
                    expression=s.expression,
                    properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
                ),
                dialect,
                pretty=True,
            )
        out.append(f"-- {s.comment}\n{body};")
    return "\n\n".join(out) + "\n"
