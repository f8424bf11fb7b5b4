"""A run's state: what its stages read and leave for later ones, and what it returns.

Every module of a run (the stages in run/pipeline.py, publish, model, facts, metrics, the
micro-batch mode, the DLQ inbox a publish merges) takes a :class:`RunContext`; keeping it
here, below all of them, is what lets them import it without importing the pipeline that
imports them. Intermediate relations of a run are TEMP tables named ``_sg_*`` (below).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..compile.rules import CompiledRule, Membership
from ..contract.loader import LoadedContract
from ..contract.models import Contract
from ..engines import Engine
from ..report.events import Listener
from .bind import Binding
from .checks import Fact
from .counts import RunCounts
from .gate import GateResult

if TYPE_CHECKING:
    from sqlglot import exp

    from .lock import WriterLock

# -- the run's TEMP tables, in the order the stages create them ----------------------------
T_LINES = "_sg_lines"  # the source's raw lines (or Parquet rows) with lineage
T_TYPED = "_sg_typed"  # the typed relation (compile/read/relation.py)
T_REPEATED = "_sg_repeated"  # the small table of the keys that occur more than once
T_RANKING = "_sg_ranking"  # the rows of those keys, ranked
T_RANKED = "_sg_ranked"  # view: every typed row with _rn (1 = kept)
T_KEPT = "_sg_kept"  # view: the kept rows
T_FLAGS = "_sg_flags"  # one pass flag per check (compile/route.py)
T_ROUTED = "_sg_routed"  # the kept rows with _ok, _reason, _failed_rules, _warnings
T_DUPLICATES = "_sg_duplicates"  # the ranked rows with _rn > 1, kept past the typed table
T_QUARANTINED = "_sg_quarantined"  # the routed rows with NOT _ok, when routed is a view
REF_PREFIX = "_sg_ref_"  # + reference name: a reference's typed relation
REF_LINES_PREFIX = "_sg_ref_lines_"  # + reference name: its raw lines


class Mode(Protocol):
    """Batch or micro-batch: the same questions, asked by the stages of one run.

    ``Batch`` (run/modes.py) reads every file under the source path and replaces its
    logical date's rows; ``Incremental`` (run/incremental.py) reads only the files not
    processed yet and replaces only its own run id's rows.
    """

    #: on an eager engine the routed rows may be a view over the kept rows (run/pipeline.py
    #: ``stage_route``), and the typed rows of a Parquet already of the declared types a
    #: view over its files (``_load_typed``); a micro-batch, which ranks against earlier
    #: batches, keeps tables
    routes_through_view: bool

    #: the ledger table ``record_files`` changes in the publish (none for a batch run)
    ledger_tables: tuple[str, ...]

    def bind(self, ctx: RunContext) -> tuple[Binding, str]:
        """The binding of the run's files and its run id."""
        ...

    def input_size(self, loaded: LoadedContract) -> int | None:
        """Bytes the run will read, known before the engine opens; None when they are
        not (a table or Kafka source) or when the engine outlives this run (a watch's
        later batches may be larger). An engine whose memory is fixed when it starts is
        sized by it (``EngineCapabilities.memory_at_start``)."""
        ...

    def replace_run_id(self, ctx: RunContext) -> str | None:
        """What a rerun replaces: None = the logical date's rows; a run id = its own."""
        ...

    def against_prior(self, ctx: RunContext, ranked: exp.Select, typed: str) -> exp.Select:
        """The ranked relation, with what earlier runs kept taken into account."""
        ...

    def facts(self, ctx: RunContext) -> list[Fact]:
        """Facts only this mode records."""
        ...

    def record_files(self, ctx: RunContext) -> None:
        """Inside the publish transaction: record what the run processed."""
        ...

    def empty_result(self, ctx: RunContext) -> RunResult | None:
        """After bind: the result of a run with nothing to do (None: go on)."""
        ...


@dataclass
class RunContext:
    """Everything a stage needs, and what stages leave for later ones."""

    loaded: LoadedContract
    engine: Engine
    listener: Listener
    mode: Mode
    lock: WriterLock | None = None
    binding: Binding | None = None
    run_id: str = ""
    rules: list[CompiledRule] = field(default_factory=list)
    memberships: list[Membership] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    reference_tables: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    #: the engine's memory limit once sized to the bound input (None: the engine sizes
    #: nothing itself; engines/duckdb_memory.py)
    memory_limit: str | None = None
    #: the run's counts, as the metrics and facts report them (run/counts.py)
    counts: RunCounts = field(default_factory=RunCounts)
    drift: list[dict[str, Any]] = field(default_factory=list)
    gate: GateResult | None = None
    facts: list[Fact] = field(default_factory=list)
    started_at: dt.datetime | None = None
    #: set by a stage when the run has nothing to do (an empty micro-batch)
    result: RunResult | None = None
    #: a long-lived watch's typed references and dimensions kept across its runs
    #: (run/reuse.py ``RelationCache``); None: every relation is built
    reuse: Any = None
    #: the routed relation is a view over the kept rows (stage_route), not a table
    routed_view: bool = False

    @property
    def contract(self) -> Contract:
        return self.loaded.contract

    @property
    def replace_run_id(self) -> str | None:
        """What a rerun replaces: None = the logical date's rows (a batch run); a run id =
        only this run's rows (micro-batches of one date accumulate: docs/streaming.md)."""
        return self.mode.replace_run_id(self)


@dataclass
class RunResult:
    """What a run returns to its caller: metrics (also written as JSON) and a verdict."""

    metrics: dict[str, Any]
    status: str  # pass | warn | fail | ledger_violation | empty
    exit_code: int
    metrics_path: Path | None = None
