"""The ``model:`` section of a contract (docs/model.md; stage 6 of a run): shape only.

A model is built downstream of the gate from the run's clean rows and the contract's
references: SCD2 **dimensions** from a changelog reference, **facts** that join each
clean row to the dimension version valid at its event time, and **marts** (named SQL
SELECTs over the model). What the names mean (columns exist, types agree, marts only
read model tables, no cycles) is checked in :mod:`sluicegate.compile.model.checks`.

Every model forbids unknown keys, like the rest of the contract, so a misspelt key is an
error with a did-you-mean rather than a silently ignored setting.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SQL_IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"
TABLE_IDENT = r"^[a-z_][a-z0-9_]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _listify(v: Any) -> Any:
    """``key: customer_id`` is shorthand for ``key: [customer_id]``."""
    return [v] if isinstance(v, str) else v


class Dimension(_Strict):
    """An SCD2 dimension built from a changelog reference.

    Each change row of a key opens a version valid from its ``effective`` time until the
    next version's (or the far-future sentinel). See docs/model.md for ties and collapsing.
    """

    reference: str = Field(pattern=SQL_IDENT)
    key: list[str] = Field(min_length=1)
    effective: str
    attributes: list[str] = Field(min_length=1)

    @field_validator("key", mode="before")
    @classmethod
    def _key_list(cls, v: Any) -> Any:
        return _listify(v)


class AsOfJoin(_Strict):
    """Join each fact row to the version of ``dimension`` valid at ``as_of``.

    ``on`` lists the fact columns that match the dimension's ``key``, in key order.
    ``on_missing`` decides what happens to a row with no valid version — it is never
    dropped: ``unknown_member`` keeps it with NULL attributes and ``<alias>_unknown``
    TRUE; ``quarantine`` routes it to the DLQ with reason ``no_dimension_version:<dim>``.
    """

    dimension: str = Field(pattern=TABLE_IDENT)
    on: list[str] = Field(min_length=1)
    as_of: str
    on_missing: Literal["unknown_member", "quarantine"] = "unknown_member"
    attributes: list[str] | None = None
    alias: str | None = Field(default=None, pattern=TABLE_IDENT)
    prefix: str = Field(default="", pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$")

    @field_validator("on", mode="before")
    @classmethod
    def _on_list(cls, v: Any) -> Any:
        return _listify(v)

    @property
    def name(self) -> str:
        """The join's name: prefix of its ``_version`` / ``_unknown`` columns."""
        return self.alias or self.dimension


class FactExport(_Strict):
    """Parquet export of a fact, Hive-partitioned by year and month of ``time``."""

    path: str | None = None
    time: str | None = None


class Fact(_Strict):
    """A fact table built from the clean rows of each run."""

    columns: list[str] | None = None
    derive: dict[str, str] = Field(default_factory=dict)
    joins: list[AsOfJoin] = Field(default_factory=list)
    export: FactExport | bool | None = None

    @field_validator("derive")
    @classmethod
    def _derive_names(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if not _is_ident(name) or name.startswith("_"):
                raise ValueError(
                    f"derived column '{name}' must be a plain identifier not starting with _"
                )
        return v

    @field_validator("export", mode="before")
    @classmethod
    def _export_shorthand(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, str) else v


class Mart(_Strict):
    """A named SELECT over model tables, materialized as a table."""

    sql: str
    description: str | None = None


class Model(_Strict):
    """Dimensions, facts and marts; names are table names in the warehouse."""

    dimensions: dict[str, Dimension] = Field(default_factory=dict)
    facts: dict[str, Fact] = Field(default_factory=dict)
    marts: dict[str, Mart] = Field(default_factory=dict)

    @field_validator("marts", mode="before")
    @classmethod
    def _mart_shorthand(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: ({"sql": s} if isinstance(s, str) else s) for k, s in v.items()}
        return v

    @model_validator(mode="after")
    def _table_names(self) -> Model:
        seen: dict[str, str] = {}
        for section in ("dimensions", "facts", "marts"):
            for name in getattr(self, section):
                if not _is_table(name):
                    raise ValueError(f"{section}: '{name}' must match [a-z_][a-z0-9_]*")
                if name in seen:
                    raise ValueError(
                        f"'{name}' is both a {seen[name][:-1]} and a {section[:-1]}: "
                        "model table names must be unique"
                    )
                seen[name] = section
        return self

    def table_names(self) -> list[str]:
        """Every table the model writes, in build order of sections."""
        return [*self.dimensions, *self.facts, *self.marts]


def _is_ident(name: str) -> bool:
    return re.fullmatch(SQL_IDENT, name) is not None


def _is_table(name: str) -> bool:
    return re.match(TABLE_IDENT, name) is not None
