"""The README's contract runs as pasted: saved in a copy of examples/orders, it validates,
runs, and is the example contract (same digest)."""

from __future__ import annotations

import json
import re

import pytest

from sluicegate.compile.contract_check import load_contract
from tests.conftest import REPO, copy_orders_example, run_cli

pytestmark = pytest.mark.duckdb


def test_readme_contract_runs_as_pasted(tmp_path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# yaml-language-server.*?name: orders.*?)```", readme, re.S)
    assert block, "the README's contract block"
    folder = copy_orders_example(tmp_path / "orders")
    pasted = folder / "readme.yml"
    pasted.write_text(block.group(1), encoding="utf-8")
    r = run_cli("run", str(pasted), "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["ledger"]["balanced"] and m["ledger"]["raw"] == 12
    example = load_contract(folder / "contract.yml").contract
    readme_contract = load_contract(pasted).contract
    for section in ("source", "references", "rules", "gate"):
        a, b = getattr(example, section), getattr(readme_contract, section)
        if section == "source":
            a, b = a.model_dump(exclude={"name"}), b.model_dump(exclude={"name"})
        elif section == "rules":
            a = [(x.name, x.expect) for x in a]
            b = [(x.name, x.expect) for x in b]
        assert a == b, section
