"""The presentation decisions of cli/present.py: percentages, JSON numbers, paths."""

from __future__ import annotations

import decimal
import json
import os

import pytest

from sluicegate.cli.present import (
    check_name,
    dumps,
    error_document,
    norm_path,
    number,
    pct,
    shorten_middle,
)
from sluicegate.errors import ContractError, UnknownNameError


@pytest.mark.parametrize(
    ("share", "shown"),
    [(0.7, "70%"), ("0.0125", "1.25%"), (0, "0%"), ("1", "100%"), (None, "—"), ("0.000001", "0%")],
)
def test_shares_are_percentages_for_people(share, shown):
    assert pct(share) == shown


def test_json_numbers_are_numbers_and_exact_or_text():
    assert number(decimal.Decimal("12.50")) == 12.5 and number("0.7") == 0.7
    assert number(decimal.Decimal("10")) == 10 and isinstance(number(decimal.Decimal("10")), int)
    exact = decimal.Decimal("12345678901234567.89")  # not exact as a float: stays text
    assert number(exact) == "12345678901234567.89"
    assert number("abc") == "abc" and number(None) is None and number(True) is True
    assert json.loads(dumps({"a": decimal.Decimal("0.25")})) == {"a": 0.25}


def test_paths_are_normalised_and_shortened_in_the_middle(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert norm_path(os.path.join("data", "..", "warehouse.duckdb")) == "warehouse.duckdb"
    assert norm_path("/elsewhere/x/../y.db") == "/elsewhere/y.db"
    long = "/data/warehouse/exports/fct_sales/month=2024-01/part-000.parquet"
    short = shorten_middle(long, 40)
    assert len(short) <= 40 and short.endswith("month=2024-01/part-000.parquet")
    assert short.startswith("/data/") and "…" in short
    assert shorten_middle("short.txt", 40) == "short.txt"
    nameonly = shorten_middle("a" * 60 + ".parquet", 20)
    assert len(nameonly) == 20 and nameonly.endswith(".parquet")


def test_unknown_names_suggest_the_closest_and_exit_2():
    with pytest.raises(UnknownNameError) as e:
        check_name(
            "--check", "rule:positiv_amount", ["rule:positive_amount", "freshness"], what="check"
        )
    assert e.value.exit_code == 2 and e.value.suggestion == "rule:positive_amount"
    assert "did you mean 'rule:positive_amount'" in e.value.render()
    check_name("--check", None, [], what="check")  # not given: nothing to check


def test_error_document_shape():
    from sluicegate.errors import ContractProblem

    exc = ContractError("c.yml", [ContractProblem("rules[0].expect", "bad", 7, "amt")])
    doc = error_document(exc, exit_code=2)
    assert doc["status"] == "error" and doc["exit_code"] == 2
    (err,) = doc["errors"]
    assert (err["file"], err["line"], err["path"], err["suggestion"]) == (
        "c.yml",
        7,
        "rules[0].expect",
        "amt",
    )
