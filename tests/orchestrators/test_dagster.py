"""examples/dagster: the asset and its gate check materialized by Dagster itself (in
process), on the orders example: a warning gate and a failing one. Runs in .venv-dagster
(scripts/orchestrator_venv.sh dagster)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import REPO, copy_orders_example

pytestmark = pytest.mark.orchestrator
dg = pytest.importorskip("dagster")


def _example():
    spec = importlib.util.spec_from_file_location(
        "sluicegate_assets", REPO / "examples/dagster/sluicegate_assets.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _contract(tmp_path: Path, fail_above: str) -> str:
    copy_orders_example(tmp_path / "o")
    path = tmp_path / "o" / "contract.yml"
    text = path.read_text(encoding="utf-8").replace("fail_above: 0.75", f"fail_above: {fail_above}")
    path.write_text(text, encoding="utf-8")
    return str(path)


def _materialize(contract: str):
    defs = _example().build_definitions(contract, asset_name="orders_clean")
    job = defs.resolve_implicit_global_asset_job_def()
    return job.execute_in_process(raise_on_error=False)


def test_warn_gate_is_a_warn_check_and_the_dlq_check_sees_the_backlog(tmp_path: Path) -> None:
    import sluicegate

    contract = _contract(tmp_path, "0.75")
    result = _materialize(contract)
    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    gate = checks["sluicegate_gate"]
    assert not gate.passed and gate.severity == dg.AssetCheckSeverity.WARN
    meta = gate.metadata
    facts = sluicegate.facts(contract)
    share = next(f for f in facts if f["check_id"] == "quarantine_share")
    assert share["status"] == "warn" and meta["status"].value == "warn"
    assert (
        meta["raw"].value
        == meta["clean"].value + meta["quarantined"].value + meta["duplicates"].value
    )
    assert Path(meta["report"].value).is_file()
    waiting = sluicegate.dlq_counts(contract)["quarantined"]
    assert waiting > 0 and checks["dlq_backlog"].metadata["waiting"].value == waiting
    assert not checks["dlq_backlog"].passed


def test_failing_gate_fails_the_blocking_check(tmp_path: Path) -> None:
    result = _materialize(_contract(tmp_path, "0.1"))
    gate = next(
        e for e in result.get_asset_check_evaluations() if e.check_name == "sluicegate_gate"
    )
    assert not gate.passed and gate.severity == dg.AssetCheckSeverity.ERROR
    assert gate.metadata["status"].value == "fail"
