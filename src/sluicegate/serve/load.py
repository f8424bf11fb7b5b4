"""Serve a warehouse's published tables into each ``serve:`` target.

One PostgreSQL transaction per target and call: every table of the target is COPYed into
a temporary stage and merged (compile/serve_sql.py), the served-ledger records which
logical dates of each fact went with which runs, then COMMIT — a reader sees all of a
run's rows at once or none. Any failure (server down, refused, killed, wrong password,
out of disk, a type clash) rolls the whole target back and is returned as a failed
:class:`TargetResult`, never raised: serving never changes a run's verdict.

What is loaded is what the warehouse holds *now*, so a load missed by one run is made up
by the next (or by ``sluicegate serve``): whole-table scopes are synced, and a fact's
logical dates are loaded when the warehouse's run ids for that date differ from the
served ledger's. Exactly once follows from the keys: a row that is already there with the
same values is not written again.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlglot import exp

from ..compile import serve_sql as sq
from ..compile.render import col
from ..compile.serve_plan import ServedTable, target_tables
from ..contract.loader import LoadedContract
from ..contract.serve_spec import ServeTarget, redacted_url
from ..engines import Engine
from ..errors import ServeError
from ..faults import checkpoint
from .arrow_types import arrow_type_of_pg, conform, sql_type_of


@dataclass
class TableLoad:
    """What one table's load did: rows sent, and rows written / deleted in PostgreSQL."""

    table: str
    target: str
    copied: int = 0
    written: int = 0  # inserted or updated (an unchanged row is not written)
    deleted: int = 0
    scope: list[str] | None = None  # the logical dates a fact load replaced
    created: bool = False


@dataclass
class TargetResult:
    """One target's outcome: ``pass`` (committed) or ``fail`` (rolled back, with ``error``)."""

    target: str
    url: str  # without password
    status: str
    seconds: float
    tables: list[TableLoad] = field(default_factory=list)
    error: str | None = None

    @property
    def copied(self) -> int:
        return sum(t.copied for t in self.tables)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["copied"] = self.copied
        return d


def serve(
    engine: Engine,
    loaded: LoadedContract,
    *,
    run_id: str | None = None,
    targets: list[str] | None = None,
) -> list[TargetResult]:
    """Load every target (or those named in ``targets``); ``run_id`` forces that run's
    logical date of each fact to be loaded again even if the ledger has it."""
    out = []
    for target in loaded.contract.serve or []:
        if targets and target.name not in targets:
            continue
        out.append(serve_target(engine, loaded, target, run_id=run_id))
    return out


def serve_target(
    engine: Engine, loaded: LoadedContract, target: ServeTarget, *, run_id: str | None = None
) -> TargetResult:
    url = redacted_url(target.url)
    label = f"serve target '{target.name}' ({url})"
    t0 = time.perf_counter()
    result = TargetResult(target.name, url, "pass", 0.0)
    pg = None
    try:
        try:
            from ..engines.postgres import PostgresTarget  # the driver: only when serving
        except ImportError as exc:
            raise ServeError(
                f"{label}: the PostgreSQL driver is not installed ({exc})",
                hint="pip install 'sluicegate[serve]'",
            ) from None
        pg = PostgresTarget(target.url, password=target.password, label=label)
        schema = target.schema_
        pg.execute(sq.create_schema(schema), "CREATE SCHEMA")
        pg.execute(sq.create_ledger(schema), "CREATE the served ledger")
        forced = _forced_dates(engine, loaded, run_id)
        with engine.attached():  # DuckDB staging mode: hold the warehouse while reading
            for table in target_tables(loaded.contract, target):
                result.tables.append(_load_table(engine, loaded, pg, schema, table, forced))
        pg.commit()
    except (ServeError, ValueError) as exc:  # ValueError: a type with no mapping
        if not isinstance(exc, ServeError):
            exc = ServeError(f"{label}: {exc}")
        if pg is not None:
            pg.rollback()
        one_line = exc.message + (f" (hint: {exc.hint})" if exc.hint else "")
        result.status, result.error = "fail", loaded.redactor(one_line)
        result.tables = []  # rolled back: nothing of them is visible
    finally:
        if pg is not None:
            pg.close()
        result.seconds = round(time.perf_counter() - t0, 3)
    return result


def _load_table(
    engine: Engine,
    loaded: LoadedContract,
    pg: Any,
    schema: str,
    table: ServedTable,
    forced: list[str],
) -> TableLoad:
    load = TableLoad(table.name, table.target)
    if not engine.table_exists(table.name if table.kind != "dlq_summary" else _inbox(loaded)):
        return load  # nothing published yet (e.g. no quarantined row ever)
    served: dict[str, str] = {}
    scope_values = None
    wanted: dict[str, str] = {}
    if table.scope:
        wanted = _signatures(engine, table)
        served = dict(pg.fetch(sq.ledger_rows(schema, table.target), "read the served ledger"))
        scope_values = sorted(d for d, sig in wanted.items() if served.get(d) != sig or d in forced)
        load.scope = scope_values
        if not scope_values and _exists(pg, schema, table.target):
            return load
    reader = engine.arrow_batches(table.query(loaded.contract, scope_values))
    try:  # a reader left open blocks the engine's next statement (DuckDB)
        names = list(reader.schema.names)
        wanted_types = [
            (
                n,
                sq.pg_type(
                    table.types.get(n) or sql_type_of(reader.schema.field(n).type), "duckdb"
                ),
            )
            for n in names
        ]
        load.created, existing = _ensure_table(pg, schema, table, wanted_types)
        stage = f"_sg_stage_{table.target}"
        pg.execute(sq.drop_stage(stage), "DROP stage")
        pg.execute(sq.create_stage(stage, schema, table.target), f"stage {table.target}")
        arrow = {n: arrow_type_of_pg(t) for n, t in existing}
        load.copied = pg.ingest(stage, conform(reader, arrow), f"COPY into {table.target}")
        checkpoint(f"serve:copied:{table.target}")
    finally:
        reader.close()
    load.deleted = pg.execute(
        sq.delete_missing(
            schema, table.target, stage, table.key, names,
            scope=table.scope, scope_values=scope_values,
        ),
        f"DELETE from {table.target}",
    )  # fmt: skip
    load.written = pg.execute(
        sq.upsert(schema, table.target, stage, names, table.key, table.ignore),
        f"upsert into {table.target} (is the key {list(table.key) or 'every column'} unique?)",
    )
    pg.execute(sq.drop_stage(stage), "DROP stage")
    if table.scope and scope_values:
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(sep=" ")
        sigs = wanted
        rows = [
            {"table_name": table.target, "scope_value": d, "signature": sigs[d],
             "run_id": sigs[d].split(",")[-1], "served_at": now}
            for d in scope_values
        ]  # fmt: skip
        pg.execute(sq.ledger_upsert(schema, rows), "record the served ledger")
    return load


def _inbox(loaded: LoadedContract) -> str:
    return loaded.contract.outputs.quarantine


def _exists(pg: Any, schema: str, table: str) -> bool:
    return bool(pg.fetch(sq.table_columns(schema, table), "read the table's columns"))


def _ensure_table(
    pg: Any, schema: str, table: ServedTable, wanted: list[tuple[str, exp.DataType]]
) -> tuple[bool, list[tuple[str, str]]]:
    """Create the table on first serve, else check its columns (a clash is a ServeError);
    return whether it was created and its (column, format_type) as it now is."""
    existing = pg.fetch(sq.table_columns(schema, table.target), "read the table's columns")
    if not existing:
        pg.execute(sq.create_table(schema, table.target, wanted, table.key), "CREATE TABLE")
        return True, [(n, sq.format_type(t)) for n, t in wanted]
    clashes = sq.type_clashes(existing, [(n, sq.format_type(t)) for n, t in wanted])
    if clashes:
        raise ServeError(
            f"{pg.label}: table {schema}.{table.target} does not match what "
            f"'{table.name}' serves: " + "; ".join(clashes),
            hint="alter or drop the PostgreSQL table, or serve it under another name (as:)",
        )
    return False, [(str(n), str(t)) for n, t in existing]


def _signatures(engine: Engine, table: ServedTable) -> dict[str, str]:
    """``{logical_date: "run_id,run_id"}`` of a fact in the warehouse (sorted run ids)."""
    q = (
        exp.select(exp.cast(col(table.scope), "VARCHAR"), col("_run_id"))
        .from_(exp.to_table(table.name))
        .distinct()
    )
    runs: dict[str, set[str]] = defaultdict(set)
    for d, r in engine.fetch(q):
        runs[str(d)].add(str(r))
    return {d: ",".join(sorted(rs)) for d, rs in runs.items()}


def _forced_dates(engine: Engine, loaded: LoadedContract, run_id: str | None) -> list[str]:
    """The logical date of ``run_id`` (``serve --run``), from the run records."""
    if not run_id:
        return []
    from ..compile.facts import RUNS_TABLE

    with engine.attached():
        if not engine.table_exists(RUNS_TABLE):
            raise ServeError(f"no run '{run_id}' in the warehouse (no run was published yet)")
        rows = engine.fetch(
            exp.select(exp.cast(col("logical_date"), "VARCHAR"))
            .from_(exp.to_table(RUNS_TABLE))
            .where(exp.EQ(this=col("run_id"), expression=exp.Literal.string(run_id)))
        )
    if not rows:
        raise ServeError(
            f"no run '{run_id}' in the warehouse",
            hint="`sluicegate facts ledger CONTRACT` lists the published runs",
        )
    return [str(rows[0][0])]
