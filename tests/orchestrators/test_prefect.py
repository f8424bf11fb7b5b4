"""examples/prefect: the flow run by Prefect (a temporary local API, prefect_test_harness)
on the orders example: a warning gate completes with the report written, a failing gate
fails the flow without retrying. Runs in .venv-prefect (scripts/orchestrator_venv.sh
prefect)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import REPO, copy_orders_example

pytestmark = pytest.mark.orchestrator
prefect = pytest.importorskip("prefect")


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def _example():
    spec = importlib.util.spec_from_file_location(
        "sluicegate_flow", REPO / "examples/prefect/sluicegate_flow.py"
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


def test_flow_completes_on_warn_and_writes_the_report(harness, tmp_path: Path) -> None:
    import sluicegate

    contract = _contract(tmp_path, "0.75")
    out = _example().sluicegate_flow(contract, "2024-01-31")
    assert out["status"] == "warn" and out["exit_code"] == 0
    led = out["ledger"]
    assert led["balanced"] and led["raw"] == led["clean"] + led["quarantined"] + led["duplicates"]
    html = Path(out["report"]).read_text(encoding="utf-8")
    assert out["run_id"] in html
    latest = {f["check_id"]: f for f in sluicegate.facts(contract)}
    assert latest["quarantine_share"]["run_id"] == out["run_id"]


def test_failing_gate_fails_the_flow_once(harness, tmp_path: Path) -> None:
    mod = _example()
    state = mod.sluicegate_flow(_contract(tmp_path, "0.1"), "2024-01-31", return_state=True)
    assert state.is_failed()
    with pytest.raises(mod.GateFailed, match="quarantine_share"):
        state.result()
