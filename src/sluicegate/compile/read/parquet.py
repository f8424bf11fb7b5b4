"""Parquet rows → the typed relation, with the same flags as the text readers.

Parquet values already have a physical type, so each declared column is taken from the
physical column of the same name by this table (docs/contract-reference.md § "Parquet"):

============  ====================================================================
declared      physical value accepted
============  ====================================================================
any           a string column: the text cast rules, exactly as for NDJSON/CSV
integer       integers (must fit); decimals/floats only through their text (so
              ``1.50`` and ``2.0`` are a type_mismatch, never rounded)
decimal       integers and decimals (rounded half-up to the scale); floats through
              their shortest text
double        integers and decimals; floats through their text (NaN/Infinity obey
              ``finite``)
boolean       booleans
date          dates; timestamps (the date part; with a time zone: in UTC)
timestamp     timestamps; dates (midnight); with a time zone: converted to UTC
string        any scalar, as text (floats in the engine's shortest round-trip form)
============  ====================================================================

Anything else — a struct, list or map where a scalar belongs, a BLOB, a physical type
the table does not list for the declared kind — is a ``type_mismatch``. A Parquet row is
never corrupt (an unreadable file fails binding). Undeclared columns go to
``_undeclared`` (their non-NULL values); declared columns missing from every file are
absent (drift).
"""

from __future__ import annotations

import re

from sqlglot import exp

from ...contract.models import ColumnSpec, TableSource
from ..cast import cast_text
from ..render import col, lit
from . import relation
from .relation import LINEAGE, ReaderDialect, alias, not_null, with_partitions

INTEGER_TYPES = {
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "INT",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
}
TIMESTAMP_TYPES = {
    "TIMESTAMP",
    "TIMESTAMP_NS",
    "TIMESTAMP_MS",
    "TIMESTAMP_S",
    "TIMESTAMP_NTZ",
    "DATETIME",
}
TIMESTAMPTZ_TYPES = {"TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ"}

# declared kind -> physical kinds cast directly (TRY_CAST); "text" kinds go through the text
DIRECT = {
    "integer": {"integer"},
    "decimal": {"integer", "decimal"},
    "float": {"integer", "decimal"},
    "boolean": {"boolean"},
    "date": {"date", "timestamp", "timestamptz"},
    "timestamp": {"timestamp", "date", "timestamptz"},
}
VIA_TEXT = {
    "integer": {"string", "decimal", "float"},
    "decimal": {"string", "float"},
    "float": {"string", "float"},
    "boolean": {"string"},
    "date": {"string"},
    "timestamp": {"string"},
}


def physical_kind(type_text: str) -> str:
    """Classify an engine type name: integer, decimal, float, string, boolean, date,
    timestamp, timestamptz, nested, binary or other."""
    t = type_text.strip().upper()
    if t.endswith("]") or re.match(r"^(STRUCT|MAP|UNION|ARRAY|LIST)\b", t):
        return "nested"
    if t in INTEGER_TYPES:
        return "integer"
    if t.startswith("DECIMAL") or t.startswith("NUMERIC"):
        return "decimal"
    if t in ("FLOAT", "DOUBLE", "REAL"):
        return "float"
    if t in ("VARCHAR", "TEXT", "STRING"):
        return "string"
    if t == "BOOLEAN":
        return "boolean"
    if t == "DATE":
        return "date"
    if t in TIMESTAMP_TYPES:
        return "timestamp"
    if t in TIMESTAMPTZ_TYPES:
        return "timestamptz"
    if t in ("BLOB", "BYTEA", "BINARY"):
        return "binary"
    return "other"


def _utc(x: exp.Expression) -> exp.Expression:
    """A TIMESTAMP WITH TIME ZONE as the UTC wall-clock TIMESTAMP."""
    return exp.AtTimeZone(this=x, zone=lit("UTC"))


#: loaded columns that are not the file's own: the lineage and DuckDB's read_parquet extras
RESERVED = frozenset({*LINEAGE, "filename", "file_row_number"})


def same_type(physical: str, spec: ColumnSpec, dialect: str) -> bool:
    """The physical column already has exactly the declared type (``DECIMAL(10,2)`` read
    as ``DECIMAL(10, 2)``, ``INTEGER`` as ``INT``): its values are the typed values.

    Such a column needs no cast and cannot mismatch, so the reader skips both (a typed
    Parquet's timestamps and decimals otherwise went through text: ~0.1 s per 1M rows).
    """
    try:  # both read in the engine's dialect (DuckDB's TIMESTAMP is sqlglot's TIMESTAMPNTZ)
        built = exp.DataType.build(physical, dialect=dialect)
        declared = exp.DataType.build(spec.parsed.canonical, dialect=dialect)
    except Exception:  # noqa: BLE001 - a type name sqlglot does not know: not the same
        return False
    return built == declared


def taken_as_stored(
    source: TableSource, partitions: list[str], physical: dict[str, str] | None, dialect: str
) -> bool:
    """Every loaded column is a declared column already of its declared type, and no
    partition comes from a folder name: the typed relation then computes nothing per row
    (no cast, no text, no ``_undeclared`` JSON, no path parsing), so reading it again from
    the files costs less than copying it once (pipeline.py ``_load_typed``).

    A DOUBLE never qualifies (its NaN/Infinity still go through the text for ``finite``).
    """
    if partitions or physical is None:
        return False
    return all(
        name in source.columns and _as_stored(physical_type, source.columns[name], dialect)
        for name, physical_type in physical.items()
        if name not in RESERVED
    )


def _as_stored(physical_type: str, spec: ColumnSpec, dialect: str) -> bool:
    """Taken as it is: of the declared type, and not a DOUBLE (whose NaN/Infinity still go
    through the text for ``finite``)."""
    return spec.parsed.kind != "float" and same_type(physical_type, spec, dialect)


def _typed(x: exp.Expression, text: exp.Expression, spec: ColumnSpec, phys: str, dialect: str):  # noqa: ANN202
    kind = spec.parsed.kind
    target = spec.parsed.datatype
    if phys == "same":
        return x.copy()
    if kind == "string":
        if phys in ("nested", "binary"):
            return exp.cast(exp.null(), "VARCHAR")
        return text.copy()
    if phys in VIA_TEXT.get(kind, set()):
        return cast_text(text, spec, dialect)
    if phys in DIRECT.get(kind, set()):
        value = _utc(x.copy()) if phys == "timestamptz" else x.copy()
        return exp.TryCast(this=value, to=target.copy())
    return exp.cast(exp.null(), target.copy())


def typed_from_parquet(
    table: str,
    source: TableSource,
    partitions: list[str],
    dialect: ReaderDialect,
    physical: dict[str, str] | None = None,
) -> exp.Select:
    """The typed relation of Parquet rows loaded into ``table``.

    ``physical`` maps the loaded columns to their engine type names (``Engine.columns``);
    None means every declared column is present as text.
    """
    names = list(source.columns)
    n = len(names)
    phys = dict(physical) if physical is not None else dict.fromkeys(names, "VARCHAR")
    kinds = {k: physical_kind(v) for k, v in phys.items()}
    # columns whose values are already typed (a DOUBLE still goes through its text:
    # NaN and Infinity must meet the column's ``finite``)
    same = {
        nm
        for nm, spec in source.columns.items()
        if physical is not None and nm in phys and _as_stored(phys[nm], spec, dialect.name)
    }
    undeclared = [k for k in phys if k not in source.columns and k not in RESERVED]

    def value(nm: str) -> exp.Expression:
        return col(nm) if nm in phys else exp.null()

    texts = []
    for nm in names:
        k = kinds.get(nm)
        if nm in same and k != "string":  # no text: the value is typed and cannot mismatch
            texts.append(exp.cast(exp.null(), "VARCHAR"))
        elif k is None or k == "nested":
            texts.append(exp.cast(exp.null(), "VARCHAR"))
        elif k == "timestamptz":
            texts.append(exp.cast(_utc(col(nm)), "VARCHAR"))
        else:
            texts.append(exp.cast(value(nm), "VARCHAR"))
    und = None
    if undeclared:
        merged = dialect.json_object_text([(u, col(u)) for u in undeclared])
        und = exp.Case(
            ifs=[exp.If(this=exp.or_(*[not_null(col(u)) for u in undeclared]), true=merged)]
        )
    text = exp.select(
        *[col(c) for c in LINEAGE],
        *[col(p) for p in partitions],
        alias(exp.cast(exp.null(), "VARCHAR"), "_line"),
        alias(exp.true(), "_ok"),
        *[alias(t, f"_s{i}") for i, t in enumerate(texts)],
        *[
            alias(
                not_null(col(nm)) if kinds.get(nm) == "nested" else exp.false(),
                f"_n{i}",
            )
            for i, nm in enumerate(names)
        ],
        *[alias(exp.false() if nm in phys else exp.true(), f"_a{i}") for i, nm in enumerate(names)],
        alias(und if und is not None else exp.cast(exp.null(), "VARCHAR"), "_undeclared"),
        *[alias(value(nm), f"_p{i}") for i, nm in enumerate(names)],
    ).from_(with_partitions(table, partitions, [k for k in phys if k not in LINEAGE]))
    typed = [
        _typed(
            col(f"_p{i}"),
            col(f"_s{i}"),
            spec,
            "same" if nm in same else kinds.get(nm, "absent"),
            dialect.name,
        )
        for i, (nm, spec) in enumerate(source.columns.items())
    ]
    return relation.finish(
        text,
        source,
        partitions,
        dialect,
        lambda i, _name: col(f"_p{i}"),
        typed=typed,
        extra=[f"_p{i}" for i in range(n)],
    )
