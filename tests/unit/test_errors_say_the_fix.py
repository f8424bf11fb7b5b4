"""Contract errors name the valid choices or the corrected form; rule syntax errors are
one line in the rule's own words with the column — never a sqlglot class name."""

from __future__ import annotations

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import ContractError

BASE = """\
name: payments
source:
  path: payments.csv
  format: csv
  columns:
    payment_id: VARCHAR
    amount: DECIMAL(10,2)
    paid_at: DATETIME
outputs: {warehouse: wh.duckdb, clean: ok, quarantine: bad}
"""


def problems(tmp_path, text: str) -> list[str]:
    (tmp_path / "payments.csv").write_text("payment_id,amount,paid_at\n")
    (tmp_path / "c.yml").write_text(text)
    with pytest.raises(ContractError) as info:
        load_contract(tmp_path / "c.yml")
    rendered = str(info.value.render())
    assert "sqlglot" not in rendered and "<class" not in rendered and "\x1b" not in rendered
    return [p.render("c.yml") for p in info.value.problems]


def test_unknown_type_lists_the_valid_ones(tmp_path):
    [msg] = problems(tmp_path, BASE.replace("DECIMAL(10,2)", "MONEY"))
    assert "unknown type 'MONEY'" in msg and "[source.columns.amount.type]" in msg
    for name in ("BIGINT", "DECIMAL(p,s)", "VARCHAR (TEXT, STRING", "TIMESTAMP (DATETIME"):
        assert name in msg


def test_misspelt_type_gets_a_did_you_mean(tmp_path):
    [msg] = problems(tmp_path, BASE.replace("DECIMAL(10,2)", "INTEGR"))
    assert "did you mean INTEGER?" in msg


def test_string_and_datetime_are_accepted(tmp_path):
    (tmp_path / "c.yml").write_text(BASE.replace("VARCHAR", "string"))
    c = load_contract(tmp_path / "c.yml").contract
    assert c.source.columns["payment_id"].parsed.canonical == "VARCHAR"
    assert c.source.columns["paid_at"].parsed.canonical == "TIMESTAMP"


def test_dedupe_key_as_a_scalar_says_write_a_list(tmp_path):
    [msg] = problems(tmp_path, BASE + "dedupe: {key: payment_id}\n")
    assert msg == "c.yml:10 [dedupe.key]: must be a list: write key: [payment_id]"


def test_a_bad_choice_names_the_choices(tmp_path):
    msgs = problems(tmp_path, BASE.replace("format: csv", "format: jsonl") + "engine: duckdbb\n")
    assert any("must be one of ndjson, csv, parquet" in m and "(got 'jsonl')" in m for m in msgs)
    assert any("must be one of duckdb, spark" in m and "did you mean 'duckdb'" in m for m in msgs)


def test_a_bad_name_gets_the_corrected_name(tmp_path):
    [msg] = problems(tmp_path, BASE.replace("name: payments", "name: Payments-2024"))
    assert "lower-case letters, digits and _" in msg and "did you mean 'payments_2024'" in msg


@pytest.mark.parametrize(
    "expect, expected",
    [
        (
            "amount > > 0",
            "expect must be a condition (TRUE or FALSE) but 'amount > > 0' is a "
            "bit shift (>>); did you mean 'amount > 0'?",
        ),
        ("amount >> 0", "is a bit shift (>>); did you mean 'amount > 0'?"),
        ("amount + 1", "is a sum (+); compare it, e.g. 'amount + 1 > 0'"),
        (
            "amount > 0 AND",
            "expect is not valid SQL at column 14 of 'amount > 0 AND': "
            "'AND' needs a value after it",
        ),
        (
            "amount => 0",
            "at column 9 of 'amount => 0': unexpected '=>'; did you mean 'amount >= 0'?",
        ),
        ("payment_id IN ('a', 'b'", "at column 23 of 'payment_id IN ('a', 'b'': expected )"),
        ("payment_id = 'abc", "a ' quote is not closed"),
    ],
)
def test_rule_syntax_errors_speak_the_rules_words(tmp_path, expect, expected):
    text = BASE + "rules:\n  - name: check\n    expect: |-\n      " + expect + "\n"
    [msg] = problems(tmp_path, text)
    assert msg.startswith("c.yml:12 [rules[0].expect]: rule 'check': ")
    assert "\n" not in msg
    assert expected in msg
