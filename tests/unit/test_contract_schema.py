"""The contract's JSON Schema: current, complete, and as strict and as forgiving as the
loader — every example validates, a misspelt key does not, tokens and shorthands pass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from sqlglot.dialects.duckdb import DuckDB

from sluicegate.contract.coltypes import UnknownTypeError, parse_type
from sluicegate.contract.schema_export import (
    REPO_SCHEMA_PATH,
    contract_json_schema,
    render_schema,
    undocumented_keys,
)
from sluicegate.contract.type_names import TYPE_NAMES, all_names, type_pattern
from sluicegate.contract.yamlpos import load_with_positions

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(REPO.glob("examples/*/contract.yml")) + [
    REPO / "src/sluicegate/examples/retail.yml"
]
MODELINE = "# yaml-language-server: $schema=../../schema/contract.schema.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = contract_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def raw(text: str) -> dict:
    return load_with_positions(text)[0]


def errors(validator, text: str) -> list[str]:
    """Every error message, those under anyOf branches included."""

    def walk(errs):
        for e in errs:
            yield e.message
            yield from walk(e.context or [])

    return list(walk(validator.iter_errors(raw(text))))


def test_committed_schema_is_current():
    committed = (REPO / REPO_SCHEMA_PATH).read_text(encoding="utf-8")
    assert committed == render_schema(), (
        f"{REPO_SCHEMA_PATH} is stale: run `sluicegate schema --out {REPO_SCHEMA_PATH}`"
    )


def test_schema_command_writes_the_same_file(tmp_path):
    out = tmp_path / "s.json"
    r = subprocess.run(
        [sys.executable, "-m", "sluicegate.cli.main", "schema", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert out.read_text() == render_schema()
    r = subprocess.run(
        [sys.executable, "-m", "sluicegate.cli.main", "schema"], capture_output=True, text=True
    )
    assert json.loads(r.stdout)["title"] == "sluicegate contract"


def test_every_key_has_a_description():
    assert undocumented_keys() == []
    schema = contract_json_schema()
    missing = []
    for owner, node in [("Contract", schema), *schema["$defs"].items()]:
        for key, prop in node.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{owner}.{key}")
    assert missing == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_validates(validator, path):
    assert errors(validator, path.read_text()) == []


@pytest.mark.parametrize("path", EXAMPLES[:-1], ids=lambda p: str(p.relative_to(REPO)))
def test_examples_name_the_schema_for_editors(path):
    assert path.read_text().splitlines()[0] == MODELINE
    assert (path.parent / MODELINE.split("=", 1)[1]).resolve() == REPO / REPO_SCHEMA_PATH


MINIMAL = """\
name: payments
source: {path: data.csv, format: csv, columns: {id: BIGINT}}
outputs: {warehouse: wh.duckdb, clean: ok, quarantine: bad}
"""


@pytest.mark.parametrize(
    "change, where",
    [
        ("gate: {warn_abve: 0.1}", "warn_abve"),
        ("sourc: {}", "sourc"),
        ("rules: [{name: r, expect: id > 0, onfail: warn}]", "onfail"),
        ("dedupe: {keys: [id]}", "keys"),
    ],
)
def test_a_misspelt_key_is_rejected(validator, change, where):
    found = errors(validator, MINIMAL + change + "\n")
    assert any(where in m and "not allowed" in m for m in found), found


@pytest.mark.parametrize(
    "change",
    [
        "gate: {warn_above: '${warn}', fail_above: 0.2}",
        "vars: {fmt: csv}\nengine: '${engine}'",
        "rules: [{name: r, expect: id > 0, version: '${v}', on_fail: '${mode}'}]",
        "model: {marts: {m: 'SELECT 1 AS x'}}",
        "engine: spark",
    ],
)
def test_tokens_and_shorthands_are_accepted(validator, change):
    assert errors(validator, MINIMAL + change + "\n") == []


@pytest.mark.parametrize("fmt", ["csv", "CSV", "Csv", "NDJSON", "parquet"])
def test_format_is_case_insensitive_in_schema_and_loader(validator, tmp_path, fmt):
    from sluicegate.compile.contract_check import load_contract

    text = MINIMAL.replace("format: csv", f"format: {fmt}")
    assert errors(validator, text) == []
    (tmp_path / "c.yml").write_text(text)
    assert load_contract(tmp_path / "c.yml").contract.source.format == fmt.lower()


def test_wrong_values_are_rejected(validator):
    assert errors(validator, MINIMAL.replace("BIGINT", "MONEY"))
    assert errors(validator, MINIMAL.replace("format: csv", "format: xlsx"))
    assert errors(validator, MINIMAL + "gate: {warn_above: 2}\n")
    assert errors(validator, MINIMAL.replace("name: payments", "name: Pay-ments"))


def _candidate_type_texts() -> set[str]:
    """Every type keyword DuckDB's tokenizer knows, our names and aliases, in several
    spellings and with parameters: the schema must agree with the loader on each."""
    words = {
        k
        for k, v in DuckDB.Tokenizer.KEYWORDS.items()
        if "TYPE" in str(v) or v.name in {t.name for t in __import__("sqlglot").tokens.TokenType}
    }
    words |= set(all_names()) | set(TYPE_NAMES)
    out = set()
    for w in words:
        if not w.replace(" ", "").replace("_", "").isalnum():
            continue
        out |= {w, w.lower(), w.title(), f"{w}(10)", f"{w}(10,2)", f" {w} ", f"{w}(x)"}
    return out


def test_type_pattern_accepts_exactly_what_the_loader_accepts():
    import re

    pattern = re.compile(type_pattern())
    disagree = []
    for text in sorted(_candidate_type_texts()):
        try:
            parse_type(text)
            loader = True
        except UnknownTypeError:
            loader = False
        if loader != bool(pattern.match(text)):
            disagree.append((text, loader))
    assert disagree == []


def test_schema_type_names_are_valid_types():
    for name in TYPE_NAMES:
        parse_type(name)
