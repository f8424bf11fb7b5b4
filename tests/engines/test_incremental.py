"""Incremental micro-batches on DuckDB: each file exactly once, micro-batches of one date
accumulate, a changed file is reported, the cumulative ledger balances.

The expected outcome of every record is computed here in plain Python (:func:`oracle`:
first record of a key by file then line is kept, exactly the contract's rule with no
``order_by``), and the warehouse is read back with plain DuckDB SQL. A single batch run
over all files (a second warehouse, same landing folder, so lineage is identical) is the
other reference: the micro-batches' final tables must equal it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run import incremental as inc_m
from sluicegate.run.pipeline import RunResult, run_contract
from tests.conftest import run_cli
from tests.engines.engine_params import read_rows, warehouse_name

pytestmark = pytest.mark.duckdb

DAY = "2024-01-01"
OUTPUTS = ("clean", "dlq", "dups")
#: Columns a micro-batch legitimately changes: which run wrote a row, and wall clock.
RUN_SPECIFIC = {"_run_id", "_dlq_timestamp"}

# -- the feed: 5 files, 3 waves ---------------------------------------------------------


def rec(i: Any, a: int = 1, k: str = "x") -> dict:
    return {"id": i, "a": a, "k": k}


#: File name → lines. Names sort in arrival order (w1 < w2 < w3), so "first by lineage"
#: is "first to arrive": the case where micro-batches and one batch must agree exactly.
WAVES: list[dict[str, list]] = [
    {
        "w1-a.json": [rec(1), rec(2, a=-1), rec(3), rec(3, k="dup-in-file"), "not json", rec(4)],
        "w1-b.json": [rec(5), {"id": "x5", "a": 1, "k": "x"}, rec(6), "", rec(7, a=0)],
    },
    {
        "w2-c.json": [rec(8), rec(1, k="resent-w1"), rec(9), rec(10, a=-3)],
        "w2-d.json": [rec(11), rec(2, a=5, k="resent-quarantined"), rec(12), rec(12, k="again")],
    },
    {
        "w3-e.json": [rec(13), rec(9, k="resent-w2"), rec(14), "{broken", rec(15)],
    },
]
ALL_FILES = [name for wave in WAVES for name in wave]


def write_file(path: Path, lines: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in lines:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


def drop_wave(landing: Path, n: int) -> list[str]:
    """Write wave ``n`` (0-based) into the landing folder; its file paths."""
    out = []
    for name, lines in WAVES[n].items():
        write_file(landing / name, lines)
        out.append(str(landing / name))
    return out


def oracle(landing: Path, names: list[str]) -> dict[str, set]:
    """Every record's outcome, computed independently of sluicegate.

    Returns sets of ``(id, file, line)`` for clean and quarantine, and
    ``(file, line, kept_file, kept_line)`` for duplicates.
    """
    clean, quarantine, dups = set(), set(), set()
    kept: dict[int, tuple[str, int]] = {}
    for name in sorted(names):
        path = str(landing / name)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f.read().split("\n"), start=1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    quarantine.add((None, path, n))
                    continue
                rid = r["id"] if isinstance(r["id"], int) else None
                if rid is not None and rid in kept:
                    dups.add((path, n, *kept[rid]))
                    continue
                if rid is not None:
                    kept[rid] = (path, n)
                (clean if rid is not None and r["a"] > 0 else quarantine).add((rid, path, n))
    return {"clean": clean, "dlq": quarantine, "dups": dups}


# -- contracts and runs -------------------------------------------------------------------


def stream_contract(
    root: Path,
    *,
    warehouse: str = "inc.duckdb",
    gate: dict | None = None,
    extra: dict | None = None,
    name: str = "contract.yml",
    engine: str = "duckdb",
) -> Path:
    """A contract over the landing folder ``root/landing`` (JSON is YAML) on ``engine``."""
    doc: dict[str, Any] = {
        "name": "stream",
        "owner": "team@example.com",
        "engine": engine,
        "source": {
            "path": "landing",
            "format": "ndjson",
            "columns": {"id": "BIGINT", "a": "INTEGER", "k": "VARCHAR"},
        },
        "dedupe": {"key": ["id"]},
        "rules": [{"name": "a_pos", "expect": "a > 0"}],
        "gate": gate or {"warn_above": 0.4, "fail_above": 0.6},
        "outputs": {
            "warehouse": warehouse,
            "clean": "clean",
            "quarantine": "dlq",
            "duplicates": "dups",
            "facts": "facts",
        },
        **(extra or {}),
    }
    p = root / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def run_inc(contract: Path, day: str = DAY, **kw: Any) -> RunResult:
    return run_contract(load_contract(contract, logical_date=day), incremental=True, **kw)


def run_batch(contract: Path, day: str = DAY, **kw: Any) -> RunResult:
    return run_contract(load_contract(contract, logical_date=day), **kw)


def connect(warehouse: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(warehouse), read_only=True)


def table_rows(warehouse: Path, table: str, *, drop: set[str] = RUN_SPECIFIC) -> list[tuple]:
    """Every row of ``table`` but the run-specific columns, as text, sorted."""
    con = connect(warehouse)
    try:
        cols = [
            c
            for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                "ORDER BY ordinal_position",
                [table],
            ).fetchall()
            if c not in drop
        ]
        sel = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in cols)
        return sorted(
            con.execute(f'SELECT {sel} FROM "{table}"').fetchall(),
            key=lambda r: [str(v) for v in r],
        )
    finally:
        con.close()


def outputs_of(warehouse: Path) -> dict[str, list[tuple]]:
    return {t: table_rows(warehouse, t) for t in OUTPUTS}


def observed(warehouse: Path) -> dict[str, set]:
    """The published outcome in the oracle's shape, read with plain SQL (either engine)."""
    return {
        "clean": set(read_rows(warehouse, "SELECT id, _source_file, _source_line FROM clean")),
        "dlq": set(read_rows(warehouse, "SELECT id, _source_file, _source_line FROM dlq")),
        "dups": set(
            read_rows(
                warehouse,
                "SELECT _source_file, _source_line, _kept_source_file, _kept_source_line FROM dups",
            )
        ),
    }


def ledger_paths(warehouse: Path) -> list[str]:
    con = connect(warehouse)
    try:
        q = "SELECT path FROM _sluicegate_files ORDER BY path"
        return [p for (p,) in con.execute(q).fetchall()]
    finally:
        con.close()


class Scene:
    """A landing folder with an incremental contract and a batch twin (other warehouse)."""

    def __init__(self, root: Path, engine: str = "duckdb", **kw: Any) -> None:
        self.root = root
        self.landing = root / "landing"
        self.landing.mkdir(parents=True, exist_ok=True)
        inc, batch = warehouse_name(engine, "inc"), warehouse_name(engine, "batch")
        self.contract = stream_contract(root, warehouse=inc, engine=engine, **kw)
        self.batch_contract = stream_contract(
            root, warehouse=batch, name="batch.yml", engine=engine, **kw
        )
        self.wh = root / inc
        self.batch_wh = root / batch

    def reference(self) -> dict[str, list[tuple]]:
        """One batch run over every file now in the landing folder."""
        run_batch(self.batch_contract)
        return outputs_of(self.batch_wh)


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    yield Scene(tmp_path)


@pytest.fixture
def any_scene(tmp_path: Path, engine: str) -> Iterator[Scene]:
    """The scene on each engine (tests/engines/engine_params.py)."""
    yield Scene(tmp_path, engine=engine)


# -- tests ---------------------------------------------------------------------------------


def test_three_waves_equal_one_batch_and_the_oracle(scene: Scene):
    statuses = []
    for n in range(3):
        new = drop_wave(scene.landing, n)
        r = run_inc(scene.contract)
        statuses.append(r.status)
        assert r.metrics["incremental"]["new_files"] == len(new)
        assert sorted(f["path"] for f in r.metrics["input"]["files"]) == sorted(new)
        assert r.metrics["ledger"]["balanced"]
    assert statuses == ["warn", "pass", "pass"]  # wave 1: 4 of 9 routed quarantined
    assert ledger_paths(scene.wh) == sorted(str(scene.landing / n) for n in ALL_FILES)
    expected = oracle(scene.landing, ALL_FILES)
    assert observed(scene.wh) == expected
    assert outputs_of(scene.wh) == scene.reference()
    assert observed(scene.batch_wh) == expected
    # three runs, each its own run id, on one logical date
    con = connect(scene.wh)
    try:
        runs = con.execute("SELECT count(DISTINCT _run_id) FROM clean").fetchone()[0]
        dates = con.execute("SELECT DISTINCT _logical_date FROM clean").fetchall()
    finally:
        con.close()
    assert runs == 3 and len(dates) == 1


def test_cross_batch_duplicates_point_at_the_earlier_batch(any_scene: Scene):
    scene = any_scene
    drop_wave(scene.landing, 0)
    run_inc(scene.contract)
    drop_wave(scene.landing, 1)
    r = run_inc(scene.contract)
    # w2-c line 2 resends id 1 (clean in w1-a line 1); w2-d line 2 resends id 2 (quarantined)
    c, d = str(scene.landing / "w2-c.json"), str(scene.landing / "w2-d.json")
    a = str(scene.landing / "w1-a.json")
    dups = observed(scene.wh)["dups"]
    assert (c, 2, a, 1) in dups and (d, 2, a, 2) in dups
    assert r.metrics["ledger"]["duplicates"] == 3  # two resends + id 12 twice in w2-d
    assert read_rows(scene.wh, "SELECT count(*) - count(DISTINCT id) FROM clean") == [(0,)]


def test_no_new_file_is_a_clean_noop(scene: Scene):
    drop_wave(scene.landing, 0)
    run_inc(scene.contract)
    before = {t: table_rows(scene.wh, t, drop=set()) for t in (*OUTPUTS, "facts")}
    r = run_inc(scene.contract)
    assert (r.status, r.exit_code, r.metrics_path) == ("empty", 0, None)
    assert r.metrics["incremental"]["new_files"] == 0
    assert r.metrics["incremental"]["processed_before"] == 2
    after = {t: table_rows(scene.wh, t, drop=set()) for t in (*OUTPUTS, "facts")}
    assert after == before
    p = run_cli("run", str(scene.contract), "--incremental", "--logical-date", DAY)
    assert p.returncode == 0, p.stderr
    assert "no new files" in p.stdout


def test_first_run_on_an_empty_landing_folder_is_a_noop(scene: Scene):
    r = run_inc(scene.contract)
    assert (r.status, r.exit_code) == ("empty", 0)
    assert not scene.wh.exists() or table_names(scene.wh) == []  # nothing published


def table_names(warehouse: Path) -> list[str]:
    con = connect(warehouse)
    try:
        q = "SELECT table_name FROM information_schema.tables"
        return [t for (t,) in con.execute(q).fetchall()]
    finally:
        con.close()


class Notices:
    """A listener that keeps the notices."""

    def __init__(self) -> None:
        self.notices: list[str] = []

    def stage(self, name: str, detail: str = "") -> None:
        pass

    def finished(
        self, name: str, seconds: float, detail: str = "", records: int | None = None
    ) -> None:
        pass

    def notice(self, message: str) -> None:
        self.notices.append(message)


def modified_file_scene(scene: Scene) -> dict[str, Any]:
    """Process wave 1, change one of its files, then run a batch with wave 2 and an
    empty batch; what each reported."""
    drop_wave(scene.landing, 0)
    run_inc(scene.contract)
    changed = scene.landing / "w1-b.json"
    with open(changed, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec(99, k="appended-after-processing")) + "\n")
    drop_wave(scene.landing, 1)
    lis = Notices()
    r = run_inc(scene.contract, listener=lis)
    empty_lis = Notices()
    empty = run_inc(scene.contract, listener=empty_lis)
    (fact,) = read_rows(
        scene.wh,
        "SELECT status, metric, diagnostic, detail FROM facts "
        "WHERE check_id = 'processed_files_unchanged' AND run_id = ?",
        [r.metrics["run_id"]],
    )
    ((appended,),) = read_rows(
        scene.wh, "SELECT count(*) FROM clean WHERE k = 'appended-after-processing'"
    )
    return {
        "changed": str(changed),
        "result": r,
        "notices": lis.notices,
        "empty": empty,
        "empty_notices": empty_lis.notices,
        "fact": fact,
        "appended_rows": appended,
    }


def test_a_file_modified_after_processing_is_reported_not_reprocessed(any_scene: Scene):
    scene = any_scene
    seen = modified_file_scene(scene)
    r = seen["result"]
    assert r.status in ("pass", "warn")  # a warning-severity fact: it does not fail the batch
    assert [c["path"] for c in r.metrics["incremental"]["changed_files"]] == [seen["changed"]]
    assert any(seen["changed"] in n and "changed" in n for n in seen["notices"])
    status, metric, diagnostic, detail = seen["fact"]
    assert (status, metric, diagnostic) == ("warn", "1", "PROCESSED_FILE_CHANGED")
    assert seen["changed"] in detail
    assert seen["appended_rows"] == 0  # not reprocessed
    # nothing new: still a no-op, still reported
    assert seen["empty"].status == "empty"
    assert seen["empty"].metrics["incremental"]["changed_files"]
    assert any(seen["changed"] in n for n in seen["empty_notices"])


def test_unchanged_processed_files_pass_the_check(scene: Scene):
    drop_wave(scene.landing, 0)
    run_inc(scene.contract)
    drop_wave(scene.landing, 1)
    r = run_inc(scene.contract)
    fact = next(f for f in r.metrics["facts"] if f["check_id"] == "processed_files_unchanged")
    assert (fact["status"], fact["metric"], fact["evaluated"]) == ("pass", 0, 2)


def test_cumulative_ledger_per_batch_and_in_total(scene: Scene):
    for n in range(3):
        drop_wave(scene.landing, n)
        run_inc(scene.contract)
    p = run_cli("facts", "ledger", str(scene.contract), "--json", "--logical-date", DAY)
    assert p.returncode == 0, p.stderr
    led = json.loads(p.stdout)
    # raw counted independently: non-blank lines of the five files
    raw = sum(
        1
        for name in ALL_FILES
        for line in (scene.landing / name).read_text(encoding="utf-8").split("\n")
        if line.strip()
    )
    assert [r["files"] for r in led["runs"]] == [2, 2, 1]
    assert all(r["micro_batch"] and r["balanced"] for r in led["runs"])
    tot = led["totals"]
    assert tot["raw"] == raw and tot["files"] == 5 and tot["micro_batches"] == 3
    rhs = sum(tot[k] for k in ("clean", "withheld", "duplicates", "quarantined", "fixed"))
    assert rhs + tot["recycled"] + tot["rejected"] == raw
    exp_ = oracle(scene.landing, ALL_FILES)
    assert (tot["clean"], tot["quarantined"], tot["duplicates"]) == (
        len(exp_["clean"]),
        len(exp_["dlq"]),
        len(exp_["dups"]),
    )
    text = run_cli("facts", "ledger", str(scene.contract), "--logical-date", DAY)
    assert text.returncode == 0 and "total (3 runs)" in text.stdout


def test_cumulative_ledger_exits_3_when_a_file_ledger_disagrees(scene: Scene):
    drop_wave(scene.landing, 0)
    run_inc(scene.contract)
    con = duckdb.connect(str(scene.wh))
    try:  # tamper: one file's records no longer match the run's raw count
        con.execute("UPDATE _sluicegate_files SET records = records + 1 WHERE path LIKE '%w1-a%'")
    finally:
        con.close()
    p = run_cli("facts", "ledger", str(scene.contract), "--logical-date", DAY)
    assert p.returncode == 3
    assert "file_ledger" in p.stderr


def test_micro_batch_run_id_is_deterministic_and_not_a_batch_run_id(scene: Scene):
    drop_wave(scene.landing, 0)
    a = run_inc(scene.contract).metrics["run_id"]
    b = run_batch(scene.contract).metrics["run_id"]  # same files, batch mode
    assert a != b
    binding = load_contract(scene.contract, logical_date=DAY)
    from sluicegate.run import bind as bind_s

    bound = bind_s.bind(binding, [str(scene.landing / n) for n in WAVES[0]])
    assert inc_m.batch_run_id(binding, bound) == a


# -- mutants: each rule, broken on purpose, must be caught by the checks above -------------


def three_waves(scene: Scene) -> dict[str, list[tuple]]:
    for n in range(3):
        drop_wave(scene.landing, n)
        run_inc(scene.contract)
    return outputs_of(scene.wh)


def test_mutant_replacing_the_whole_date_loses_earlier_batches(scene: Scene, monkeypatch):
    from sluicegate.run.pipeline import RunContext

    monkeypatch.setattr(RunContext, "replace_run_id", property(lambda self: None))
    final = three_waves(scene)
    assert final != scene.reference()
    assert observed(scene.wh) != oracle(scene.landing, ALL_FILES)


def test_mutant_without_dedupe_across_batches_keeps_resent_records(scene: Scene, monkeypatch):
    monkeypatch.setattr(inc_m.Incremental, "against_prior", lambda self, ctx, ranked, typed: ranked)
    three_waves(scene)
    con = connect(scene.wh)
    try:
        doubled = con.execute("SELECT count(*) - count(DISTINCT id) FROM clean").fetchone()[0]
    finally:
        con.close()
    assert doubled > 0
    assert observed(scene.wh) != oracle(scene.landing, ALL_FILES)


def test_mutant_without_a_file_ledger_processes_files_again(scene: Scene, monkeypatch):
    monkeypatch.setattr(inc_m.Incremental, "record_files", lambda self, ctx: None)
    final = three_waves(scene)
    assert final != scene.reference()


def test_mutant_blind_to_changed_files_is_caught(scene: Scene, monkeypatch):
    monkeypatch.setattr(inc_m, "changed_files", lambda processed, spec: [])
    seen = modified_file_scene(scene)
    assert seen["result"].metrics["incremental"]["changed_files"] == []
    assert seen["fact"][0] == "pass"  # the reporting test asserts warn: it would fail
    assert not any(seen["changed"] in n for n in seen["notices"])


def test_mutant_reprocessing_changed_files_is_caught(scene: Scene, monkeypatch):
    real = inc_m.read_ledger

    def forget_changed(eng, contract):  # a changed file looks new: reprocessed
        rows = real(eng, contract)
        return {p: r for p, r in rows.items() if not p.endswith("w1-b.json")}

    monkeypatch.setattr(inc_m, "read_ledger", forget_changed)
    seen = modified_file_scene(scene)
    assert seen["appended_rows"] == 1  # the reporting test asserts 0: it would fail
