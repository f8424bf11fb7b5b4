"""Incremental runs: each run one micro-batch of the landing directory's new files.

A contract's ``source.path`` is a landing directory that upstream keeps adding files to.
``sluicegate run CONTRACT --incremental`` (and every batch of ``sluicegate watch``)
processes only the files no earlier micro-batch processed, as one ordinary run — its own
run id, ledger, gate, facts — and records them in the **processed-file ledger**
(:data:`FILES_TABLE`) *inside the publish transaction*, so the files and the outputs they
produced become visible together or not at all (docs/streaming.md has the argument):

* a crash before the COMMIT leaves neither: the next batch processes the same files;
* a crash after it leaves both: the next batch does not see them as new.

What else changes for a micro-batch (each a small hook called from the pipeline):

* **scope** — a batch run replaces its logical date's rows; a micro-batch replaces only
  its own run id's rows (``RunContext.replace_run_id``), so the micro-batches of one date
  accumulate and a rerun of the same micro-batch replaces itself;
* **dedupe across batches** (:meth:`Incremental.against_prior`) — a record whose key was
  already kept by an earlier micro-batch of the date is a duplicate of that record (the
  first published record of a key wins; a published row is never retracted);
* **changed files** — a processed file whose size or SHA-256 differs from the ledger's
  is reported (notice, the ``processed_files_unchanged`` fact, the metrics), never
  reprocessed and never ignored;
* **no new file** — the run is a no-op (status ``empty``, exit 0): nothing is published.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..compile import incremental as inc_sql
from ..compile.facts import RUNS_TABLE
from ..compile.incremental import FILE_COLUMNS, FILE_KEY, FILES_TABLE, T_PRIOR, ledger_select
from ..errors import LedgerError, LedgerViolation
from ..faults import checkpoint
from . import bind as bind_s

if TYPE_CHECKING:
    from ..engines import Engine
    from .checks import Fact
    from .state import RunContext, RunResult

CHANGED_CHECK = "processed_files_unchanged"
#: Changed files named in a fact's detail (all of them are in the metrics).
DETAIL_FILES = 3


@dataclass(frozen=True)
class ChangedFile:
    """A processed file whose bytes differ now from what its micro-batch read."""

    path: str
    run_id: str
    processed_size: int
    processed_sha256: str
    size: int
    sha256: str

    def describe(self) -> str:
        return (
            f"{self.path} changed after run {self.run_id} processed it "
            f"(size {self.processed_size} -> {self.size}, "
            f"sha256 {self.processed_sha256[:12]}… -> {self.sha256[:12]}…); not reprocessed"
        )


@dataclass
class Incremental:
    """The micro-batch mode of one run (``RunContext.mode``; the batch mode is
    run/modes.py's ``Batch``, with the same methods).

    ``only`` restricts the candidates to these files (the Spark stream hands each of its
    micro-batches' files, run/watch.py); by default every file under the source path is
    a candidate.
    """

    #: the ranked rows are read against earlier batches' keys: route into a table once
    routes_through_view = False
    ledger_tables = (FILES_TABLE,)

    only: list[str] | None = None
    processed: int = 0  # files in the ledger before this batch (changed or not)
    changed: list[ChangedFile] = field(default_factory=list)
    has_prior: bool = False
    #: the warehouse tables holding the date's earlier rows (dedupe across batches)
    prior_tables: list[str] = field(default_factory=list)
    files: list[bind_s.BoundFile] = field(default_factory=list)

    # -- bind ------------------------------------------------------------------------
    def input_size(self, loaded: Any) -> int | None:
        """Not known up front: the new files are found against the ledger, and a watch's
        engine serves later micro-batches that may be larger."""
        return None

    def bind(self, ctx: RunContext) -> tuple[bind_s.Binding, str]:
        """The binding of the new files and the micro-batch's run id.

        Reads the ledger (and the date's kept keys, for dedupe) in one short attach of the
        warehouse. The writer lock is held, so nothing can commit between this read and
        this run's publish.
        """
        loaded, eng = ctx.loaded, ctx.engine
        spec = loaded.contract.source
        if self.only is not None:
            candidates = sorted({os.path.abspath(p) for p in self.only})
        else:
            candidates = bind_s.list_files(loaded, spec, "source")
        with eng.attached():
            ledger = read_ledger(eng, loaded.contract.name)
            new = [p for p in candidates if p not in ledger]
            if new:
                self.prior_tables = _prior_tables(ctx)
                self.has_prior = bool(self.prior_tables)
        # every processed file is checked, not only this batch's candidates: the Spark
        # stream offers only new files, and a changed file is never offered again
        self.processed = len(ledger)
        self.changed = changed_files(ledger, spec)
        for c in self.changed:
            ctx.listener.notice(f"drift: processed file {c.describe()}")
        binding = bind_s.bind(loaded, new)
        self.files = list(binding.files)
        ctx.counts.incremental = self.metrics()
        return binding, batch_run_id(loaded, binding)

    def replace_run_id(self, ctx: RunContext) -> str | None:
        """A micro-batch replaces only its own run id's rows (docs/streaming.md)."""
        return ctx.run_id

    # -- dedupe ----------------------------------------------------------------------
    def against_prior(self, ctx: RunContext, ranked: exp.Select, typed: str) -> exp.Select:
        """``ranked`` with the rows whose key an earlier micro-batch kept made duplicates.

        Each such row gets ``_rn + 1`` (so none of them is kept) and the kept lineage of the
        earlier record — exactly what a single run over both batches records when the
        earlier record comes first in the contract's order (docs/streaming.md).
        """
        d = ctx.contract.dedupe
        if d is None or not self.has_prior:
            return ranked
        _prepare_prior(ctx, self.prior_tables, typed)
        names = [n for n, _t in ctx.engine.columns(typed)]
        return inc_sql.against_prior(ranked, names, d.key)

    # -- facts -----------------------------------------------------------------------
    def fact(self, ctx: RunContext) -> Fact:
        """``processed_files_unchanged``: warn while a processed file differs from its bytes
        as processed (severity warning: it is about earlier batches, not this one)."""
        from .checks import _check

        n = len(self.changed)
        names = ", ".join(c.path for c in self.changed[:DETAIL_FILES])
        more = f" and {n - DETAIL_FILES} more" if n > DETAIL_FILES else ""
        return _check(
            CHANGED_CHECK,
            ctx.contract.owner,
            "warn" if n else "pass",
            Decimal(n),
            "PROCESSED_FILE_CHANGED" if n else "OK",
            f"{n} processed file(s) changed after processing (not reprocessed): {names}{more}"
            if n
            else f"{self.processed} processed files unchanged",
            threshold_warn=Decimal(0),
            failed=n,
            evaluated=self.processed,
        )

    def facts(self, ctx: RunContext) -> list[Fact]:
        """Processed files changed since (the one fact only micro-batches record)."""
        return [self.fact(ctx)]

    def metrics(self) -> dict[str, Any]:
        return {
            "files_table": FILES_TABLE,
            "new_files": len(self.files),
            "processed_before": self.processed,
            "changed_files": [asdict(c) for c in self.changed],
        }

    # -- publish ---------------------------------------------------------------------
    def record_files(self, ctx: RunContext) -> None:
        """MERGE the batch's files into the ledger — inside the publish transaction.

        Keyed ``(contract, path)``; a rerun of the same micro-batch replaces its rows.
        Read back: exactly the batch's files must carry its run id, else roll back.
        """
        eng = ctx.engine
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(sep=" ")
        rows = [
            {
                "contract": ctx.contract.name,
                "path": f.path,
                "size": f.size,
                "mtime": f.mtime,
                "sha256": f.sha256,
                "records": f.records,
                "run_id": ctx.run_id,
                "logical_date": ctx.loaded.logical_date,
                "status": ctx.gate.status if ctx.gate else "fail",
                "engine": eng.name,
                "processed_at": now,
            }
            for f in self.files
        ]
        if not eng.table_exists(FILES_TABLE):
            eng.create_table_as(FILES_TABLE, inc_sql.empty_files())
        eng.execute(inc_sql.merge_files(rows, ctx.run_id))
        got = int(eng.fetch(inc_sql.count_of_run(ctx.contract.name, ctx.run_id))[0][0])
        if got != len(rows):
            raise LedgerError(
                [
                    LedgerViolation(
                        "file_ledger",
                        f"{got} ledger rows for run {ctx.run_id}, expected {len(rows)}",
                    )
                ]
            )
        checkpoint("publish:files_recorded")

    # -- no new file -----------------------------------------------------------------
    def empty_result(self, ctx: RunContext) -> RunResult | None:
        """Nothing new: no run, nothing published, exit 0 (changed files still reported).

        None when the batch has files: the run goes on."""
        from ..workspace import Workspace
        from .state import RunResult

        if ctx.binding is not None and ctx.binding.files:
            return None
        c = ctx.contract
        metrics = {
            "run_id": None,
            "contract": {"name": c.name, "digest": ctx.loaded.digest, "path": str(ctx.loaded.path)},
            "logical_date": ctx.loaded.logical_date,
            "engine": ctx.engine.name,
            "status": "empty",
            "message": f"no new files under {c.source.path}: nothing to do",
            "incremental": self.metrics(),
            "outputs": {"warehouse": str(Workspace(ctx.loaded).warehouse)},
        }
        return RunResult(metrics, "empty", 0, None)


def as_incremental(value: Any) -> Incremental:
    """``True`` → a fresh :class:`Incremental`; an instance is used as given."""
    return value if isinstance(value, Incremental) else Incremental()


def batch_run_id(loaded: Any, binding: bind_s.Binding) -> str:
    """Deterministic like a batch run's id, and never equal to one over the same files.

    The first 20 hex digits of SHA-256 over compact JSON
    ``[contract name, contract digest, logical date, binding digest, "incremental"]``.
    """
    doc = [loaded.contract.name, loaded.digest, loaded.logical_date, binding.digest, "incremental"]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


# -- the ledger ------------------------------------------------------------------------


def read_ledger(eng: Engine, contract: str) -> dict[str, dict[str, Any]]:
    """path → ledger row (empty before the first micro-batch)."""
    if not eng.table_exists(FILES_TABLE):
        return {}
    return {r["path"]: r for r in eng.fetch_dicts(ledger_select(contract))}


def changed_files(processed: dict[str, dict[str, Any]], spec: Any) -> list[ChangedFile]:
    """Processed files whose bytes differ from the ledger's.

    Size and mtime as in the ledger → unchanged, without reading the file (so a batch
    does not rehash the whole history); otherwise the file is hashed and compared.
    A file that disappeared is not a change (landing folders are often cleaned up).
    """
    out = []
    for path, row in sorted(processed.items()):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        if st.st_size == row["size"] and st.st_mtime == row["mtime"]:
            continue
        header = spec.csv.header if spec.csv is not None else True
        now = bind_s.bind_file(path, spec.format, csv_header=header)
        if now.size != row["size"] or now.sha256 != row["sha256"]:
            out.append(
                ChangedFile(
                    path, row["run_id"], int(row["size"]), row["sha256"], now.size, now.sha256
                )
            )
    return out


# -- dedupe across micro-batches ----------------------------------------------------------


def prior_select(ctx: RunContext, tables: list[str], batch: str | None = None) -> exp.Select:
    """One kept row per key among the date's published rows of ``tables`` (key, lineage),
    of the keys in ``batch`` only when given."""
    c = ctx.contract
    day = ctx.loaded.logical_date
    return inc_sql.prior_select(c.dedupe.key, day, tables, c.outputs.clean, batch)


def _prior_tables(ctx: RunContext) -> list[str]:
    """At bind (warehouse attached): the published tables earlier rows of the date can be
    in; empty without a dedupe key or before the first publish."""
    c = ctx.contract
    if c.dedupe is None:
        return []
    eng = ctx.engine
    return [t for t in (c.outputs.clean, c.outputs.quarantine) if eng.table_exists(t)]


def _prepare_prior(ctx: RunContext, tables: list[str], typed: str) -> None:
    """Copy the kept row of each key of the batch (``typed``) that earlier runs of the date
    published into the TEMP table :data:`T_PRIOR`. Done at dedupe, once the batch's keys
    are known, in its own short attach of the warehouse: the writer lock is held since
    the bind, so the date's published rows are the ones the bind saw."""
    eng = ctx.engine
    with eng.attached():
        eng.create_table_as(T_PRIOR, prior_select(ctx, tables, typed), temporary=True)


def processed_files(eng: Engine, contract: str) -> list[dict[str, Any]]:
    """The ledger rows of ``contract`` (for reports: ``sluicegate facts ledger``)."""
    return list(read_ledger(eng, contract).values())


__all__ = [
    "FILE_COLUMNS",
    "FILE_KEY",
    "FILES_TABLE",
    "T_PRIOR",
    "ChangedFile",
    "Incremental",
    "as_incremental",
    "batch_run_id",
    "ledger_select",
    "read_ledger",
    "stream_ledger",
]


# -- the cumulative ledger ---------------------------------------------------------------


def stream_ledger(eng: Engine, loaded: Any) -> dict[str, Any]:
    """The ledger of every run of the contract — micro-batches and batch runs — and in total.

    The DLQ's extended ledger (dlq/ledger.py: ``raw = clean + withheld + duplicates +
    quarantined + fixed + recycled + rejected`` per run, recycled copies counted once)
    with, per run, its verdict, when it was published and the files it processed; plus
    one more proof for micro-batches: the records the file ledger holds for a run equal
    the run's raw count (so no file's records are counted in two batches or in none).
    """
    from ..dlq.ledger import ledger_of
    from ..dlq.tables import DlqTables

    c = loaded.contract
    led = ledger_of(eng, DlqTables.of(c), c)
    files: dict[str, tuple[int, int]] = {}
    offsets: dict[str, list[dict[str, Any]]] = {}
    if eng.table_exists(FILES_TABLE):
        q = inc_sql.files_per_run(c.name)
        files = {rid: (int(n), int(rec or 0)) for rid, n, rec in eng.fetch(q)}
    from .offsets_table import offsets_by_run  # a Kafka source's ledger: offsets, not files

    for rid, ranges in offsets_by_run(eng, c.name).items():
        files[rid] = (len(ranges), sum(int(x["records"]) for x in ranges))
        offsets[rid] = ranges
    records: dict[str, dict[str, Any]] = {}
    if eng.table_exists(RUNS_TABLE):
        q = inc_sql.run_records(RUNS_TABLE, c.name)
        records = {r["run_id"]: r for r in eng.fetch_dicts(q)}
    for r in led["runs"]:
        rec = records.get(r["run_id"], {})
        r["status"] = rec.get("status")
        r["published_at"] = rec.get("published_at")
        n, rec_records = files.get(r["run_id"], (0, 0))
        r["micro_batch"] = r["run_id"] in files
        r["files"] = n
        if r["run_id"] in offsets:  # topic/partition:[from, to) per range
            r["offsets"] = [
                {k: x[k] for k in ("topic", "partition_id", "from_offset", "to_offset", "records")}
                for x in offsets[r["run_id"]]
            ]
        if r["micro_batch"] and r["raw"] is not None and rec_records != r["raw"]:
            led["violations"].append(
                {
                    "check": "offsets_ledger" if "offsets" in r else "file_ledger",
                    "detail": f"run {r['run_id']}: its {'offsets' if 'offsets' in r else 'files'} hold {rec_records} records, "
                    f"its raw count is {r['raw']}",
                }
            )
    led["runs"].sort(key=lambda r: (str(r["published_at"] or ""), r["logical_date"], r["run_id"]))
    led["totals"]["files"] = sum(r["files"] for r in led["runs"])
    led["totals"]["micro_batches"] = sum(1 for r in led["runs"] if r["micro_batch"])
    led["balanced"] = not led["violations"]
    return led
