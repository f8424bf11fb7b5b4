"""Profile a feed on the embedded engine with sluicegate's own reader and cast rules.

Every field is first read as VARCHAR by the run's reader, so corrupt lines are
``_corrupt`` and take no part: a truncated line can never make a column VARCHAR. Then one
aggregate query per table counts, for every column, how many present values each
candidate type would accept — with exactly the cast rules a run applies — and how many
each candidate date/time format would parse. What to declare is decided from these
numbers in :mod:`sluicegate.authoring.draft`; this module only measures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ..compile.cast import cast_text
from ..compile.render import col, lit
from ..contract.models import ColumnSpec, CsvOptions, TableSource
from ..engines import Engine

#: Candidate types tried on every column, narrowest first (the draft picks among them).
NUMERIC_CANDIDATES = ("BOOLEAN", "INTEGER", "BIGINT", "DECIMAL(38,9)", "DOUBLE")
DATE_FORMATS = ("%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y/%m/%d", "%Y%m%d")
TIMESTAMP_FORMATS = (
    "%Y-%m-%dT%H:%M:%S.%fZ",
    "%Y-%m-%dT%H:%M:%SZ",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%d/%m/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M",
    "%Y/%m/%d %H:%M:%S",
    "%d.%m.%Y %H:%M:%S",
)


@dataclass
class ColumnProfile:
    """What the engine counted for one column (text values, before any type is chosen)."""

    name: str
    records: int  # well-formed records of the table
    non_null: int  # present, non-null scalar values
    nested: int  # objects/arrays where a scalar belongs (a mismatch for every type)
    distinct: int
    castable: dict[str, int] = field(default_factory=dict)  # candidate type -> values
    date_formats: dict[str, int] = field(default_factory=dict)
    timestamp_formats: dict[str, int] = field(default_factory=dict)
    int_digits: int = 0
    scale: int = 0

    @property
    def nulls(self) -> int:
        return self.records - self.non_null


@dataclass
class TableProfile:
    """A profiled table: record counts and one :class:`ColumnProfile` per field."""

    table: str
    records: int
    corrupt: int
    columns: dict[str, ColumnProfile]


def countif(cond: exp.Expression) -> exp.Expression:
    """``SUM(CASE WHEN cond THEN 1 ELSE 0 END)``: portable, unlike COUNT_IF/FILTER."""
    return exp.Coalesce(
        this=exp.Sum(
            this=exp.Case(ifs=[exp.If(this=cond, true=lit(1))], default=lit(0)),
        ),
        expressions=[lit(0)],
    )


def is_not_null(e: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Is(this=e, expression=exp.null()))


def text_spec(path: str, fmt: str, names: list[str], delimiter: str = ",") -> TableSource:
    """A source declaring every field VARCHAR: what the profile reads."""
    csv = CsvOptions(delimiter=delimiter) if fmt == "csv" else None
    return TableSource(
        path=path, format=fmt, columns={n: ColumnSpec(type="VARCHAR") for n in names}, csv=csv
    )


def load_text(
    engine: Engine, files: list[str], spec: TableSource, partitions: list[str], table: str
) -> None:
    """Read ``files`` with the run's reader into ``table`` (every declared column text)."""
    from ..compile.read.table import LOADS_PARQUET, typed_select

    lines = table + "_lines"
    physical = None
    if spec.format in LOADS_PARQUET:
        engine.load_parquet(files, lines)
        physical = dict(engine.columns(lines))
    else:
        engine.load_lines(files, lines)
    select = typed_select(lines, spec, partitions, engine.dialect, physical)
    engine.create_table_as(table, select, temporary=True)


def _well_formed(table: str) -> exp.Select:
    return exp.select(exp.Star()).from_(exp.to_table(table)).where(exp.Not(this=col("_corrupt")))


def profile_table(engine: Engine, table: str, columns: list[str]) -> TableProfile:
    """Count, per column, values present, distinct, castable to each candidate type and
    parseable by each candidate format — one query over the well-formed records."""
    d = engine.dialect
    aggs: list[exp.Expression] = [exp.Count(this=exp.Star()), countif(col("_corrupt"))]
    labels: list[tuple[str, str, str]] = []
    for i, name in enumerate(columns):
        c = col(name)
        well = exp.Not(this=col("_corrupt"))
        aggs += [
            countif(exp.and_(well, is_not_null(c))),
            countif(exp.and_(well, col(f"_x{i}"))),
            exp.Count(this=exp.Distinct(expressions=[c])),
        ]
        labels += [(name, "non_null", ""), (name, "nested", ""), (name, "distinct", "")]
        for t in NUMERIC_CANDIDATES:
            aggs.append(countif(exp.and_(well, is_not_null(cast_text(c, ColumnSpec(type=t), d)))))
            labels.append((name, "castable", t))
        for kind, formats in (("DATE", DATE_FORMATS), ("TIMESTAMP", TIMESTAMP_FORMATS)):
            for f in formats:
                spec = ColumnSpec(type=kind, formats=[f])
                aggs.append(countif(exp.and_(well, is_not_null(cast_text(c, spec, d)))))
                labels.append((name, kind.lower() + "_formats", f))
        dec = exp.and_(well, is_not_null(cast_text(c, ColumnSpec(type="DECIMAL(38,9)"), d)))
        trimmed = exp.Trim(this=c)
        int_part = exp.RegexpExtract(
            this=trimmed, expression=lit(r"^[+-]?0*([0-9]*)"), group=lit(1)
        )
        frac = exp.RegexpExtract(this=trimmed, expression=lit(r"\.([0-9]*[1-9])0*$"), group=lit(1))
        for label, part in (("int_digits", int_part), ("scale", frac)):
            aggs.append(
                exp.Coalesce(
                    this=exp.Max(this=exp.Case(ifs=[exp.If(this=dec, true=exp.Length(this=part))])),
                    expressions=[lit(0)],
                )
            )
            labels.append((name, label, ""))
    query = exp.select(*aggs).from_(exp.to_table(table))
    row = engine.fetch(query)[0]
    total, corrupt = int(row[0]), int(row[1])
    records = total - corrupt
    profiles = {n: ColumnProfile(n, records, 0, 0, 0) for n in columns}
    for (name, what, key), value in zip(labels, row[2:], strict=True):
        p = profiles[name]
        v = int(value or 0)
        if key:
            getattr(p, what)[key] = v
        else:
            setattr(p, what, v)
    return TableProfile(table, total, corrupt, profiles)


def typed_value(name: str, spec: ColumnSpec, dialect: str) -> exp.Expression:
    return cast_text(col(name), spec, dialect)


def value_stats(engine: Engine, table: str, name: str, spec: ColumnSpec) -> dict[str, Any]:
    """Range and sign counts of a column's values once typed as ``spec``."""
    v = typed_value(name, spec, engine.dialect)
    query = exp.select(
        exp.Min(this=v),
        exp.Max(this=v),
        countif(exp.GT(this=v, expression=lit(0))),
        countif(exp.GTE(this=v, expression=lit(0))),
        exp.Count(this=v),
    ).from_(_well_formed(table).subquery("_w"))
    lo, hi, pos, nonneg, n = engine.fetch(query)[0]
    return {"min": lo, "max": hi, "positive": int(pos), "non_negative": int(nonneg), "n": int(n)}


def time_range(engine: Engine, table: str, name: str, spec: ColumnSpec) -> tuple[Any, Any]:
    v = typed_value(name, spec, engine.dialect)
    query = exp.select(exp.Min(this=v), exp.Max(this=v)).from_(_well_formed(table).subquery("_w"))
    lo, hi = engine.fetch(query)[0]
    return lo, hi


def top_values(engine: Engine, table: str, name: str, limit: int) -> list[tuple[str, int]]:
    """The most frequent non-NULL values of a column with their counts."""
    query = (
        exp.select(col(name), exp.Count(this=exp.Star()).as_("n"))
        .from_(_well_formed(table).subquery("_w"))
        .where(is_not_null(col(name)))
        .group_by(col(name))
        .order_by(exp.Ordered(this=exp.column("n"), desc=True), col(name))
        .limit(limit)
    )
    return [(str(v), int(n)) for v, n in engine.fetch(query)]


def mismatches(
    engine: Engine, table: str, name: str, spec: ColumnSpec, limit: int = 3
) -> list[str]:
    """A few present values that ``spec`` would not accept (evidence for the draft)."""
    v = typed_value(name, spec, engine.dialect)
    query = (
        exp.select(col(name))
        .distinct()
        .from_(_well_formed(table).subquery("_w"))
        .where(exp.and_(is_not_null(col(name)), exp.Is(this=v, expression=exp.null())))
        .order_by(col(name))
        .limit(limit)
    )
    return [str(r[0]) for r in engine.fetch(query)]


def coverage(
    engine: Engine,
    source: str,
    name: str,
    spec: ColumnSpec,
    reference: str,
    key: str,
    key_spec: ColumnSpec,
) -> tuple[int, int]:
    """(present values of ``source.name`` found among ``reference.key``, present values)."""
    d = engine.dialect
    keys = (
        exp.select(typed_value(key, key_spec, d).as_("_k"))
        .distinct()
        .from_(_well_formed(reference).subquery("_r"))
    )
    vals = exp.select(typed_value(name, spec, d).as_("_v")).from_(
        _well_formed(source).subquery("_w")
    )
    query = (
        exp.select(
            countif(is_not_null(exp.column("_k", "k"))),
            exp.Count(this=exp.Star()),
        )
        .from_(vals.subquery("s"))
        .join(
            keys.subquery("k"),
            on=exp.EQ(this=exp.column("_v", "s"), expression=exp.column("_k", "k")),
            join_type="left",
        )
        .where(is_not_null(exp.column("_v", "s")))
    )
    found, n = engine.fetch(query)[0]
    return int(found), int(n)


def format_cover(
    engine: Engine, table: str, name: str, kind: str, chosen: list[str], candidates: list[str]
) -> dict[str, int]:
    """For each candidate format: how many values ``chosen + [candidate]`` would parse, in
    order — the union, so a format that only re-parses values already covered adds 0."""
    well = exp.Not(this=col("_corrupt"))
    aggs = [
        countif(
            exp.and_(
                well,
                is_not_null(
                    cast_text(
                        col(name), ColumnSpec(type=kind, formats=[*chosen, f]), engine.dialect
                    )
                ),
            )
        )
        for f in candidates
    ]
    row = engine.fetch(exp.select(*aggs).from_(exp.to_table(table)))[0]
    return {f: int(v) for f, v in zip(candidates, row, strict=True)}
