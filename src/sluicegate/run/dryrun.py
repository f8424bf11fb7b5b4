"""``validate`` runs the contract on empty typed tables: what a run would refuse, found first.

Parsing and name checks (``compile/contract_check.py``) cannot see type errors: ``amount =
'abc'`` on an INTEGER column parses, and DuckDB refuses it only when it binds the
statement. So validation opens an in-memory DuckDB, gives it the declared source and
references as empty typed tables, and runs every stage of a run up to the publish on them
(the same compiled statements), with one all-NULL row so every expression is evaluated
once. A failure becomes a located contract error; a rule that
fails is named on its own line by running it alone.
"""

from __future__ import annotations

from typing import Any

from ..contract.loader import LoadedContract
from ..contract.partitions import partition_names
from ..errors import ContractError, ContractProblem, SluiceError
from ..report.events import Silent


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


def check_on_empty(loaded: LoadedContract) -> None:
    """Raise a :class:`ContractError` when a run of ``loaded`` would fail on its statements."""
    from ..engines import open_engine
    from . import pipeline as p
    from .bind import Binding
    from .modes import mode_of

    c = loaded.contract
    engine = open_engine("duckdb", ":memory:", memory_limit="256MB", threads=1)
    ctx = p.RunContext(loaded=loaded, engine=engine, listener=Silent(), mode=mode_of(None))
    ctx.binding = Binding(format=c.source.format, partitions=partition_names(c.source))
    ctx.partitions = list(ctx.binding.partitions)
    ctx.run_id = "validate"
    stage = "compile"
    try:
        p.stage_compile(ctx)
        stage = "references"
        for name, ref in c.references.items():
            table = f"{p.REF_PREFIX}{name}"
            p._load_typed(ctx, [], ref, [], table, f"{p.REF_LINES_PREFIX}{name}")
            ctx.reference_tables[name] = table
        stage = "read"
        p.stage_read(ctx)
        _one_null_row(engine, p.T_TYPED)
        stage = "dedupe"
        p.stage_dedupe(ctx)
        stage = "route"
        try:
            p.stage_route(ctx)
        except SluiceError:
            raise
        except Exception as exc:  # noqa: BLE001 - an engine error: find the rule
            raise _rule_problem(ctx, exc) from None
        stage = "model"
        p.stage_model(ctx)
    except SluiceError:
        raise
    except Exception as exc:  # noqa: BLE001 - any engine error is the contract's
        key = {"references": ("references",), "read": ("source", "columns")}.get(stage, ())
        raise ContractError.one(
            str(loaded.path),
            ".".join(str(k) for k in key),
            f"a run would fail in its {stage} stage on the declared types: {_first_line(exc)}",
            line=loaded.line(*key) if key else None,
        ) from None
    finally:
        engine.close()


def _one_null_row(engine: Any, table: str) -> None:
    """One all-NULL row: an empty table never evaluates an expression, so ``amount = 'abc'``
    (a cast DuckDB makes per row) would pass; one row makes every expression run once."""
    from sqlglot import exp

    nulls = exp.select(*[exp.null() for _ in engine.columns(table)])
    engine.execute(exp.insert(nulls, table))


def _rule_problem(ctx: Any, exc: Exception) -> ContractError:
    """Run each rule alone on the one all-NULL row; name every one the engine refuses."""
    from ..compile import route as route_c
    from . import pipeline as p

    loaded = ctx.loaded
    problems = []
    for rule in ctx.rules:
        flags = route_c.flags_select(
            p.T_KEPT, ctx.contract, [rule], ctx.memberships, ctx.reference_tables
        )
        try:
            ctx.engine.fetch(flags)
        except Exception as one:  # noqa: BLE001 - the engine's binder/type error
            key = ("rules", rule.index, "expect")
            problems.append(
                ContractProblem(
                    f"rules[{rule.index}].expect",
                    f"rule '{rule.name}' does not type-check against the declared columns: "
                    f"{_first_line(one)}",
                    loaded.line(*key),
                )
            )
    if not problems:
        problems.append(
            ContractProblem("rules", f"the routing statement fails: {_first_line(exc)}", None)
        )
    return ContractError(str(loaded.path), problems)
