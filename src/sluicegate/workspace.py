"""A contract's workspace: where its files live, and the one way to open its engine.

Every command — ``run``, ``watch``, ``facts``, ``dlq``, ``report`` — works on the
warehouse a contract names. Before this module each opened it its own way and the copies
drifted (``sluicegate facts`` ignored a contract's ``engine.remote``); now they all call
:func:`open_engine_for`, which applies the contract's ``engine:`` section and the CLI's
overrides the same way for every command.

Disk layout of a contract (``outputs.warehouse`` resolved against the contract's folder)::

    <warehouse>                       DuckDB file, or the Spark engine's table folder
    <warehouse>.tmp                   DuckDB's spill folder while a run works in memory
    <stem>.runs/<contract>/           run metrics (``<date>__<run id>.json``, latest.json)
      writer.lock, watch.lock         one run, one watcher per contract (run/lock.py)
    <warehouse>/_runs/<contract>/     the same, for a warehouse folder (Spark)
    <warehouse>/.sluicegate/streams/<contract>/   Spark stream checkpoint

An object-store warehouse (``outputs.warehouse: s3://bucket/wh``, ``outputs.format:
delta``) holds only the tables (and their ``.sluicegate/delta`` journal and staging);
the run metrics and the locks stay on the local file system, in
``<contract folder>/<last segment>.runs/<contract>/`` (``wh.runs`` here): the writer
lock is a local file, so it excludes runs that share that folder (docs/lakehouse.md,
"What the writer lock covers on S3").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .contract.loader import LoadedContract
from .engines import Engine, open_engine
from .engines.capabilities import EngineCapabilities, capabilities_of
from .engines.iceberg_catalog import CatalogSpec
from .engines.object_store import S3Settings, canonical, is_s3
from .engines.options import DEFAULT_MEMORY_LIMIT, Access, contract_options
from .errors import UsageError

#: How long a publish waits for readers to release the warehouse file (DuckDB).
PUBLISH_WAIT_SECONDS = 60.0
#: How long a report or an operator command waits for a publishing run.
READ_WAIT_SECONDS = 30.0
#: The Spark engine's hidden folder inside its warehouse (engines/spark_warehouse.py).
INTERNAL = ".sluicegate"

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "PUBLISH_WAIT_SECONDS",
    "READ_WAIT_SECONDS",
    "Access",
    "Workspace",
    "capabilities",
    "engine_name",
    "engine_options",
    "open_engine_for",
]


@dataclass(frozen=True)
class Workspace:
    """The paths of one loaded contract (nothing is created until a command writes)."""

    loaded: LoadedContract

    @property
    def name(self) -> str:
        return self.loaded.contract.name

    @property
    def remote(self) -> bool:
        """The warehouse is an ``s3://`` URI (object_store.py), not a local path."""
        return is_s3(self.loaded.contract.outputs.warehouse)

    @property
    def warehouse(self) -> Path:
        """The local warehouse path; for an object store, its URI (``s3://…``, a str:
        ``str()`` of either is what the engine opens)."""
        w = self.loaded.contract.outputs.warehouse
        if is_s3(w):
            return canonical(w).rstrip("/")  # type: ignore[return-value]
        return self.loaded.resolve_path(w)

    @property
    def runs_dir(self) -> Path:
        """``<warehouse stem>.runs`` next to a warehouse file (``_runs`` inside a folder);
        for an ``s3://`` warehouse, ``<last segment>.runs`` in the contract's folder."""
        if self.remote:
            last = str(self.warehouse).rsplit("/", 1)[-1]
            return self.loaded.resolve_path(f"{last}.runs")
        w = self.warehouse
        return w.parent / f"{w.stem}.runs" if self.warehouse_is_file() else w / "_runs"

    def warehouse_is_file(self) -> bool:
        """Does the warehouse path name one file? A suffix says so (``wh.duckdb``); so does
        the contract's engine when it keeps its own format in one file (DuckDB), so a
        suffix-less ``warehouse: ./wh`` is not mistaken for a folder and created as one."""
        if self.warehouse.suffix:
            return True
        native = self.loaded.contract.outputs.format in (None, "duckdb")
        return native and capabilities(self.loaded).warehouse_file

    @property
    def contract_runs_dir(self) -> Path:
        """Where this contract's run metrics and locks live."""
        return self.runs_dir / self.name

    @property
    def writer_lock(self) -> Path:
        return self.contract_runs_dir / "writer.lock"

    @property
    def watch_lock(self) -> Path:
        return self.contract_runs_dir / "watch.lock"

    @property
    def stream_checkpoint(self) -> Path:
        """``<warehouse>/.sluicegate/streams/<contract>``: beside the tables, hidden from them."""
        if self.remote:  # an s3:// warehouse: local, beside the run state
            return self.contract_runs_dir / "stream-checkpoint"
        return self.warehouse / INTERNAL / "streams" / self.name

    @property
    def spill_dir(self) -> Path:
        """Where DuckDB spills while a run works in memory (engines/duckdb_engine.py)."""
        if self.remote:
            return self.runs_dir.with_suffix(".tmp")
        return Path(str(self.warehouse) + ".tmp")

    def exists(self) -> bool:
        """Is there a warehouse yet? (an object store: a run has recorded metrics here)"""
        if self.remote:
            return self.runs_dir.is_dir()
        return os.path.exists(self.warehouse)

    def object_store(self) -> S3Settings | None:
        """The S3 settings, when the warehouse or the source is on an object store."""
        c = self.loaded.contract
        if self.remote or is_s3(c.source.path or "") or c.object_store is not None:
            return S3Settings.resolve(c.object_store)
        return None

    def require(self, what: str) -> None:
        """Refuse a report or operator command on a warehouse no run has written yet."""
        if not self.exists():
            raise UsageError(
                f"no warehouse at {os.path.normpath(self.warehouse)} yet, so no {what}",
                hint="run the contract first: sluicegate run CONTRACT",
            )


def engine_name(loaded: LoadedContract, override: str | None = None) -> str:
    """The engine of a command: the CLI's ``--engine`` wins over the contract's."""
    return override or loaded.contract.engine.name


def capabilities(loaded: LoadedContract, override: str | None = None) -> EngineCapabilities:
    """What the command's engine can do, before it is opened."""
    return capabilities_of(engine_name(loaded, override))


def engine_options(
    loaded: LoadedContract,
    access: Access = Access.RUN,
    *,
    engine: str | None = None,
    overrides: dict[str, Any] | None = None,
    wait_seconds: float | None = None,
) -> tuple[str, dict[str, Any]]:
    """The engine's name and options: the contract's ``engine:`` section, then the CLI's
    ``overrides`` (``--spark-master``, ``--spark-remote``, ``profile``), for what the
    command does with the warehouse (``access``). Unset (None) options are left out."""
    name = engine_name(loaded, engine)
    if wait_seconds is None:
        wait_seconds = PUBLISH_WAIT_SECONDS if access is Access.RUN else READ_WAIT_SECONDS
    options = contract_options(name, loaded.contract.engine, access, wait_seconds=wait_seconds)
    options.update(overrides or {})
    return name, {k: v for k, v in options.items() if v is not None}


def open_engine_for(
    loaded: LoadedContract,
    access: Access = Access.RUN,
    *,
    engine: str | None = None,
    overrides: dict[str, Any] | None = None,
    wait_seconds: float | None = None,
) -> Engine:
    """Open the contract's engine on its warehouse (options as :func:`engine_options`)."""
    name, options = engine_options(
        loaded, access, engine=engine, overrides=overrides, wait_seconds=wait_seconds
    )
    o = loaded.contract.outputs
    if o.format == "iceberg" and o.catalog and o.namespace:
        options["iceberg"] = (iceberg_catalog(loaded, o.catalog), o.namespace)
    s3 = Workspace(loaded).object_store()
    if s3 is not None:
        options["s3"] = s3
    return open_engine(
        name,
        str(Workspace(loaded).warehouse),
        table_format=o.format,  # engines/storage.py
        **options,
    )


def iceberg_catalog(loaded: LoadedContract, name: str) -> CatalogSpec:
    """The contract's Iceberg catalog ``name`` (``catalogs:``), paths resolved against
    the contract's folder."""
    from .engines.iceberg_catalog import resolve

    c = loaded.contract.catalogs[name]
    return resolve(name, c.uri, c.warehouse, str(loaded.resolve_path(".")))
