"""A Dagster asset guarded by a sluicegate contract, with the gate as a blocking asset check.

The asset runs the contract through the Python API (``sluicegate.run``) for the
partition's date and reports the gate as an asset check in the same step, so Dagster
shows the verdict next to the data and stops downstream assets when it fails:

    pass  -> check passed
    warn  -> check failed with severity WARN (clean rows were published; look at it)
    fail  -> check failed with severity ERROR; blocking, so downstream assets do not run
             (quarantine and facts are published, clean rows are not)
    ledger violation -> the asset itself fails (nothing was published)

A second, standalone asset check reads the DLQ (``sluicegate.dlq_counts``) and warns
while rows wait for an operator. Each check's metadata carries the ledger, the failing
checks and the path of the HTML report (``sluicegate.report``).

    dagster dev -f examples/dagster/sluicegate_assets.py    # with SLUICEGATE_CONTRACT set

Tested in CI in its own virtualenv: scripts/orchestrator_venv.sh dagster.
"""

# no `from __future__ import annotations`: Dagster reads the context parameter's
# annotation at definition time and wants the class, not a string.
import os
from collections.abc import Mapping
from typing import Any

import dagster as dg

import sluicegate

GATE_CHECK = "sluicegate_gate"
DLQ_CHECK = "dlq_backlog"


def build_definitions(
    contract: str, *, asset_name: str = "sales_clean", vars: Mapping[str, str] | None = None
) -> dg.Definitions:
    """The asset, its gate check and the DLQ check for one contract."""

    @dg.asset(
        name=asset_name,
        check_specs=[dg.AssetCheckSpec(GATE_CHECK, asset=asset_name, blocking=True)],
        description=f"Clean rows of the sluicegate contract {contract}",
    )
    def guarded(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        logical_date = context.partition_key if context.has_partition_key else None
        result = sluicegate.run(contract, vars=dict(vars or {}), logical_date=logical_date)
        if result.status == "ledger_violation":
            raise dg.Failure(
                description=result.metrics.get("error") or "ledger violation: nothing published",
                metadata={"run_id": result.run_id},
            )
        report = sluicegate.report(contract, vars=dict(vars or {}), run_id=result.run_id)
        led = result.ledger
        metadata: dict[str, Any] = {
            "run_id": result.run_id,
            "status": result.status,
            "raw": led.raw,
            "clean": led.clean,
            "quarantined": led.quarantined,
            "duplicates": led.duplicates,
            "report": dg.MetadataValue.path(str(report)),
        }
        failing = {
            lv["check"]: lv["detail"]
            for lv in result.metrics["gate"]["levels"]
            if lv["status"] != "pass"
        }
        check = dg.AssetCheckResult(
            check_name=GATE_CHECK,
            passed=result.status == "pass",
            severity=dg.AssetCheckSeverity.WARN
            if result.status == "warn"
            else dg.AssetCheckSeverity.ERROR,
            metadata={**metadata, "failing_checks": dg.MetadataValue.json(failing)},
        )
        return dg.MaterializeResult(metadata=metadata, check_results=[check])

    @dg.asset_check(asset=guarded, name=DLQ_CHECK, description="DLQ rows waiting for an operator")
    def dlq_backlog() -> dg.AssetCheckResult:
        counts = sluicegate.dlq_counts(contract, vars=dict(vars or {}))
        waiting = counts.get("quarantined", 0) + counts.get("fixed", 0)
        return dg.AssetCheckResult(
            passed=waiting == 0,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"waiting": waiting, **{f"dlq_{k}": v for k, v in counts.items()}},
        )

    return dg.Definitions(assets=[guarded], asset_checks=[dlq_backlog])


if os.environ.get("SLUICEGATE_CONTRACT"):  # `dagster dev -f` picks this up
    defs = build_definitions(os.environ["SLUICEGATE_CONTRACT"])
