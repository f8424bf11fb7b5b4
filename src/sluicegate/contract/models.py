"""The contract as pydantic models: what the user wrote, validated for shape.

Every model forbids unknown keys so a misspelt key is an error (with a did-you-mean),
never a silently ignored setting. Semantic checks that need more than one section
(rule columns against the schema, dedupe keys, references) live in ``compile/contract_check.py``.
Later sections (``model``, ``serve``) slot in as fields of :class:`Contract`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .coltypes import ColumnType, UnknownTypeError, parse_type
from .formats import FormatError, check_format
from .iceberg_spec import TABLE_REF, IcebergCatalog
from .kafka_spec import KafkaSource
from .model_spec import Model
from .notify_spec import Alert, Lineage
from .object_store_spec import ObjectStore
from .secret import Secret
from .serve_spec import ServeTarget

IDENT = r"^[a-z_][a-z0-9_]*$"
SQL_IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"


class Strict(BaseModel):
    """Base: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=False)


class ColumnSpec(Strict):
    """One declared column. ``NAME: TYPE`` in YAML is shorthand for ``{type: TYPE}``."""

    type: str
    nullable: bool = True
    formats: list[str] | None = None
    finite: bool = True

    @field_validator("type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        try:
            parse_type(v)
        except UnknownTypeError as exc:
            raise ValueError(str(exc)) from None
        return v

    @model_validator(mode="after")
    def _formats_only_for_time(self) -> ColumnSpec:
        if self.formats is not None:
            if self.parsed.kind not in ("date", "timestamp"):
                raise ValueError("formats: is only allowed on DATE and TIMESTAMP columns")
            if not self.formats:
                raise ValueError("formats: must list at least one strptime format")
            for f in self.formats:
                try:
                    check_format(f)
                except FormatError as exc:
                    raise ValueError(str(exc)) from None
        if not self.finite and self.parsed.kind != "float":
            raise ValueError("finite: false is only allowed on DOUBLE/FLOAT columns")
        return self

    @property
    def parsed(self) -> ColumnType:
        return parse_type(self.type)


def _columns_shorthand(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: ({"type": t} if isinstance(t, str) else t) for k, t in v.items()}
    return v


class Freshness(Strict):
    """The newest value of ``column`` must be younger than ``max_age`` (e.g. ``36h``, ``2d``)."""

    column: str
    max_age: str
    on_stale: Literal["warn", "fail"] = "warn"  # the freshness fact's status when stale

    @field_validator("max_age")
    @classmethod
    def _duration(cls, v: str) -> str:
        if not re.fullmatch(r"\s*\d+\s*[smhd]\s*", v):
            raise ValueError("max_age must look like 90s, 30m, 36h or 2d")
        return v.strip()

    @property
    def max_age_seconds(self) -> int:
        n, unit = int(self.max_age[:-1]), self.max_age[-1]
        return n * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]


class CsvOptions(Strict):
    """CSV dialect of a source: one record per line; the header line is not a record.

    ``quote: ""`` turns quoting off (every quote character is data).
    """

    delimiter: str = ","
    header: bool = True
    quote: str = '"'

    @model_validator(mode="after")
    def _single_chars(self) -> CsvOptions:
        if len(self.delimiter) != 1 or self.delimiter in "\r\n":
            raise ValueError("delimiter must be one character (not a line break)")
        if len(self.quote) > 1 or (self.quote and self.quote in "\r\n"):
            raise ValueError("quote must be one character, or empty for no quoting")
        if self.quote == self.delimiter:
            raise ValueError("quote and delimiter must differ")
        return self


class TableSource(Strict):
    """A file-backed table: the shape shared by ``source`` and ``references``."""

    path: str
    format: Literal["ndjson", "csv", "parquet"] = "ndjson"
    columns: dict[str, ColumnSpec]
    csv: CsvOptions | None = None
    # links are not followed by default; true reads links that stay inside the folder
    follow_symlinks: bool = False

    @field_validator("columns", mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return _columns_shorthand(v)

    @field_validator("format", mode="before")
    @classmethod
    def _format_any_case(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v  # CSV, Parquet: like type names

    @field_validator("columns")
    @classmethod
    def _column_names(cls, v: dict[str, ColumnSpec]) -> dict[str, ColumnSpec]:
        if not v:
            raise ValueError("declare at least one column")
        for name in v:
            if not re.fullmatch(SQL_IDENT, name):  # fullmatch: '$' accepts 'a\n'
                raise ValueError(f"column name '{name}' must be a plain identifier")
            if name.startswith("_"):
                raise ValueError(f"column '{name}': names starting with _ are reserved")
        return v


class Source(TableSource):
    """The feed a run reads: files under ``path``, or (``format: kafka``) topics."""

    path: str = ""  # required for files; a Kafka or Iceberg source has none (checked below)
    format: Literal["ndjson", "csv", "parquet", "kafka", "iceberg", "delta"] = "ndjson"
    kafka: KafkaSource | None = None  # contract/kafka_spec.py
    # format: iceberg — a table of a catalog in ``catalogs:``, bound by snapshot
    catalog: str | None = None
    table: str | None = Field(default=None, pattern=TABLE_REF)
    snapshot_id: int | None = None
    as_of: str | None = None  # ISO timestamp: the snapshot (or Delta version) current then
    # format: delta — the table version a run reads (engines/delta_source.py)
    version: int | None = Field(default=None, ge=0)
    name: str | None = None
    freshness: Freshness | None = None
    # a marker (e.g. _SUCCESS) relative to the source folder; absent -> exit 4, nothing published
    ready_when: str | None = None
    # the frozen schema fingerprint governance expects; a different contract schema fails
    expected_fingerprint: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    # Hive folders (month=2024-01) that become VARCHAR columns; see contract-reference.md
    partitions: list[str] = Field(default_factory=list)

    @field_validator("partitions")
    @classmethod
    def _partition_names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not re.fullmatch(SQL_IDENT, name) or name.startswith("_"):
                raise ValueError(
                    f"partition '{name}' must be a plain identifier not starting with _"
                )
        if len(set(v)) != len(v):
            raise ValueError("a partition is listed twice")
        return v

    @model_validator(mode="after")
    def _kafka_or_path(self) -> Source:
        if self.format == "kafka":
            if self.kafka is None:
                raise ValueError("format: kafka needs a kafka: section (bootstrap_servers, topics)")
            if self.path or self.partitions or self.ready_when or self.csv:
                raise ValueError("a Kafka source has no path, partitions, ready_when or csv")
        elif self.kafka is not None:
            raise ValueError(f"kafka: is only for format: kafka, not {self.format}")
        elif self.format == "iceberg":
            if not self.catalog or not self.table:
                raise ValueError("format: iceberg needs catalog: and table: (namespace.name)")
            if self.path or self.partitions or self.ready_when or self.csv:
                raise ValueError("an Iceberg source has no path, partitions, ready_when or csv")
            if self.snapshot_id is not None and self.as_of is not None:
                raise ValueError("give snapshot_id or as_of, not both")
        elif self.format == "delta":
            if not self.path:
                raise ValueError("format: delta needs path: (the Delta table's folder)")
            if self.partitions or self.ready_when or self.csv:
                raise ValueError("a Delta source has no partitions, ready_when or csv")
            if self.catalog or self.table or self.snapshot_id is not None:
                raise ValueError("catalog/table/snapshot_id are for format: iceberg; use version")
            if self.version is not None and self.as_of is not None:
                raise ValueError("give version or as_of, not both")
        elif self.catalog or self.table or self.snapshot_id is not None or self.as_of:
            raise ValueError(
                f"catalog/table/snapshot_id/as_of are only for format: iceberg, not {self.format}"
            )
        elif not self.path:
            raise ValueError("path is required (a file, folder or glob)")
        return self

    @model_validator(mode="after")
    def _version_only_for_delta(self) -> Source:
        if self.version is not None and self.format != "delta":
            raise ValueError(f"version is only for format: delta, not {self.format}")
        return self

    @model_validator(mode="after")
    def _partitions_are_not_columns(self) -> Source:
        clash = [p for p in self.partitions if p in self.columns]
        if clash:
            raise ValueError(f"partition '{clash[0]}' is also a declared column; rename one")
        return self


class Dedupe(Strict):
    """Deterministic dedupe: keep the first row per ``key`` by ``order_by``, then lineage."""

    key: list[str] = Field(min_length=1)
    order_by: list[str] = Field(default_factory=list)


class Rule(Strict):
    """One expectation. The row passes only when ``expect`` is TRUE."""

    name: str = Field(pattern=IDENT)
    expect: str
    owner: str | None = None
    version: int = Field(default=1, ge=1)
    description: str | None = None
    on_fail: Literal["quarantine", "warn", "abort"] = "quarantine"
    fail_above: float | None = Field(default=None, ge=0, le=1)


class Gate(Strict):
    """Thresholds on the quarantined share of records."""

    warn_above: float = Field(default=0.01, ge=0, le=1)
    fail_above: float = Field(default=0.05, ge=0, le=1)
    on_stream_fail: Literal["stop", "continue"] = "stop"

    @model_validator(mode="after")
    def _ordered(self) -> Gate:
        if self.warn_above > self.fail_above:
            raise ValueError("warn_above must not exceed fail_above")
        return self


class Outputs(Strict):
    """Where results go. Table names are plain identifiers."""

    warehouse: str
    #: the table format (engines/storage.py): ``duckdb`` (one file, the embedded default)
    #: or ``delta`` (a Delta Lake table per output, the Spark default); None = the
    #: engine's default
    format: Literal["duckdb", "delta", "iceberg"] | None = None
    #: format: iceberg — the catalog (a key of ``catalogs:``) and namespace of the tables
    catalog: str | None = None
    namespace: str | None = Field(default=None, pattern=SQL_IDENT)
    clean: str = Field(pattern=SQL_IDENT)
    quarantine: str = Field(pattern=SQL_IDENT)
    #: None until the contract fills it in: ``<contract name>_duplicates`` (Contract._defaults)
    duplicates: str | None = Field(default=None, pattern=SQL_IDENT)
    facts: str = Field(default="quality_facts", pattern=SQL_IDENT)
    partition_by: list[str] | None = None
    export: str | None = None

    @property
    def outbox(self) -> str:
        return self.quarantine + "_outbox"


class EngineSection(Strict):
    """Engine choice and options; the CLI's --engine wins."""

    name: Literal["duckdb", "spark"] = "duckdb"
    master: str | None = None
    remote: str | None = None
    # validated here, not by the engine at run time: a bad value must fail `validate`
    memory_limit: str | None = Field(
        default=None, pattern=r"^[0-9]+(\.[0-9]+)? ?([KMGT]i?B|B)$", examples=["800MB", "4GB"]
    )
    threads: int | None = Field(default=None, ge=1, le=256)
    #: a value may be ``${secret:…}`` (contract/secret.py); engines/options.py reveals it
    options: dict[str, str | Secret] = Field(default_factory=dict)


class Contract(Strict):
    """One feed's contract (docs/contract-reference.md)."""

    name: str = Field(pattern=IDENT)
    owner: str | None = None
    vars: dict[str, str | int | float | bool] = Field(default_factory=dict)
    engine: EngineSection = Field(default_factory=EngineSection)
    catalogs: dict[str, IcebergCatalog] = Field(default_factory=dict)  # iceberg_spec.py
    object_store: ObjectStore | None = None  # object_store_spec.py: s3:// warehouse, source
    source: Source
    dedupe: Dedupe | None = None
    references: dict[str, TableSource] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)
    rules_file: str | None = None
    gate: Gate = Field(default_factory=Gate)
    outputs: Outputs
    model: Model | None = None  # model_spec.py: dimensions, facts, marts
    serve: list[ServeTarget] | None = None  # serve_spec.py: PostgreSQL targets
    alerts: list[Alert] = Field(default_factory=list)  # notify_spec.py
    lineage: Lineage | None = None  # OpenLineage run events (notify_spec.py)

    @field_validator("engine", mode="before")
    @classmethod
    def _engine_shorthand(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _default_names(self) -> Contract:
        # two contracts sharing a warehouse both defaulted to 'duplicates' and the second
        # run crashed (or mixed two feeds' rows): the default is the contract's own now
        if self.outputs.duplicates is None:
            self.outputs.duplicates = f"{self.name}_duplicates"
        return self

    @model_validator(mode="after")
    def _catalogs_named(self) -> Contract:
        o = self.outputs
        if o.format == "iceberg" and (not o.catalog or not o.namespace):
            raise ValueError("outputs.format: iceberg needs outputs.catalog and outputs.namespace")
        for where, name in (
            ("source.catalog", self.source.catalog),
            ("outputs.catalog", o.catalog),
        ):
            if name is not None and name not in self.catalogs:
                known = ", ".join(self.catalogs) or "none declared"
                raise ValueError(f"{where} '{name}' is not in catalogs: ({known})")
        return self

    @property
    def source_name(self) -> str:
        return self.source.name or self.name
