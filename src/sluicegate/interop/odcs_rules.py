"""ODCS quality checks, type options and relationships as sluicegate rules.

Only what is a per-row condition becomes a rule: ``nullValues``/``invalidValues`` library
checks, ``logicalTypeOptions`` bounds and patterns, a SQL check ``SELECT COUNT(*) FROM t
WHERE <cond>`` that must be 0, and single-column foreign keys into an imported schema
object. Everything else is named in the import's notes by the caller.
"""

from __future__ import annotations

import re
from typing import Any

from .odcs_common import custom_of, ident


def option_rules(name: str, opts: Any, at: str, notes: list[str]) -> list[dict[str, Any]]:
    if not isinstance(opts, dict):
        return []
    rules = []
    for key, op in (
        ("minimum", ">="),
        ("maximum", "<="),
        ("exclusiveMinimum", ">"),
        ("exclusiveMaximum", "<"),
    ):
        if isinstance(opts.get(key), int | float) and not isinstance(opts.get(key), bool):
            rules.append(
                {
                    "name": ident(f"{name}_{key}"),
                    "expect": f"{name} IS NULL OR {name} {op} {opts[key]}",
                }
            )
    if isinstance(opts.get("pattern"), str):
        pat = opts["pattern"].replace("'", "''")
        rules.append(
            {
                "name": ident(f"{name}_pattern"),
                "expect": f"{name} IS NULL OR regexp_matches({name}, '{pat}')",
            }
        )
    rest = set(opts) - {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "pattern",
        "precision",
        "scale",
    }
    if rest:
        notes.append(f"{at}: logicalTypeOptions {', '.join(sorted(rest))} not imported")
    return rules


def quality_rule(q: Any, column: str | None, at: str, notes: list[str]) -> dict[str, Any] | None:
    if not isinstance(q, dict):
        return None
    c = custom_of(q.get("customProperties"))
    label = q.get("name") or q.get("metric") or q.get("rule") or q.get("type")
    if "expect" in c:  # written by sluicegate: the rule as it was
        rule = {"name": q.get("name"), "expect": c["expect"]}
        if q.get("description"):
            rule["description"] = q["description"]
        for key in ("owner", "version", "on_fail", "fail_above"):
            if key in c:
                rule[key] = c[key]
        return rule
    expect = foreign_expect(q, column)
    if expect is None:
        notes.append(
            f"{at}: quality check '{label}' ({q.get('type', 'library')}) is not a row rule "
            "sluicegate can run"
        )
        return None
    base = column or "table"
    rule = {"name": ident(str(q.get("name") or f"{base}_{label}")), "expect": expect}
    if q.get("description"):
        rule["description"] = q["description"]
    if str(q.get("severity", "")).lower() in ("warning", "warn", "info"):
        rule["on_fail"] = "warn"
    return rule


def foreign_expect(q: dict[str, Any], column: str | None) -> str | None:
    metric = str(q.get("metric") or q.get("rule") or "")
    args = q.get("arguments") or {}
    zero = q.get("mustBe") == 0 or q.get("mustBeLessOrEqualTo") == 0
    if column and metric in ("nullValues", "nullCheck") and zero:
        return f"{column} IS NOT NULL"
    values = args.get("validValues") if isinstance(args, dict) else None
    if column and metric in ("invalidValues", "validValues") and zero and isinstance(values, list):
        listed = ", ".join(sql_value(v) for v in values)
        return f"{column} IS NULL OR {column} IN ({listed})"
    if q.get("type") == "sql" and zero and isinstance(q.get("query"), str):
        m = re.fullmatch(
            r"\s*SELECT\s+COUNT\s*\(\s*\*\s*\)\s+FROM\s+[\w.{}\"`]+\s+WHERE\s+(.+?)\s*;?\s*",
            q["query"],
            flags=re.IGNORECASE | re.DOTALL,
        )
        if m:
            cond = m.group(1)
            tail = re.fullmatch(
                r"\((.+)\)\s+IS\s+NOT\s+TRUE", cond, flags=re.IGNORECASE | re.DOTALL
            )
            return tail.group(1) if tail else f"({cond}) IS NOT TRUE"
    return None


def sql_value(v: Any) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int | float):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def relationship_rules(
    obj: dict[str, Any], refs: set[str], notes: list[str]
) -> list[dict[str, Any]]:
    """Foreign keys into imported references become membership rules."""
    rules = []
    found = [(None, r) for r in obj.get("relationships") or []]
    for prop in obj.get("properties") or []:
        found += [(prop.get("name"), r) for r in prop.get("relationships") or []]
    for column, rel in found:
        if not isinstance(rel, dict):
            continue
        frm = rel.get("from") or (f"{obj.get('name')}.{column}" if column else None)
        to = rel.get("to")
        single = isinstance(frm, str) and isinstance(to, str) and "." in to
        target = to.split(".", 1) if single else None
        if single and target and target[0] in refs:
            col = frm.split(".")[-1]
            rules.append(
                {
                    "name": ident(f"known_{col}"),
                    "expect": f"{col} IS NULL OR {col} IN (SELECT {target[1]} FROM {target[0]})",
                }
            )
        else:
            notes.append(
                f"relationship {frm} -> {to}: only single-column foreign keys into an "
                "imported schema object become rules"
            )
    return rules
