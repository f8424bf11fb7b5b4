"""The ``serve:`` section of a contract.

A list of targets. Each names a PostgreSQL database (``url``; the password through
``password: ${secret:…}``, a :class:`~.secret.Secret` revealed only by the driver), the schema tables are served
into, and which published tables to serve: model dimensions, facts and marts, the quality
facts (``outputs.facts``) and the DLQ summary (``dlq_summary``). A table is a name, or a
mapping that renames it in PostgreSQL (``as``) and sets its key (``key``). What the names
mean is checked in :mod:`sluicegate.compile.serve_plan` (did-you-mean like every section).

```yaml
serve:
  - name: app_db
    url: postgresql://app@127.0.0.1:5432/app
    password: ${secret:app_db/password}
    schema: serving
    tables: [dim_customer, fct_sales, mart_monthly_revenue, quality_facts,
             {table: dlq_summary, as: sales_dlq_summary}]
```
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .secret import Secret

TABLE_IDENT = r"^[a-z_][a-z0-9_]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ServeTable(_Strict):
    """One published table to serve: ``table`` in the warehouse, ``as`` in PostgreSQL."""

    table: str = Field(pattern=TABLE_IDENT)
    as_: str | None = Field(default=None, alias="as", pattern=TABLE_IDENT)
    key: list[str] | None = None

    @field_validator("key", mode="before")
    @classmethod
    def _key_list(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @property
    def target(self) -> str:
        return self.as_ or self.table


class ServeTarget(_Strict):
    """A PostgreSQL database that receives the published tables after each run."""

    name: str = Field(pattern=TABLE_IDENT)
    url: str = Field(pattern=r"^postgres(ql)?://")
    password: Secret | None = None  # only engines/postgres.py reveals it
    schema_: str = Field(default="public", alias="schema", pattern=TABLE_IDENT)
    tables: list[ServeTable] = Field(min_length=1)

    @field_validator("tables", mode="before")
    @classmethod
    def _table_shorthand(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"table": t} if isinstance(t, str) else t for t in v]
        return v


def redacted_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages and facts)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit(parts._replace(netloc=netloc))
