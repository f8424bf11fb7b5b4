"""The report's HTML without a browser: self-contained, escaped, redacted, any run."""

from __future__ import annotations

import re
from pathlib import Path

import sluicegate
from tests.conftest import run_cli

from .conftest import orders_contract


def test_page_loads_nothing_and_names_every_section(retail_runs, tmp_path: Path) -> None:
    out = sluicegate.report(retail_runs.contract, out=tmp_path / "r.html", vars=retail_runs.vars)
    html = out.read_text(encoding="utf-8")
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert re.search(r"""\b(src|href)\s*=\s*["'](?!#|data:)""", html) is None
    assert "default-src 'none'" in html  # the browser is told to fetch nothing either
    for section in ("ledger", "gate", "trends", "facts", "drift", "binding", "dlq", "model"):
        assert f'<section id="{section}">' in html
    last = retail_runs.last
    assert last.run_id in html
    for f in last.metrics["input"]["files"]:
        assert f["sha256"] in html
    for name, n in last.metrics["model"]["marts"].items():
        assert re.search(rf"<td>{name}</td><td>mart</td><td class=\"n\">{n:,}</td>", html)


def test_report_of_an_earlier_run(retail_runs, tmp_path: Path) -> None:
    first = retail_runs.outcomes[0]
    out = sluicegate.report(
        retail_runs.contract,
        out=tmp_path / "first.html",
        run_id=first.run_id,
        vars=retail_runs.vars,
    )
    html = out.read_text(encoding="utf-8")
    assert f"run <code>{first.run_id}</code>" in html
    assert f"raw {first.ledger.raw:,} = clean {first.ledger.clean:,}" in html


def test_owner_text_is_escaped(tmp_path: Path) -> None:
    # a secret in owner: is refused at load (tests/engines/test_harden_secrets.py)
    contract = orders_contract(tmp_path / "o", "")
    text = contract.read_text(encoding="utf-8")
    text = text.replace("owner: orders-team@example.com", 'owner: "<b>orders</b> team"')
    contract.write_text(text, encoding="utf-8")
    sluicegate.run(contract, logical_date="2024-01-31")
    html = sluicegate.report(contract, out=tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<b>orders</b>" not in html and "&lt;b&gt;orders&lt;/b&gt;" in html


def test_cli_report_writes_the_default_path_and_explains_a_missing_warehouse(
    tmp_path: Path,
) -> None:
    contract = orders_contract(tmp_path / "o", "")
    p = run_cli("report", str(contract))
    assert p.returncode == 2 and "no warehouse" in p.stderr and "sluicegate run" in p.stderr
    assert run_cli("run", str(contract), "-q").returncode == 0
    p = run_cli("report", str(contract), "--runs", "5")
    assert p.returncode == 0, p.stderr
    path = Path(p.stdout.split("report: ", 1)[1].strip())
    assert path.resolve() == tmp_path / "o" / "warehouse.runs" / "orders" / "report.html"
    assert path.is_file()
