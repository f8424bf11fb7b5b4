"""``sluicegate init``: a commented draft contract from data, checked by running it.

Discover the files and field names (:mod:`.discover`), profile them on the embedded
engine with the run's own reader and cast rules (:mod:`.profile`), decide types, rules,
a dedupe key and foreign keys with their evidence (:mod:`.draft`), write the draft —
then validate it and run it once on the same data in a scratch warehouse. The gate bands
are set around the share that trial run quarantined, so the draft validates and runs as
written, and its first real run does not fail on the data it was drafted from.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.models import IDENT, ColumnSpec
from ..errors import UsageError
from .discover import Discovered, discover
from .draft import (
    FK_SHARE,
    FORMAT_MIN_SHARE,
    TYPE_SHARE,
    ColumnChoice,
    Draft,
    Suggestion,
    TableDraft,
    enum_rule,
    fk_rule,
    gate_bands,
    key_candidate,
    n,
    not_null_rule,
    numeric_choice,
    pct,
    render,
    sign_rule,
)
from .profile import (
    DATE_FORMATS,
    TIMESTAMP_FORMATS,
    ColumnProfile,
    TableProfile,
    coverage,
    format_cover,
    load_text,
    mismatches,
    profile_table,
    text_spec,
    time_range,
    top_values,
    value_stats,
)


@dataclass
class InitResult:
    """What ``init`` wrote and what its trial run found."""

    path: Path
    columns: int
    rules: int
    key: str | None
    trial: str  # the trial run's ledger, one line
    status: str
    #: the trial run's ledger counts (raw, clean, quarantined, duplicates, …) and the
    #: quarantined share the gate's bands were drawn from: ``init --json`` prints them
    ledger: dict[str, Any] = field(default_factory=dict)
    quarantine_share: float = 0.0


def init_contract(
    name: str,
    source: str,
    *,
    references: dict[str, str] | None = None,
    out: str | Path | None = None,
    fmt: str | None = None,
    force: bool = False,
) -> InitResult:
    """Profile ``source`` (a file, folder or glob) and write a draft contract ``NAME.yml``.

    Raises:
        UsageError: a bad name, an existing output without ``force``, unreadable data.
    """
    if not re.match(IDENT, name):
        fixed = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "feed"
        raise UsageError(
            f"contract name '{name}' must be lower-case letters, digits and _",
            hint=f"sluicegate init {fixed} --from {source}",
        )
    out_path = Path(out or f"{name}.yml").absolute()
    if out_path.exists() and not force:
        raise UsageError(f"{out_path} exists", hint="pass --force to overwrite it, or --out FILE")
    for ref in references or {}:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", ref):
            raise UsageError(f"--reference name '{ref}' must be an identifier (NAME=FILE)")
    from ..engines import open_engine

    engine = open_engine("duckdb", ":memory:", memory_limit="800MB")
    try:
        draft = _draft(engine, name, source, references or {}, fmt, out_path.parent)
    finally:
        engine.close()
    draft.warehouse = f"./{name}.duckdb"
    draft.file = out_path.name
    out_path.write_text(render(draft), encoding="utf-8")
    status, trial, share, ledger = _trial_run(out_path)
    draft.gate = gate_bands(share)
    draft.gate_evidence = (
        f"the draft quarantines {pct(round(share * 10**6), 10**6)} of this sample: "
        "warn above 1.5x, fail above 3x; tighten as the feed improves"
    )
    out_path.write_text(render(draft), encoding="utf-8")
    from ..compile.contract_check import load_contract

    load_contract(out_path)  # the written draft validates (bands only moved up: same run)
    status = "warn" if share > draft.gate[0] else "pass"
    return InitResult(
        out_path,
        len(draft.source.columns),
        len(draft.rules),
        draft.key,
        trial,
        status,
        {k: v for k, v in ledger.items() if isinstance(v, int) and not isinstance(v, bool)},
        share,
    )


def _relative(path: str, base: Path) -> str:
    rel = os.path.relpath(os.path.abspath(path), base)
    return rel.replace(os.sep, "/")


def _draft(
    engine, name: str, source: str, references: dict[str, str], fmt: str | None, base: Path
) -> Draft:  # noqa: ANN001
    src = discover(source, fmt)
    src_profile = _load_and_profile(engine, "_sg_init_src", src)
    choices = {p.name: _choose(engine, "_sg_init_src", p) for p in src_profile.columns.values()}
    refs: dict[str, tuple[Discovered, TableProfile, dict[str, ColumnChoice]]] = {}
    for ref_name, ref_path in references.items():
        d = discover(ref_path)
        table = f"_sg_init_ref_{ref_name}"
        tp = _load_and_profile(engine, table, d)
        refs[ref_name] = (d, tp, {p.name: _choose(engine, table, p) for p in tp.columns.values()})

    columns = list(src_profile.columns.values())
    key = key_candidate(columns, choices)
    key_evidence = (
        _key_evidence(key)
        if key
        else ("no single column is nearly unique; declare a key if records can repeat")
    )
    rules: list[Suggestion] = []
    for p in columns:
        c = choices[p.name]
        for s in (
            not_null_rule(p),
            _fk(engine, p, c, refs) if key is None or p.name != key.name else None,
        ):
            if s:
                rules.append(s)
        if c.kind in ("integer", "decimal", "float") and (key is None or p.name != key.name):
            s = sign_rule(p.name, value_stats(engine, "_sg_init_src", p.name, _spec(c)))
            if s:
                rules.append(s)
        elif c.kind == "string" and not any(r.name == f"known_{p.name.lower()}" for r in rules):
            s = enum_rule(p, top_values(engine, "_sg_init_src", p.name, 13))
            if s:
                rules.append(s)
    return Draft(
        name=name,
        origin=source,
        records=src_profile.records,
        corrupt=src_profile.corrupt,
        source=TableDraft(
            _relative(source, base),
            src.format,
            src.delimiter,
            src.partitions,
            list(choices.values()),
        ),
        references={
            r: TableDraft(
                _relative(d.path, base), d.format, d.delimiter, d.partitions, list(ch.values())
            )
            for r, (d, _tp, ch) in refs.items()
        },
        rules=rules,
        key=key.name if key else None,
        key_evidence=key_evidence,
        left_out=src.left_out
        + [f"reference {r}: {s}" for r, (d, _, _) in refs.items() for s in d.left_out],
        warehouse="",
    )


def _load_and_profile(engine, table: str, d: Discovered) -> TableProfile:  # noqa: ANN001
    spec = text_spec(d.path, d.format, d.fields, d.delimiter)
    load_text(engine, d.files, spec, d.partitions, table)
    return profile_table(engine, table, d.fields)


def _spec(c: ColumnChoice) -> ColumnSpec:
    return ColumnSpec(type=c.type, formats=c.formats)


def _choose(engine, table: str, p: ColumnProfile) -> ColumnChoice:  # noqa: ANN001
    """The declared type of a column and the comment that justifies it."""
    present = p.non_null + p.nested
    choice = ColumnChoice(p.name, "VARCHAR", "string", accepted=p.non_null, present=present)
    picked = numeric_choice(p)
    if picked:
        choice.type, choice.kind, choice.accepted = picked
    else:
        for kind, counts, all_formats in (
            ("DATE", p.date_formats, DATE_FORMATS),
            ("TIMESTAMP", p.timestamp_formats, TIMESTAMP_FORMATS),
        ):
            if present and sum(counts.values()) >= TYPE_SHARE * present:
                formats, covered, steps = _cover(
                    engine, table, p.name, kind, list(all_formats), present
                )
                if covered >= TYPE_SHARE * present:
                    choice.type, choice.kind, choice.accepted = kind, kind.lower(), covered
                    choice.formats, choice.format_counts = formats, steps
                    break
    notes = []
    if choice.kind == "string":
        notes.append(f"{n(p.non_null)} present, {n(p.distinct)} distinct")
    elif choice.kind in ("date", "timestamp"):
        lo, hi = time_range(engine, table, p.name, _spec(choice))
        notes.append(f"{lo} .. {hi}")
        if len(choice.formats or []) > 1:
            notes.append(" + ".join(n(x) for x in choice.format_counts) + " values by format")
    elif choice.kind != "boolean":
        st = value_stats(engine, table, p.name, _spec(choice))
        notes.append(f"{st['min']} .. {st['max']}")
    if p.nulls > 0.01 * p.records:
        notes.append(f"{pct(p.nulls, p.records)} NULL: optional")
    if present == 0:
        notes = ["always NULL or absent in this sample"]
    if choice.rejected:
        choice.examples = mismatches(engine, table, p.name, _spec(choice))
        eg = ", ".join(repr(e[:24]) for e in choice.examples)
        notes.append(f"{n(choice.rejected)} values do not cast (e.g. {eg}): type_mismatch")
    choice.note = "; ".join(notes)
    return choice


def _cover(
    engine, table: str, name: str, kind: str, candidates: list[str], present: int
) -> tuple[list[str], int, list[int]]:  # noqa: ANN001
    """Formats chosen greedily by how many more values each parses (see draft.py)."""
    chosen: list[str] = []
    covered = 0
    steps: list[int] = []
    while candidates:
        counts = format_cover(engine, table, name, kind, chosen, candidates)
        best = max(candidates, key=lambda f: (counts[f], -candidates.index(f)))
        gain = counts[best] - covered
        if gain <= 0 or gain < FORMAT_MIN_SHARE * present:
            break
        chosen.append(best)
        steps.append(gain)
        covered = counts[best]
        candidates.remove(best)
    return chosen, covered, steps


def _fk(engine, p: ColumnProfile, c: ColumnChoice, refs) -> Suggestion | None:  # noqa: ANN001
    """The best reference column holding nearly every value of ``p`` (unique there)."""
    if c.kind not in ("string", "integer") or not p.non_null:
        return None
    best = None
    for ref_name, (_d, tp, ref_choices) in refs.items():
        for rp in tp.columns.values():
            rc = ref_choices[rp.name]
            if rc.kind != c.kind or not rp.non_null or rp.distinct != rp.non_null:
                continue
            found, total = coverage(
                engine, "_sg_init_src", p.name, _spec(c), tp.table, rp.name, _spec(rc)
            )
            if total and found >= FK_SHARE * total:
                rank = (found, rp.name == p.name)
                if best is None or rank > best[0]:
                    best = (rank, ref_name, rp.name, found, total)
    if best is None:
        return None
    _rank, ref_name, key, found, total = best
    return fk_rule(p.name, ref_name, key, found, total)


def _key_evidence(p: ColumnProfile) -> str:
    if p.distinct == p.non_null:
        return f"unique: {n(p.distinct)} distinct of {n(p.non_null)} records"
    repeats = p.non_null - p.distinct
    return (
        f"{n(p.distinct)} distinct of {n(p.non_null)}: {n(repeats)} repeats, kept once "
        "(add order_by to choose which)"
    )


def _trial_run(contract: Path) -> tuple[str, str, float, dict[str, Any]]:
    """Validate and run the draft on its data in a scratch warehouse; (status, ledger line,
    share, ledger)."""
    from ..compile.contract_check import load_contract
    from ..run.pipeline import run_contract

    with tempfile.TemporaryDirectory(prefix="sluicegate-init-") as tmp:
        loaded = load_contract(contract, variables={"warehouse": str(Path(tmp) / "trial.duckdb")})
        result = run_contract(loaded)
    m = result.metrics
    led = m["ledger"]
    raw = led["raw"]
    levels = {lv["check"]: lv for lv in m["gate"]["levels"]}
    share = float(levels["quarantine_share"]["metric"]) if "quarantine_share" in levels else 0.0
    line = (
        f"raw {n(raw)} = clean {n(led['clean'])} + quarantined {n(led['quarantined'])} "
        f"+ duplicates {n(led['duplicates'])}"
    )
    return result.status, line, share, led
