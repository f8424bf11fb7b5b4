"""One Iceberg SQL catalog for both engines: how a contract's ``catalogs:`` entry opens.

The catalog database holds the standard Iceberg JDBC-catalog tables
(``iceberg_tables``, ``iceberg_namespace_properties``), so the same SQLite file or
PostgreSQL database is read by pyiceberg's ``SqlCatalog`` (here) and by Spark's Iceberg
``JdbcCatalog`` (:func:`spark_conf`). Both must use the same catalog *name* (the
``catalog_name`` column); sluicegate uses the contract's key in ``catalogs:``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CatalogSpec:
    """A resolved catalog: its name, SQLAlchemy-style URI and warehouse location."""

    name: str
    uri: str
    warehouse: str

    @property
    def sqlalchemy_uri(self) -> str:
        """``postgresql://`` through psycopg 3 (the driver the project already ships)."""
        if self.uri.startswith(("postgresql://", "postgres://")):
            return "postgresql+psycopg://" + self.uri.split("://", 1)[1]
        return self.uri

    @property
    def jdbc_uri(self) -> tuple[str, dict[str, str]]:
        """The JDBC URL Spark's JdbcCatalog opens, and its user/password properties."""
        from urllib.parse import unquote, urlsplit

        if self.uri.startswith("sqlite:///"):
            return "jdbc:sqlite:" + self.uri[len("sqlite:///") :], {}
        parts = urlsplit(self.uri)
        props = {}
        if parts.username:
            props["user"] = unquote(parts.username)
        if parts.password:
            props["password"] = unquote(parts.password)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
        return f"jdbc:postgresql://{host}{port}{parts.path}", props


def resolve(name: str, uri: str, warehouse: str, base: str) -> CatalogSpec:
    """Relative SQLite paths and warehouse folders are relative to ``base`` (the
    contract's folder)."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        rel = uri[len("sqlite:///") :]
        uri = "sqlite:///" + os.path.abspath(os.path.join(base, rel))
    if "://" not in warehouse:
        warehouse = os.path.abspath(os.path.join(base, warehouse))
        os.makedirs(warehouse, exist_ok=True)
    if uri.startswith("sqlite:///"):
        os.makedirs(os.path.dirname(uri[len("sqlite:///") :]), exist_ok=True)
    return CatalogSpec(name=name, uri=uri, warehouse=warehouse)


def open_catalog(spec: CatalogSpec) -> Any:
    """pyiceberg's SqlCatalog on ``spec`` (creates the catalog tables when missing)."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(spec.name, uri=spec.sqlalchemy_uri, warehouse=_file_uri(spec.warehouse))


def spark_conf(spec: CatalogSpec) -> dict[str, str]:
    """Spark settings for an Iceberg JdbcCatalog named ``spec.name`` on the same database."""
    url, props = spec.jdbc_uri
    key = f"spark.sql.catalog.{spec.name}"
    conf = {
        key: "org.apache.iceberg.spark.SparkCatalog",
        f"{key}.type": "jdbc",
        f"{key}.uri": url,
        f"{key}.warehouse": _file_uri(spec.warehouse),
        f"{key}.jdbc.schema-version": "V1",
    }
    for k, v in props.items():
        conf[f"{key}.jdbc.{k}"] = v
    return conf


def _file_uri(path: str) -> str:
    return path if "://" in path else "file://" + path
