"""The contract loader composes YAML with libyaml and walks the nodes itself (issue 14 #9:
the round-trip loader was 0.6 s CPU of a 1,000-rule contract). It must read every
contract the way ruamel's round-trip loader does: compared here on the repository's own
contracts and on the YAML features contracts use (anchors, merges, flow style, dates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from sluicegate.contract.yamlpos import YamlSyntaxError, _protect_tokens, load_with_positions

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = sorted(
    p
    for p in [*REPO.glob("examples/**/*.yml"), *REPO.glob("src/sluicegate/examples/*.yml")]
    if "name:" in p.read_text(encoding="utf-8")
)
FEATURES = """\
base: &b {path: land, format: ndjson}
source:
  <<: *b
  path: other
dates: [2024-03-01, "2024-03-02"]
numbers: {hex: 0x10, float: 1.5e3, neg: -7, big: 12345678901234567890}
words: [yes, no, on, off, ~, null, true]
text: |
  two
  lines
"""


def _round_trip(text: str):
    doc = YAML(typ="rt").load(text)
    return json.loads(json.dumps(doc, default=str))


@pytest.mark.parametrize("path", CONTRACTS, ids=lambda p: str(p.relative_to(REPO)))
def test_the_loader_reads_each_contract_like_the_round_trip_loader(path):
    text, _saved = _protect_tokens(path.read_text(encoding="utf-8"))  # ${...} as plain words
    data, positions = load_with_positions(text)
    assert data == _round_trip(text)
    rt = YAML(typ="rt").load(text)
    for key in rt:
        assert positions[(key,)] == rt.lc.key(key)[0] + 1, key


def test_yaml_features_match_the_round_trip_loader():
    data, positions = load_with_positions(FEATURES)
    assert data == _round_trip(FEATURES)
    assert data["source"] == {"path": "other", "format": "ndjson"}  # explicit keys win
    assert positions[("source", "path")] == 4 and positions[("dates", 1)] == 5


@pytest.mark.parametrize(
    ("text", "line"),
    [("a: 1\nb: 2\na: 3\n", 3), ("~: x\n", 1), ("? [a]\n: b\n", 1), ("a: !foo x\n", 1)],
)
def test_bad_keys_and_tags_are_located_errors(text, line):
    with pytest.raises(YamlSyntaxError) as ei:
        load_with_positions(text)
    assert ei.value.line == line
