"""Export a contract as an Open Data Contract Standard (ODCS v3) document.

Built with the standard's own pydantic models (PyPI ``open-data-contract-standard``):

* ``source`` and each reference → a ``schema`` object; columns → properties with a
  ``logicalType``, the declared type as ``physicalType`` and ``required`` for
  ``nullable: false``; Hive partitions → properties with ``partitioned: true``;
* rules → SQL quality checks on the source object — ``SELECT COUNT(*) FROM <source>
  WHERE (<expect>) IS NOT TRUE`` must be 0, the count of rows the rule fails;
* ``owner`` → the team's owner; ``source.freshness`` → a ``latency`` SLA on the column;
* what ODCS has no place for (gate bands, dedupe, outputs/DLQ, the model, engine, vars,
  CSV dialect, date formats, ``on_fail``…) → ``customProperties`` named ``sluicegate.*``,
  holding the contract's own text, so an import gives back the same contract.

The contract is read as written — ``${…}`` tokens stay tokens, so a secret is never
resolved into the export — after it has been validated.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from open_data_contract_standard.model import (
    CustomProperty,
    DataQuality,
    OpenDataContractStandard,
    SchemaObject,
    SchemaProperty,
    Server,
    ServiceLevelAgreementProperty,
    Team,
    TeamMember,
)

from ..contract.coltypes import UnknownTypeError, parse_type
from ..contract.yamlpos import load_with_positions

API_VERSION = "v3.1.0"
PREFIX = "sluicegate."
LOGICAL = {
    "integer": "integer",
    "decimal": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
}
#: Top-level sections carried whole as custom properties (ODCS has no equivalent).
CARRIED = ("vars", "engine", "dedupe", "gate", "outputs", "model", "serve", "alerts", "lineage")


def custom(name: str, value: Any) -> CustomProperty:
    return CustomProperty(property=PREFIX + name, value=value)


def failing_rows_query(table: str, expect: str) -> str:
    """The ODCS SQL check for a rule: how many rows it fails (FALSE and NULL fail)."""
    return f"SELECT COUNT(*) FROM {table} WHERE ({expect}) IS NOT TRUE"


def export_odcs(contract: str | Path, variables: dict[str, str] | None = None) -> str:
    """The ODCS YAML of ``contract`` (validated first: a broken contract is not exported)."""
    from ..compile.contract_check import load_contract

    path = Path(contract)
    load_contract(path, variables=variables)  # raises ContractError with every problem
    raw, _ = load_with_positions(path.read_text(encoding="utf-8"))
    raw = plain(raw)
    return to_odcs(raw, plain(_file_rules(path, raw))).to_yaml()


def plain(node: Any) -> Any:
    """Python's own scalars in place of ruamel's (its ScalarFloat keeps formatting state
    that a YAML writer would otherwise dump as a Python object)."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return node


def _file_rules(path: Path, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The rules of ``rules_file`` as written (the export carries them inline)."""
    name = raw.get("rules_file")
    if not isinstance(name, str):
        return []
    file = Path(name) if Path(name).is_absolute() else path.parent / name
    data, _ = load_with_positions(file.read_text(encoding="utf-8"))
    return list(data.get("rules") or []) if isinstance(data, dict) else list(data or [])


def to_odcs(
    raw: dict[str, Any], extra_rules: list[dict[str, Any]] | None = None
) -> OpenDataContractStandard:
    """Map a contract as written (a parsed YAML mapping) to the ODCS model."""
    name = raw["name"]
    source = dict(raw["source"])
    table = source.get("name") or name
    rules = list(raw.get("rules") or []) + list(extra_rules or [])
    objects = [_object(table, source, "source", rules)]
    for ref_name, ref in (raw.get("references") or {}).items():
        objects.append(_object(ref_name, dict(ref), "reference", []))
    top: list[CustomProperty] = [custom(k, raw[k]) for k in CARRIED if k in raw]
    if "name" in source:
        top.append(custom("source_name", source["name"]))
    owner = raw.get("owner")
    doc = OpenDataContractStandard(
        apiVersion=API_VERSION,
        kind="DataContract",
        id=f"sluicegate:{name}",
        name=name,
        version="1.0.0",
        status="active",
        servers=None
        if str(source.get("format", "")).lower() == "kafka"  # topics: carried in sluicegate.kafka
        else [
            Server(
                server="source",
                type="local",
                path=str(source.get("path")),
                format=_server_format(source.get("format", "ndjson")),
            )
        ],
        schema=objects,
        team=Team(members=[TeamMember(username=str(owner), role="owner")]) if owner else None,
        slaProperties=_sla(table, source),
        customProperties=top or None,
    )
    return doc


def _server_format(fmt: Any) -> str:
    """ODCS names NDJSON files ``json``; a ``${token}`` format stays as written."""
    text = str(fmt).lower()
    return "json" if text == "ndjson" else text


def _object(
    name: str, spec: dict[str, Any], role: str, rules: list[dict[str, Any]]
) -> SchemaObject:
    props = []
    for col, value in (spec.get("columns") or {}).items():
        props.append(_property(col, {"type": value} if isinstance(value, str) else dict(value)))
    for p in spec.get("partitions") or []:
        props.append(
            SchemaProperty(
                name=p,
                logicalType="string",
                physicalType="VARCHAR",
                partitioned=True,
                customProperties=[custom("partition", True)],
            )
        )
    carried = [custom("role", role), custom("format", spec.get("format", "ndjson"))]
    for key in (
        "csv",
        "ready_when",
        "expected_fingerprint",
        "freshness",
        "follow_symlinks",
        "kafka",
    ):
        if key in spec:
            carried.append(custom(key, spec[key]))
    return SchemaObject(
        name=name,
        physicalName=str(spec["path"]) if spec.get("path") else None,
        physicalType="file",
        properties=props,
        quality=[_quality(name, r) for r in rules] or None,
        customProperties=carried,
    )


def _property(name: str, spec: dict[str, Any]) -> SchemaProperty:
    type_text = str(spec.get("type"))
    try:
        logical = LOGICAL[parse_type(type_text).kind]
    except UnknownTypeError:  # a ${token}: the type is only known at load time
        logical = None
    nullable = spec.get("nullable", True)
    carried = [custom(k, spec[k]) for k in ("formats", "finite") if k in spec]
    if not isinstance(nullable, bool):
        carried.append(custom("nullable", nullable))
    return SchemaProperty(
        name=name,
        logicalType=logical,
        physicalType=type_text,
        required=(not nullable) if isinstance(nullable, bool) else None,
        customProperties=carried or None,
    )


def _quality(table: str, rule: dict[str, Any]) -> DataQuality:
    expect = str(rule.get("expect"))
    on_fail = rule.get("on_fail", "quarantine")
    carried = [custom("expect", expect)]
    carried += [
        custom(k, rule[k]) for k in ("on_fail", "version", "fail_above", "owner") if k in rule
    ]
    return DataQuality(
        type="sql",
        name=str(rule.get("name")),
        description=rule.get("description"),
        query=failing_rows_query(table, expect),
        mustBe=0,
        severity={"warn": "warning", "abort": "critical"}.get(str(on_fail), "error"),
        customProperties=carried,
    )


def _sla(table: str, source: dict[str, Any]) -> list[ServiceLevelAgreementProperty] | None:
    fresh = source.get("freshness")
    if not isinstance(fresh, dict):
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([smhd])\s*", str(fresh.get("max_age", "")))
    if not m:
        return None
    return [
        ServiceLevelAgreementProperty(
            property="latency",
            value=int(m.group(1)),
            unit=m.group(2),
            element=f"{table}.{fresh.get('column')}",
        )
    ]
