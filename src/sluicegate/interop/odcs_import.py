"""Import an Open Data Contract Standard (ODCS v3) document as a sluicegate contract.

A document sluicegate exported comes back as the same contract: its ``sluicegate.*``
custom properties hold what ODCS cannot say. A document written by another tool is
mapped from the standard's own fields — properties to columns, ``required`` to
``nullable: false``, ``primaryKey`` to the dedupe key, relationships and SQL, null and
valid-value checks to rules, a ``latency`` SLA on a column to freshness, a local or
object-store server to the source path — and **every part that has no sluicegate
equivalent is named** in :attr:`Imported.notes` (and at the top of the written YAML),
never dropped silently.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from open_data_contract_standard.model import OpenDataContractStandard
from pydantic import ValidationError
from ruamel.yaml import YAML

from ..contract.coltypes import UnknownTypeError, parse_type
from ..contract.suggest import closest
from ..errors import UnknownNameError, UsageError
from .odcs_common import custom_of as _custom  # short names: used on every node
from .odcs_common import ident as _ident
from .odcs_export import PREFIX
from .odcs_rules import option_rules, quality_rule, relationship_rules

#: Keys each level of an ODCS document may carry that the import understands (or that
#: only describe: names, descriptions). Every other key present is reported.
HANDLED_TOP = {
    "apiVersion",
    "kind",
    "id",
    "name",
    "version",
    "status",
    "schema",
    "servers",
    "team",
    "slaProperties",
    "slaDefaultElement",
    "customProperties",
    "contractCreatedTs",
}
HANDLED_OBJECT = {
    "name",
    "physicalName",
    "physicalType",
    "properties",
    "quality",
    "customProperties",
    "relationships",
    "description",
    "businessName",
    "logicalType",
    "id",
}
HANDLED_PROPERTY = {
    "name",
    "physicalType",
    "logicalType",
    "logicalTypeOptions",
    "required",
    "primaryKey",
    "primaryKeyPosition",
    "partitioned",
    "partitionKeyPosition",
    "quality",
    "customProperties",
    "relationships",
    "description",
    "businessName",
    "id",
}
LOGICAL_TYPES = {
    "string": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
}
FORMATS = {
    "json": "ndjson",
    "ndjson": "ndjson",
    "jsonl": "ndjson",
    "csv": "csv",
    "parquet": "parquet",
}


@dataclass
class Imported:
    """The contract as a YAML-ready mapping, and what could not be carried over."""

    contract: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_yaml(self, origin: str = "") -> str:
        head = [f"# Imported from the ODCS document {origin} by `sluicegate import odcs`."]
        if self.notes:
            head.append("# Not imported (no sluicegate equivalent) or needing a decision:")
            head += [f"#   - {n}" for n in self.notes]
        out = io.StringIO()
        yaml = YAML()
        yaml.default_flow_style = False
        yaml.width = 100
        yaml.dump(self.contract, out)
        return "\n".join(head) + "\n" + out.getvalue()


def import_odcs(file: str | Path, source: str | None = None) -> Imported:
    """Read an ODCS file and map it; ``source`` names the schema object to read as the feed.

    Raises:
        UsageError: not an ODCS v3 document, or no schema object to import.
    """
    import yaml  # the ODCS models' own YAML reader (safe_load)

    path = Path(file)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: cannot read an ODCS document: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: an ODCS document is a YAML mapping")
    try:
        OpenDataContractStandard.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise UsageError(f"{path}: not an ODCS v3 document: {where}: {first['msg']}") from None
    return from_odcs(data, source)


def _foreign_custom(items: Any) -> list[str]:
    return [
        str(i.get("property"))
        for i in items or []
        if isinstance(i, dict) and not str(i.get("property", "")).startswith(PREFIX)
    ]


def from_odcs(data: dict[str, Any], source: str | None = None) -> Imported:
    """Map a parsed ODCS document (see the module docstring)."""
    notes: list[str] = []
    top = _custom(data.get("customProperties"))
    objects = [o for o in data.get("schema") or [] if isinstance(o, dict)]
    if not objects:
        raise UsageError("the ODCS document has no schema object to import")
    roles = {o.get("name"): _custom(o.get("customProperties")).get("role") for o in objects}
    if source is None:
        source = next((n for n, r in roles.items() if r == "source"), objects[0].get("name"))
    src_obj = next((o for o in objects if o.get("name") == source), None)
    if src_obj is None:  # --source: a typo is exit 2 with the closest name
        raise UnknownNameError(
            "--source",
            str(source),
            [str(o.get("name")) for o in objects],
            what="schema object in the document",
            suggestion=closest(str(source), [str(o.get("name")) for o in objects]),
        )
    name = top.get("name") or _ident(str(data.get("name") or data.get("id") or source))
    contract: dict[str, Any] = {"name": name}
    owner = _owner(data.get("team"))
    if owner:
        contract["owner"] = owner
    for key in ("vars", "engine"):
        if key in top:
            contract[key] = top[key]
    ours = bool(top) or any(roles.values())
    src, rules, key = _table(src_obj, data, notes, source=True)
    if "source_name" in top:
        src = {"name": top["source_name"], **src}
    elif not ours and _ident(str(source), lower=False) != name:
        src = {"name": _ident(str(source), lower=False), **src}
    contract["source"] = src
    if "dedupe" in top:
        contract["dedupe"] = top["dedupe"]
    elif key:
        contract["dedupe"] = {"key": key}
        notes.append(
            f"primaryKey {key} became dedupe.key: repeated keys are set aside as duplicates, not failed"
        )
    refs = {}
    for o in objects:
        if o is src_obj:
            continue
        ref, ref_rules, _ = _table(o, data, notes, source=False)
        refs[_ident(str(o.get("name")), lower=False)] = ref
        if ref_rules:
            notes.append(
                f"schema object '{o.get('name')}': its quality checks are not imported (it is read as a reference)"
            )
    if refs:
        contract["references"] = refs
    rules += relationship_rules(src_obj, set(refs), notes)
    if rules:
        contract["rules"] = rules
    for key in ("gate", "outputs", "model", "serve", "alerts", "lineage"):
        if key in top:
            contract[key] = top[key]
    if "outputs" not in contract:
        contract.setdefault("vars", {})["warehouse"] = f"./{name}.duckdb"
        contract["outputs"] = {
            "warehouse": "${warehouse}",
            "clean": f"{name}_clean",
            "quarantine": f"{name}_dlq",
            "duplicates": f"{name}_duplicates",
        }
    _sla(data, src_obj, contract["source"], notes)
    paths = [contract["source"].get("path"), *(r.get("path") for r in refs.values())]
    if any("${root}" in str(p) for p in paths) and "root" not in contract.get("vars", {}):
        contract.setdefault("vars", {})["root"] = "./data"
    _leftovers(data, notes)
    order = ("name", "owner", "vars", "engine", "source", "dedupe", "references", "rules")
    ordered = {k: contract[k] for k in order if k in contract}
    return Imported({**ordered, **{k: v for k, v in contract.items() if k not in ordered}}, notes)


def _owner(team: Any) -> str | None:
    members = team.get("members") if isinstance(team, dict) else team
    people = [m for m in members or [] if isinstance(m, dict) and m.get("username")]
    owners = [m for m in people if str(m.get("role", "")).lower() == "owner"]
    chosen = (owners or people[:1] or [None])[0]
    return str(chosen["username"]) if chosen else None


def _table(
    obj: dict[str, Any], data: dict[str, Any], notes: list[str], *, source: bool
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """(source-shaped mapping, rules, primary key columns) of one schema object."""
    c = _custom(obj.get("customProperties"))
    oname = obj.get("name")
    where = f"schema object '{oname}'"
    path, fmt = _location(obj, data, c, notes, where)
    spec: dict[str, Any] = {"path": path, "format": fmt}
    for key in (
        "csv",
        "ready_when",
        "expected_fingerprint",
        "freshness",
        "follow_symlinks",
        "kafka",
    ):
        if key in c:
            spec[key] = c[key]
    if not spec["path"] or spec["path"] == "None":  # a Kafka source has no path
        del spec["path"]
    columns: dict[str, Any] = {}
    partitions: list[str] = []
    rules: list[dict[str, Any]] = []
    pk: list[tuple[int, str]] = []
    for i, prop in enumerate(obj.get("properties") or []):
        pname = str(prop.get("name"))
        pc = _custom(prop.get("customProperties"))
        at = f"{where}, property '{pname}'"
        if pc.get("partition"):  # a Hive folder column sluicegate exported
            partitions.append(pname)
            continue
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", pname) or pname.startswith("_"):
            notes.append(f"{at}: not an identifier, cannot be a column")
            continue
        type_text = _type(prop, at, notes)
        if type_text is None:
            continue
        col: dict[str, Any] = {"type": type_text}
        if prop.get("required") is True:
            col["nullable"] = False
        for key in ("formats", "finite", "nullable"):
            if key in pc:
                col[key] = pc[key]
        if prop.get("partitioned"):
            notes.append(f"{at}: partitioned in the storage; declared as a plain column")
        columns[pname] = type_text if list(col) == ["type"] else col
        if prop.get("primaryKey"):
            pk.append((int(prop.get("primaryKeyPosition") or i), pname))
        if prop.get("unique"):
            notes.append(f"{at}: unique is not a row rule (see dedupe.key)")
        rules += option_rules(pname, prop.get("logicalTypeOptions"), at, notes)
        for q in prop.get("quality") or []:
            rule = quality_rule(q, pname, at, notes)
            if rule:
                rules.append(rule)
        _extra_keys(prop, HANDLED_PROPERTY | {"unique"}, at, notes)
    if not columns:
        raise UsageError(f"{where} has no property that can be declared as a column")
    spec["columns"] = columns
    if partitions:
        spec["partitions"] = partitions
    for q in obj.get("quality") or []:
        rule = quality_rule(q, None, where, notes)
        if rule:
            rules.append(rule)
    _extra_keys(obj, HANDLED_OBJECT, where, notes)
    return spec, rules, [n for _, n in sorted(pk)]


def _location(
    obj: dict[str, Any], data: dict[str, Any], c: dict[str, Any], notes: list[str], where: str
) -> tuple[str, str]:
    if "format" in c:
        return str(obj.get("physicalName")), str(c["format"])
    files = [
        s
        for s in data.get("servers") or []
        if isinstance(s, dict) and (s.get("path") or s.get("location"))
    ]
    others = [s for s in data.get("servers") or [] if isinstance(s, dict) and s not in files]
    for s in others:
        notes.append(
            f"server '{s.get('server')}' (type {s.get('type')}): sluicegate reads files; "
            "it is not imported"
        )
        data["servers"] = files  # name each one once
    fmt = "ndjson"
    physical = str(obj.get("physicalName") or obj.get("name"))
    if files:
        s = files[0]
        base = str(s.get("path") or s.get("location")).rstrip("/")
        raw_fmt = str(s.get("format") or "").lower()
        if raw_fmt and raw_fmt not in FORMATS:
            notes.append(f"{where}: format '{raw_fmt}' is not one sluicegate reads; ndjson assumed")
        fmt = FORMATS.get(raw_fmt, "ndjson")
        return (base if base.endswith(physical) else f"{base}/{physical}"), fmt
    notes.append(
        f"{where}: no file location in the document; path set to ${{root}}/{physical} "
        "(set vars.root or pass --var root=…)"
    )
    return f"${{root}}/{physical}", fmt


def _type(prop: dict[str, Any], at: str, notes: list[str]) -> str | None:
    physical = prop.get("physicalType")
    if physical:
        try:
            parse_type(str(physical))
            return str(physical)
        except UnknownTypeError:
            pass
    logical = str(prop.get("logicalType") or "").lower()
    opts = prop.get("logicalTypeOptions") or {}
    if logical == "number" and "precision" in opts:
        return f"DECIMAL({opts['precision']},{opts.get('scale', 0)})"
    if logical in LOGICAL_TYPES:
        if physical:
            notes.append(f"{at}: physicalType '{physical}' read as {LOGICAL_TYPES[logical]}")
        return LOGICAL_TYPES[logical]
    notes.append(f"{at}: logicalType '{logical or physical}' has no flat column type; not declared")
    return None


def _sla(
    data: dict[str, Any], obj: dict[str, Any], source: dict[str, Any], notes: list[str]
) -> None:
    for sla in data.get("slaProperties") or []:
        if not isinstance(sla, dict):
            continue
        prop = sla.get("property")
        element = str(sla.get("element") or data.get("slaDefaultElement") or "")
        unit = str(sla.get("unit") or "").lower()
        unit_letter = {
            "s": "s",
            "m": "m",
            "h": "h",
            "d": "d",
            "day": "d",
            "days": "d",
            "hour": "h",
            "hours": "h",
        }.get(unit)
        table, _, column = element.rpartition(".")
        if (
            prop == "latency"
            and unit_letter
            and isinstance(sla.get("value"), int)
            and table == obj.get("name")
            and column in source["columns"]
        ):
            if "freshness" not in source:
                source["freshness"] = {"column": column, "max_age": f"{sla['value']}{unit_letter}"}
            continue
        notes.append(
            f"slaProperties: {prop} {sla.get('value', '')}{sla.get('unit') or ''} on {element or 'the contract'}"
        )


def _extra_keys(node: dict[str, Any], handled: set[str], where: str, notes: list[str]) -> None:
    extra = sorted(k for k, v in node.items() if k not in handled and v not in (None, [], {}))
    foreign = _foreign_custom(node.get("customProperties"))
    if foreign:
        extra.append("customProperties " + ", ".join(foreign))
    if extra:
        notes.append(f"{where}: {', '.join(extra)}")


def _leftovers(data: dict[str, Any], notes: list[str]) -> None:
    _extra_keys(data, HANDLED_TOP, "contract", notes)
