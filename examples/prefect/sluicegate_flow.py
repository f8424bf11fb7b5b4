"""A Prefect flow that runs a sluicegate contract and publishes its report.

The flow calls the Python API: ``sluicegate.run`` in a task that Prefect retries only
when retrying can help (upstream not ready, exit 4; another run holds the lock, exit 5),
then ``sluicegate.report`` in a second task, and a markdown artifact with the ledger.
A failed gate (exit 1) or a ledger violation (exit 3) fails the flow without retries —
bad data does not get better by running again; a person looks at the DLQ and the report.

    python examples/prefect/sluicegate_flow.py contract.yml 2024-01-31

Tested in CI in its own virtualenv: scripts/orchestrator_venv.sh prefect.
"""

from __future__ import annotations

import sys
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact

import sluicegate
from sluicegate.errors import EXIT_LOCKED, EXIT_NOT_READY, SluiceError


def _retry_when_it_can_help(task: Any, task_run: Any, state: Any) -> bool:
    try:
        state.result()
    except SluiceError as exc:
        return exc.exit_code in (EXIT_NOT_READY, EXIT_LOCKED)
    except Exception:  # noqa: BLE001 - anything else: no retry
        return False
    return False


class GateFailed(Exception):
    """The gate failed (exit 1) or the ledger did not balance (exit 3)."""


@task(retries=6, retry_delay_seconds=300, retry_condition_fn=_retry_when_it_can_help)
def run_contract(
    contract: str, logical_date: str | None, vars: dict[str, str] | None
) -> dict[str, Any]:
    result = sluicegate.run(contract, vars=vars, logical_date=logical_date)
    led = result.ledger
    return {
        "run_id": result.run_id,
        "status": result.status,
        "exit_code": result.exit_code,
        "ledger": {
            "raw": led.raw,
            "clean": led.clean,
            "quarantined": led.quarantined,
            "duplicates": led.duplicates,
            "balanced": led.balanced,
        },
        "failing": [lv for lv in result.metrics["gate"]["levels"] if lv["status"] != "pass"],
        "metrics_path": str(result.metrics_path),
    }


@task
def write_report(contract: str, run_id: str, vars: dict[str, str] | None) -> str:
    return str(sluicegate.report(contract, run_id=run_id, vars=vars))


@flow(name="sluicegate")
def sluicegate_flow(
    contract: str, logical_date: str | None = None, vars: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run the contract, write its report, fail the flow when the gate fails."""
    outcome = run_contract(contract, logical_date, vars)
    if outcome["status"] != "ledger_violation":
        outcome["report"] = write_report(contract, outcome["run_id"], vars)
    led = outcome["ledger"]
    create_markdown_artifact(
        key="sluicegate-ledger",
        markdown=(
            f"**{outcome['status'].upper()}** run `{outcome['run_id']}`\n\n"
            "| raw | clean | quarantined | duplicates |\n|---|---|---|---|\n"
            f"| {led['raw']} | {led['clean']} | {led['quarantined']} | {led['duplicates']} |\n\n"
            f"report: `{outcome.get('report', 'not written')}`"
        ),
    )
    if outcome["exit_code"] != 0:
        raise GateFailed(
            f"{outcome['status']}: "
            + "; ".join(f"{lv['check']}: {lv['detail']}" for lv in outcome["failing"])
        )
    return outcome


if __name__ == "__main__":
    print(sluicegate_flow(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
