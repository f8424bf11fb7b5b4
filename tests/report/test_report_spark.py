"""The report of a Spark warehouse: the same contract and input run on DuckDB and on
Spark give the same numbers on the page (the report reads the governed tables through
the warehouse's own engine)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import sluicegate

from .conftest import orders_contract

pytestmark = pytest.mark.spark


def _parts(html: str) -> dict[str, str]:
    """The page's numbers: the ledger equation, the reasons, the rules, the DLQ tables."""

    def table_after(anchor: str) -> str:
        start = html.index(anchor)
        return html[start : html.index("</table>", start)]

    return {
        "equation": re.search(r'<p class="equation">(.*?)</p>', html, re.S).group(1),
        "reasons": table_after("<th>quarantined by reason</th>"),
        "rules": table_after("<th>rule / reason</th>"),
        "dlq": table_after("<th>reason</th>"),
    }


def test_spark_and_duckdb_warehouses_give_the_same_report(tmp_path: Path, spark) -> None:
    duck = orders_contract(tmp_path / "duck", "")
    on_spark = orders_contract(tmp_path / "spark", "")
    text = on_spark.read_text(encoding="utf-8")
    text = text.replace("${root}/../warehouse.duckdb", "${root}/../warehouse_spark")
    on_spark.write_text("engine: spark\n" + text, encoding="utf-8")

    a = sluicegate.run(duck, logical_date="2024-01-31")
    b = sluicegate.run(on_spark, logical_date="2024-01-31", engine_options={"master": "local[2]"})
    assert b.metrics["engine"] == "spark" and a.ledger == b.ledger

    html_a = sluicegate.report(duck, out=tmp_path / "duck.html").read_text(encoding="utf-8")
    html_b = sluicegate.report(on_spark, out=tmp_path / "spark.html").read_text(encoding="utf-8")
    assert _parts(html_a) == _parts(html_b)
    assert f"raw {a.ledger.raw:,} = clean {a.ledger.clean:,}" in html_b
    assert b.run_id in html_b and "engine spark" in html_b
