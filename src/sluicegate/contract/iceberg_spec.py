"""``catalogs:``: the Iceberg SQL catalogs a contract reads from and publishes into.

One entry is a SQL catalog in the standard Iceberg JDBC layout, opened by pyiceberg on
the embedded engine and by Spark's Iceberg JdbcCatalog (docs/lakehouse.md § Iceberg)::

    catalogs:
      lake: {type: sql, uri: "sqlite:///catalog.db", warehouse: "iceberg"}

``uri`` is ``sqlite:///<path>`` (relative to the contract's folder; nothing to start)
or ``postgresql://user:password@host:port/db``; ``warehouse`` is the folder (or URI)
the table files go to.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

TABLE_REF = r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$"


class IcebergCatalog(BaseModel):
    """One Iceberg SQL catalog."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["sql"] = "sql"
    uri: str
    warehouse: str = Field(min_length=1)

    @field_validator("uri")
    @classmethod
    def _sql_uri(cls, v: str) -> str:
        if not re.match(r"^(sqlite:///|postgresql://|postgres://)", v):
            raise ValueError("uri is sqlite:///<file> or postgresql://user@host:port/db")
        return v
