"""The contract's JSON Schema, generated from the pydantic models (``sluicegate schema``).

An editor with the YAML language server completes and checks a contract that starts with
``# yaml-language-server: $schema=…``. The schema is pydantic's, adjusted where the
loader is more forgiving than the models' annotations:

* every key carries its sentence from :mod:`sluicegate.contract.key_docs`;
* shorthands the models accept before validation (``NAME: TYPE`` columns, ``engine:
  spark``, a single ``key``/``on`` column, ``NAME: SQL`` marts, ``export: folder``);
* ``format`` and column types are case-insensitive, as the loader reads them;
* any value that is not free text also accepts a string holding a ``${…}`` token, because
  tokens are substituted before validation (``fail_above: ${max_share}`` is valid).

Unknown keys stay errors (``additionalProperties: false``), so a misspelt key is flagged in
the editor as it is by ``sluicegate validate``.
"""

from __future__ import annotations

import json
import typing
from typing import Any

from pydantic import BaseModel

from .key_docs import KEY_DOCS
from .models import Contract, Source, TableSource
from .type_names import TYPE_NAMES, type_pattern

SCHEMA_ID = "urn:sluicegate:contract-schema"  # an identifier, not a download location
#: Where the committed copy lives in the repository (kept current by a test).
REPO_SCHEMA_PATH = "schema/contract.schema.json"

#: A string holding at least one ``${…}`` token (substituted before validation).
TOKEN = {
    "type": "string",
    "pattern": r"\$\{[^}]+\}",
    "description": "A ${var}, ${env:NAME}, ${secret:scope/key} or ${logical_date} token, "
    "substituted before the contract is validated.",
}


def contract_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a contract file.

    >>> s = contract_json_schema()
    >>> s["additionalProperties"], "source" in s["required"]
    (False, True)
    """
    schema = Contract.model_json_schema(mode="validation")
    defs = schema.setdefault("$defs", {})
    models = _models(Contract)
    _describe(schema, Contract)
    for name, sub in defs.items():
        if name in models:
            _describe(sub, models[name])
    _shorthands(schema, defs)
    _tokens(schema)
    defs["Token"] = TOKEN
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "sluicegate contract",
        "description": "One feed's data contract: the source and its declared columns, "
        "dedupe, references, rules, the gate and the outputs (docs/contract-reference.md).",
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


def render_schema() -> str:
    """The schema as the committed file holds it: sorted keys, two-space indent, final newline."""
    return json.dumps(contract_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _models(root: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every model reachable from ``root``'s fields, by class name (pydantic's $defs keys)."""
    found: dict[str, type[BaseModel]] = {}

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation.__name__ not in found:
                found[annotation.__name__] = annotation
                for f in annotation.model_fields.values():
                    visit(f.annotation)
            return
        for a in typing.get_args(annotation):
            visit(a)

    visit(root)
    return found


def key_doc(model: type[BaseModel], field: str) -> str | None:
    """The sentence documenting ``field`` of ``model`` (looked up along the class's bases)."""
    for cls in model.__mro__:
        doc = KEY_DOCS.get(cls.__name__, {}).get(field)
        if doc:
            return doc
    return None


def _keys(model: type[BaseModel]) -> dict[str, str]:
    """The YAML key of each field (its alias, e.g. ``as`` for ``as_``) -> the field name."""
    return {(info.alias or name): name for name, info in model.model_fields.items()}


def undocumented_keys() -> list[str]:
    """``Model.key`` for every key without a sentence (a test keeps this empty)."""
    return [
        f"{name}.{key}"
        for name, model in _models(Contract).items()
        for key, field in _keys(model).items()
        if key_doc(model, key) is None and key_doc(model, field) is None
    ]


def _describe(schema: dict[str, Any], model: type[BaseModel]) -> None:
    if model.__doc__:
        schema["description"] = " ".join(model.__doc__.split("\n\n")[0].split())
    keys = _keys(model)
    for key, prop in schema.get("properties", {}).items():
        doc = key_doc(model, key) or key_doc(model, keys.get(key, key))
        if doc:
            prop["description"] = doc


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _ci(words: typing.Iterable[str]) -> str:
    """A case-insensitive ECMA-262 pattern for ``words`` (editors' regexes have no (?i))."""
    alts = ["".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in w) for w in words]
    return "^(" + "|".join(alts) + ")$"


def _one_of_names(names: list[str], description: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"anyOf": [{"enum": names}, {"type": "string", "pattern": _ci(names)}]}
    if description:
        out["description"] = description
    return out


def _shorthands(schema: dict[str, Any], defs: dict[str, Any]) -> None:
    """Accept what the models' before-validators turn into their declared shapes."""
    column_type = {
        "anyOf": [{"enum": list(TYPE_NAMES)}, {"type": "string", "pattern": type_pattern()}],
        "description": key_doc(TableSource, "columns"),
    }
    for name, model in (("TableSource", TableSource), ("Source", Source)):
        formats = list(typing.get_args(model.model_fields["format"].annotation))
        if name in defs:
            props = defs[name]["properties"]
            props["columns"]["additionalProperties"] = {
                "anyOf": [
                    {**column_type, "description": "NAME: TYPE shorthand"},
                    _ref("ColumnSpec"),
                    _ref("Token"),
                ]
            }
            props["format"] = {
                **_one_of_names(formats, props["format"].get("description")),
                "default": "ndjson",
            }
    spec = defs["ColumnSpec"]["properties"]
    spec["type"] = {**column_type, "description": spec["type"]["description"]}
    engines = list(typing.get_args(_engine_names()))
    schema["properties"]["engine"] = {
        "anyOf": [{"enum": engines}, _ref("EngineSection"), _ref("Token")],
        "description": schema["properties"]["engine"]["description"],
    }
    one_or_list = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    for model, field in (("Dimension", "key"), ("AsOfJoin", "on")):
        if model in defs:
            prop = defs[model]["properties"][field]
            defs[model]["properties"][field] = {**one_or_list, "description": prop["description"]}
    if "Fact" in defs:
        prop = defs["Fact"]["properties"]["export"]
        prop["anyOf"] = [*prop.get("anyOf", []), {"type": "string"}]
    if "ServeTable" in defs:
        prop = defs["ServeTable"]["properties"]["key"]
        prop["anyOf"] = [{"type": "string"}, *prop.get("anyOf", [])]
    if "ServeTarget" in defs:
        tables = defs["ServeTarget"]["properties"]["tables"]
        tables["items"] = {"anyOf": [{"type": "string"}, _ref("ServeTable")]}
    if "Model" in defs:
        marts = defs["Model"]["properties"]["marts"]
        marts["additionalProperties"] = {"anyOf": [{"type": "string"}, _ref("Mart")]}


def _engine_names() -> Any:
    from .models import EngineSection

    return EngineSection.model_fields["name"].annotation


def _tokens(node: Any) -> None:
    """Let every constrained scalar also be a ``${…}`` token (substituted before validation)."""
    if not isinstance(node, dict):
        return
    for key in ("properties", "$defs"):
        for name, sub in list(node.get(key, {}).items()):
            node[key][name] = _tokenize(sub)
    for key in ("additionalProperties", "items"):
        if isinstance(node.get(key), dict):
            node[key] = _tokenize(node[key])
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            _tokens(sub)


def _tokenize(sub: dict[str, Any]) -> dict[str, Any]:
    _tokens(sub)
    if not _constrained_scalar(sub):
        return sub
    meta = {k: sub.pop(k) for k in ("description", "default", "title") if k in sub}
    return {"anyOf": [sub, {"$ref": "#/$defs/Token"}], **meta}


def _constrained_scalar(sub: dict[str, Any]) -> bool:
    """A value a token could stand for that plain ``{"type": "string"}`` would not admit."""
    if "$ref" in sub:
        return False
    if "anyOf" in sub:
        return any(_constrained_scalar(s) for s in sub["anyOf"]) and all(
            "$ref" not in s and s.get("type") not in ("object", "array") for s in sub["anyOf"]
        )
    t = sub.get("type")
    if t in ("integer", "number", "boolean"):
        return True
    return "enum" in sub or "const" in sub or (t == "string" and "pattern" in sub)
