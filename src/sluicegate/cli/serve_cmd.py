"""``sluicegate serve CONTRACT [--run ID] [--target NAME]``: load what the warehouse
published into the contract's ``serve:`` targets — what a run does after its publish, on
demand (after a target was down, or to load an older run's date again)."""

from __future__ import annotations

import sys

import click

from ..contract.tokens import redact_secrets
from ..errors import EXIT_SERVE, UsageError
from .common import (
    CONTEXT,
    contract_argument,
    engine_option,
    examples,
    handled,
    json_option,
    parse_vars,
    var_option,
)
from .console import CliConsole
from .present import emit_json


@click.command("serve", context_settings=CONTEXT)
@contract_argument
@click.option(
    "--run",
    "run_id",
    metavar="RUN_ID",
    help="Load this run's logical date of each fact again, even if the target has it.",
)
@click.option(
    "--target", "targets", multiple=True, metavar="NAME", help="Only this target (repeatable)."
)
@var_option()
@engine_option()
@json_option()
@handled
@examples("sluicegate serve contract.yml", "sluicegate serve contract.yml --json")
def serve_cmd(
    contract: str,
    run_id: str | None,
    targets: tuple[str, ...],
    variables: tuple[str, ...],
    engine: str | None,
    as_json: bool,
) -> None:
    """Load CONTRACT's published tables into its serve: targets (PostgreSQL).

    One transaction per target; rows already there with the same values are not
    rewritten. Exit 0 when every target loaded, 6 when one failed (nothing of that
    target's load is visible), 2 for a contract or usage error.
    """
    from ..compile.contract_check import load_contract
    from ..contract.suggest import closest
    from ..run.serve_cli import serve_published

    loaded = load_contract(contract, variables=parse_vars(variables))
    names = [t.name for t in loaded.contract.serve or []]
    if not names:
        raise UsageError(
            f"{contract} has no serve: section", hint="add a serve: target (docs/serving.md)"
        )
    for t in targets:
        if t not in names:
            hint = closest(t, names)
            raise UsageError(
                f"no serve target '{t}' in {contract}; targets: {', '.join(names)}"
                + (f" (did you mean '{hint}'?)" if hint else "")
            )
    served_run, results = serve_published(
        loaded, run_id=run_id, targets=list(targets), engine_name=engine
    )
    failed = [r for r in results if r.status != "pass"]
    if as_json:
        emit_json({"run_id": served_run, "targets": [r.as_dict() for r in results]})
    else:
        con = CliConsole()
        rows = []
        for r in results:
            for t in r.tables:
                scope = ",".join(t.scope) if t.scope is not None else "all"
                rows.append([r.target, t.target, scope, t.copied, t.written, t.deleted])
            if r.status != "pass":
                rows.append([r.target, "-", "-", "-", "-", "-"])
        con.table(
            f"served run {served_run}",
            ["target", "table", "scope", "copied", "written", "deleted"],
            rows,
        )
        for r in results:
            if r.status == "pass":
                con.line(f"serve:{r.target} PASS in {r.seconds} s", "green")
    for r in failed:
        CliConsole().error(redact_secrets(f"serve:{r.target} FAILED — {r.error}"))
    if failed:
        sys.exit(EXIT_SERVE)
