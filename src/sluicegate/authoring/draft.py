"""Decide what a draft contract declares from a profile, and write it with its evidence.

Every decision is a threshold on counts the engine measured (:mod:`.profile`), chosen so
a hostile feed does not over-fit the draft:

* a type is declared when it accepts at least ``TYPE_SHARE`` of the present values; the
  rest become ``type_mismatch`` quarantines, named with examples in a comment — a few
  corrupt values never turn a numeric column into VARCHAR;
* a column NULL in at most ``NULL_RULE_SHARE`` of the records gets a visible
  ``IS NOT NULL`` rule with the count (never a silent ``nullable: false``); a column NULL
  more often is left optional, with its NULL share in a comment;
* date/time formats are added while each one parses at least ``FORMAT_MIN_SHARE`` more
  values than the formats before it (a format that only re-reads covered values is not);
* sign rules, accepted-value lists and foreign keys are suggested only when nearly every
  value agrees; the exceptions are counted in the rule's comment.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from .profile import ColumnProfile

TYPE_SHARE = 0.98
NULL_RULE_SHARE = 0.01
FORMAT_MIN_SHARE = 0.005
SIGN_SHARE = 0.99
KEY_DISTINCT_SHARE = 0.95
KEY_NULL_SHARE = 0.001
FK_SHARE = 0.9
ENUM_MAX_VALUES = 12
ENUM_MIN_ROWS = 50
ENUM_VALUE_SHARE = 0.005
ID_WORDS = ("id", "key", "code", "ref", "number", "no")


@dataclass
class ColumnChoice:
    """The declared type of one column and the evidence for it."""

    name: str
    type: str
    kind: str  # integer | decimal | float | boolean | date | timestamp | string
    formats: list[str] | None = None
    format_counts: list[int] = field(default_factory=list)
    accepted: int = 0  # present values the type accepts
    present: int = 0  # present values (scalars and nested)
    examples: list[str] = field(default_factory=list)  # values it does not accept
    note: str = ""

    @property
    def rejected(self) -> int:
        return self.present - self.accepted


@dataclass
class Suggestion:
    """A suggested rule: its YAML fields and the comment with the evidence."""

    name: str
    expect: str
    evidence: str


def n(x: int) -> str:
    return f"{x:,}"


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f} %" if whole else "0 %"


def numeric_choice(p: ColumnProfile) -> tuple[str, str, int] | None:
    """(type, kind, accepted) for the narrowest non-time type accepting TYPE_SHARE, or None."""
    present = p.non_null + p.nested
    if present == 0:
        return None
    need = TYPE_SHARE * present
    for t, kind in (("BOOLEAN", "boolean"), ("INTEGER", "integer"), ("BIGINT", "integer")):
        if p.castable.get(t, 0) >= need:
            return t, kind, p.castable[t]
    dec = p.castable.get("DECIMAL(38,9)", 0)
    if dec >= need and p.scale <= 9 and p.int_digits <= 18:
        precision = min(38, max(10, p.int_digits + p.scale + 2))
        return f"DECIMAL({precision},{p.scale})", "decimal", dec
    if p.castable.get("DOUBLE", 0) >= need:
        return "DOUBLE", "float", p.castable["DOUBLE"]
    return None


def key_candidate(
    columns: list[ColumnProfile], choices: dict[str, ColumnChoice]
) -> ColumnProfile | None:
    """The column most likely to identify a record: nearly never NULL, nearly all distinct,
    text or integer; names that look like identifiers first."""
    found = []
    for i, p in enumerate(columns):
        if choices[p.name].kind not in ("string", "integer") or p.non_null < 2:
            continue
        if p.nulls > KEY_NULL_SHARE * p.records or p.distinct < KEY_DISTINCT_SHARE * p.non_null:
            continue
        words = p.name.lower().replace("-", "_").split("_")
        looks_like_id = any(w in ID_WORDS for w in words) or p.name.lower().endswith("id")
        found.append((not looks_like_id, -p.distinct / p.non_null, i, p))
    return min(found, key=lambda t: t[:3])[3] if found else None


def sql_column(name: str) -> str:
    """The column as rule SQL writes it (quoted only when it must be)."""
    return exp.column(name).sql(dialect="duckdb")


def sql_literal(value: str) -> str:
    return exp.Literal.string(value).sql(dialect="duckdb")


def rule_name(*parts: str) -> str:
    return "_".join(parts).lower()


def not_null_rule(p: ColumnProfile) -> Suggestion | None:
    if p.records == 0 or p.nulls > NULL_RULE_SHARE * p.records:
        return None
    if p.nulls == 0:
        evidence = f"0 of {n(p.records)} NULL"
    else:
        evidence = (
            f"{n(p.nulls)} of {n(p.records)} NULL or absent ({pct(p.nulls, p.records)}): "
            "those records will be quarantined"
        )
    return Suggestion(rule_name(p.name, "present"), f"{sql_column(p.name)} IS NOT NULL", evidence)


def sign_rule(name: str, stats: dict[str, Any]) -> Suggestion | None:
    total = stats["n"]
    if not total:
        return None
    c = sql_column(name)
    rng = f"min {stats['min']}, max {stats['max']}"
    options = [(stats["positive"], ">", "positive"), (stats["non_negative"], ">=", "non_negative")]
    if stats["non_negative"] == total:  # no negative at all: never quarantine the zeros
        options = options[:1] if stats["positive"] == total else options[1:]
    for count, op, word in options:
        if count >= SIGN_SHARE * total:
            bad = total - count
            tail = "" if not bad else f"; {n(bad)} would be quarantined"
            return Suggestion(
                rule_name(name, word),
                f"{c} IS NULL OR {c} {op} 0",
                f"{n(count)} of {n(total)} values {op} 0 ({rng}){tail}",
            )
    return None


def enum_rule(p: ColumnProfile, top: list[tuple[str, int]]) -> Suggestion | None:
    """``col IN (…)`` for a low-cardinality text column; rare values stay outside."""
    if p.distinct > ENUM_MAX_VALUES or p.non_null < ENUM_MIN_ROWS or p.distinct < 2:
        return None
    allowed = [(v, k) for v, k in top if k >= ENUM_VALUE_SHARE * p.non_null]
    rare = [(v, k) for v, k in top if k < ENUM_VALUE_SHARE * p.non_null]
    if len(allowed) < 2:
        return None
    c = sql_column(p.name)
    values = ", ".join(sql_literal(v) for v, _ in allowed)
    evidence = ", ".join(f"{v} {n(k)}" for v, k in allowed)
    if rare:
        evidence += "; rare, would be quarantined: " + ", ".join(f"{v!r} {n(k)}" for v, k in rare)
    return Suggestion(rule_name("valid", p.name), f"{c} IS NULL OR {c} IN ({values})", evidence)


def fk_rule(name: str, reference: str, key: str, found: int, total: int) -> Suggestion:
    c = sql_column(name)
    missing = total - found
    tail = f"; {n(missing)} not found would be quarantined" if missing else ""
    return Suggestion(
        rule_name("known", name),
        f"{c} IS NULL OR {c} IN (SELECT {sql_column(key)} FROM {reference})",
        f"{n(found)} of {n(total)} values found in {reference}.{key}{tail}",
    )


def gate_bands(share: float) -> tuple[float, float]:
    """Warn and fail thresholds around the share the draft quarantines on its sample:
    warn above 1.5 times it, fail above 3 times it (at least 1 % and 5 %)."""

    def up(x: float) -> float:
        return min(1.0, float(f"{x + 0.0005:.3f}"))

    warn = max(0.01, up(share * 1.5))
    return warn, max(0.05, up(share * 3), warn)


# -- rendering ------------------------------------------------------------------------


@dataclass
class TableDraft:
    """What the YAML writer needs for ``source`` or one reference."""

    path: str
    format: str
    delimiter: str
    partitions: list[str]
    columns: list[ColumnChoice]


@dataclass
class Draft:
    """A whole draft contract, ready to be written."""

    name: str
    origin: str
    records: int
    corrupt: int
    source: TableDraft
    references: dict[str, TableDraft]
    rules: list[Suggestion]
    key: str | None
    key_evidence: str
    left_out: list[str]
    warehouse: str
    gate: tuple[float, float] = (0.01, 0.05)
    gate_evidence: str = ""
    file: str = "contract.yml"  # the draft's file name, for the commands in its header


def yaml_str(s: str) -> str:
    """A YAML scalar for ``s``: plain when safe, else a JSON (double-quoted) string."""
    plain = s and s[0].isalnum() and all(ch.isalnum() or ch in "_./-" for ch in s)
    return (
        s
        if plain and s.lower() not in ("true", "false", "null", "yes", "no", "on", "off")
        else json.dumps(s)
    )


def _column_line(c: ColumnChoice) -> tuple[str, str]:
    if c.formats:
        spec = f"{{type: {c.type}, formats: [{', '.join(json.dumps(f) for f in c.formats)}]}}"
    else:
        spec = c.type
    return f"{c.name}: {spec}", c.note


def _table_lines(t: TableDraft, indent: str) -> list[tuple[str, str]]:
    out = [(f"{indent}path: {yaml_str(t.path)}", ""), (f"{indent}format: {t.format}", "")]
    if t.format == "csv" and t.delimiter != ",":
        out.append((f"{indent}csv: {{delimiter: {json.dumps(t.delimiter)}}}", ""))
    if t.partitions:
        out.append(
            (
                f"{indent}partitions: [{', '.join(t.partitions)}]",
                "name=value folders, as VARCHAR columns",
            )
        )
    out.append((f"{indent}columns:", "ordered; the schema is declared, never inferred"))
    for c in t.columns:
        line, note = _column_line(c)
        out.append((f"{indent}  {line}", note))
    return out


def _aligned(lines: list[tuple[str, str]]) -> list[str]:
    width = min(56, max((len(t) for t, c in lines if c), default=0))
    return [f"{t:<{width}}  # {c}" if c else t for t, c in lines]


def render(d: Draft) -> str:
    """The draft as commented YAML (evidence beside every decision)."""
    today = dt.datetime.now(dt.UTC).date().isoformat()
    head = [
        f"# Draft contract for '{d.name}', written by `sluicegate init` on {today} from",
        f"# {d.origin}: {n(d.records)} records, {n(d.corrupt)} of them corrupt (quarantined as",
        "# corrupt_record; they took no part in the profile).",
        "# Every type and rule below says what it is based on: review them, then",
        f"#   sluicegate validate {d.file} && sluicegate run {d.file}",
        "# Editor help: `sluicegate schema --out contract.schema.json`, then make this the first line:",
        "#   # yaml-language-server: $schema=contract.schema.json",
    ]
    if d.left_out:
        head.append("# Not declared:")
        head += [f"#   - {s}" for s in d.left_out]
    lines: list[tuple[str, str]] = [(f"name: {d.name}", "")]
    lines.append(("# owner: team@example.com", "who answers for this feed's rules and checks"))
    lines.append(("vars:", ""))
    lines.append(
        (
            f"  warehouse: {yaml_str(d.warehouse)}",
            "relative paths resolve against this file's folder",
        )
    )
    lines.append(("source:", ""))
    lines += _table_lines(d.source, "  ")
    if d.key:
        lines.append(("dedupe:", ""))
        lines.append((f"  key: [{d.key}]", d.key_evidence))
    elif d.key_evidence:
        lines.append(("# dedupe: {key: [...]}", d.key_evidence))
    if d.references:
        lines.append(("references:", ""))
        for name, t in d.references.items():
            lines.append((f"  {name}:", ""))
            lines += _table_lines(t, "    ")
    if d.rules:
        lines.append(("rules:", "list order = priority of _reason"))
        for r in d.rules:
            lines.append((f"  - name: {r.name}", r.evidence))
            lines.append((f"    expect: {json.dumps(r.expect)}", ""))
    else:
        lines.append(("rules: []", "no rule suggested: add your own"))
    warn, fail = d.gate
    lines.append((f"gate: {{warn_above: {warn}, fail_above: {fail}}}", d.gate_evidence))
    lines.append(("outputs:", ""))
    lines.append(("  warehouse: ${warehouse}", ""))
    lines.append((f"  clean: {d.name}_clean", ""))
    lines.append((f"  quarantine: {d.name}_dlq", "the dead-letter queue, with reasons"))
    lines.append((f"  duplicates: {d.name}_duplicates", ""))
    return "\n".join(head + _aligned(lines)) + "\n"
