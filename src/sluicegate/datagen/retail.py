"""Seeded generator of the hostile retail sales feed, with its own ground truth.

This is the workload of seed 002 (1,009,989 raw lines, ~0.1% corrupt, ~1%
duplicates, ~1.3% quarantined). The demo, the tests and the benchmark all use
it, so the counts a correct pipeline must report are computed here, from the
same draws that wrote the files, and written to ``expected.json``.

Layout under ``out_dir``::

    sales/month=YYYY-MM/part-NNN.json   NDJSON sale lines, 2023-07 .. 2024-12
    products.json                       product_id, name, category, list_price
    stores.json                         store_id, city, region
    customers_cdc.json                  customer_id, effective_ts, segment, region
    expected.json                       the ground truth (see ``generate``)

Sale fields: sale_id, order_ts, customer_id, product_id, store_id, channel,
quantity, unit_price, ingested_at (plus an undeclared ``promo_code`` on ~1%).

Hostility, all seeded:

* corrupt lines (~0.1%): truncated sale lines, HTML error pages, CSV headers,
  unquoted keys, missing commas, random text. A line is corrupt when it is not
  a valid JSON object; no line is blank, none is valid JSON that is not an
  object, and every sale line is LF-terminated.
* duplicates (~1%): byte-identical copies, the same values re-serialised
  (other spacing / key order), and resends of the same sale_id with another
  payload (quantity, price, channel, or order_ts re-rendered in the other
  format). Resends carry a later or an equal ``ingested_at`` (equal: the
  tie-break decides), a few carry none. ~30% land in another month's file.
* ``order_ts`` as ``%Y-%m-%dT%H:%M:%SZ`` or ``%d/%m/%Y %H:%M:%S`` (UTC), plus
  unparseable, NULL and absent values (month 13, 31 February, epoch seconds…).
* NULL or absent customer/product/store ids; quantity 0, negative or NULL;
  unit_price negative, NULL or absent (0.00 is valid); unknown product and
  store ids; shuffled key order; late lines in the next month's file.
* customers_cdc.json is unsorted and holds exact duplicate events; every
  customer has a version before the sales period, consecutive versions always
  differ, and some sales fall exactly on a version boundary.

Dedupe keeps, per sale_id, the first line by ``DEDUPE_ORDER`` (then file path,
line number). The eight ``RULES`` run on the kept rows; a rule fails when its
condition is not TRUE (NULL fails). Clean rows join the customer version valid
at order time (``valid_from <= order_ts < valid_to``); every customer has one,
so fact rows == clean rows.

Example:
    >>> from pathlib import Path
    >>> import tempfile
    >>> truth = generate(Path(tempfile.mkdtemp()), lines=2_000, seed=7)
    >>> truth["raw_lines"] == truth["corrupt_lines"] + truth["duplicates_dropped"] \
+ truth["deduplicated_rows"]
    True
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from .retail_render import _iso_seconds, _literals, _order_ts_values, _render, _render_chunk  # noqa: F401
from .retail_spec import (  # noqa: F401 - re-exported: the feed's public constants
    _ABSENT,
    _FIRST_VERSION_START,
    _GARBAGE,
    _LETTERS,
    _REFERENCE_CORRUPT,
    _REFERENCE_DUPLICATES,
    ABSENT,
    BAD_ORDER_TS,
    CATEGORIES,
    CHANNELS,
    CITIES,
    DEDUPE_ORDER,
    GENERATOR_VERSION,
    MONTHS,
    N_PRODUCTS,
    N_STORES,
    NULL,
    P_ABSENT_WHEN_NULL,
    P_BAD_PRICE,
    P_BAD_QUANTITY,
    P_BAD_TS,
    P_BOUNDARY_TS,
    P_LATE,
    P_NULL_CUSTOMER,
    P_NULL_PRODUCT,
    P_NULL_STORE,
    P_PROMO_CODE,
    P_SHUFFLED_KEYS,
    P_UNKNOWN_PRODUCT,
    P_UNKNOWN_STORE,
    P_ZERO_PRICE,
    PRESENT,
    PROMO_CODES,
    REFERENCE_LINES,
    REGIONS,
    RULES,
    SALE_FIELDS,
    SALES_END,
    SALES_START,
    SEGMENTS,
    TS_FORMATS,
    _Customers,
    _epoch,
    _Sales,
)


def _nullable(rng: np.random.Generator, n: int, p_null: float) -> np.ndarray:
    """States for n values: NULL with probability p_null, a fifth of those as an absent key."""
    st = np.zeros(n, dtype=np.int8)
    null = rng.random(n) < p_null
    st[null] = NULL
    st[null & (rng.random(n) < P_ABSENT_WHEN_NULL)] = ABSENT
    return st


def _draw_customers(rng: np.random.Generator, n_customers: int) -> _Customers:
    counts = rng.choice(np.array([1, 2, 3, 4]), size=n_customers, p=[0.5, 0.25, 0.15, 0.10])
    first = rng.integers(_FIRST_VERSION_START, SALES_START, n_customers)
    later = np.sort(rng.integers(SALES_START, SALES_END, (n_customers, 3)), axis=1)
    # Versions of one customer must have distinct effective times: redraw the rare clash.
    clash = np.nonzero((later[:, 1:] == later[:, :-1]).any(axis=1))[0]
    for c in clash.tolist():
        while len(set(later[c].tolist())) < 3:
            later[c] = np.sort(rng.integers(SALES_START, SALES_END, 3))
    eff = np.concatenate([first[:, None], later], axis=1)
    keep = np.arange(4)[None, :] < counts[:, None]
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    owner = np.repeat(np.arange(n_customers), counts)
    return _Customers(start=start, count=counts, eff=eff[keep], owner=owner)


def _at_least(p: float, n: int, times: int = 4) -> float:
    """A defect probability raised so that a small feed (a few thousand lines) still shows
    every kind of defect a few times; at the reference size it is unchanged."""
    return max(p, times / max(n, 1))


def _draw_sales(
    rng: np.random.Generator, n: int, first_sale: int, customers: _Customers, boost: bool = True
) -> _Sales:
    """Draw n base sales (distinct sale numbers from first_sale) with their defects.

    ``boost`` raises rare defects in a small feed (see ``_at_least``); off for the few
    records that are only drawn to be truncated into corrupt lines."""
    size = n if boost else REFERENCE_LINES
    n_cust = len(customers.count)
    cust = rng.integers(0, n_cust, n)
    ts = rng.integers(SALES_START, SALES_END, n)
    # Some orders land exactly on a later version's valid_from: the as-of join's boundary.
    boundary = (rng.random(n) < _at_least(P_BOUNDARY_TS, size, 12)) & (customers.count[cust] > 1)
    bi = np.nonzero(boundary)[0]
    pick = customers.start[cust[bi]] + 1 + rng.integers(0, customers.count[cust[bi]] - 1)
    ts[bi] = customers.eff[pick]

    prod = rng.integers(1, N_PRODUCTS + 1, n)
    unknown_prod = rng.random(n) < _at_least(P_UNKNOWN_PRODUCT, size)
    prod[unknown_prod] = 90_000 + rng.integers(0, 10_000, int(unknown_prod.sum()))
    store = rng.integers(1, N_STORES + 1, n)
    unknown_store = rng.random(n) < _at_least(P_UNKNOWN_STORE, size)
    store[unknown_store] = 9_000 + rng.integers(0, 1_000, int(unknown_store.sum()))

    qty = rng.integers(1, 11, n)
    qty_st = np.zeros(n, dtype=np.int8)
    bad_qty = np.nonzero(rng.random(n) < _at_least(P_BAD_QUANTITY, size))[0]
    kind = rng.integers(0, 5, bad_qty.size)  # 0, -1, -3, NULL, absent
    qty[bad_qty] = np.array([0, -1, -3, 0, 0])[kind]
    qty_st[bad_qty[kind == 3]] = NULL
    qty_st[bad_qty[kind == 4]] = ABSENT

    price = rng.integers(100, 50_001, n)
    price_st = np.zeros(n, dtype=np.int8)
    price[rng.random(n) < _at_least(P_ZERO_PRICE, size)] = 0
    bad_price = np.nonzero(rng.random(n) < _at_least(P_BAD_PRICE, size))[0]
    kind = rng.integers(0, 3, bad_price.size)  # negative, NULL, absent
    price[bad_price] = -rng.integers(1, 5_001, bad_price.size)
    price_st[bad_price[kind == 1]] = NULL
    price_st[bad_price[kind == 2]] = ABSENT

    ts_bad = np.full(n, -1, dtype=np.int16)
    bad_ts = rng.random(n) < _at_least(P_BAD_TS, size)
    ts_bad[bad_ts] = rng.integers(0, len(BAD_ORDER_TS), int(bad_ts.sum()))

    return _Sales(
        sale=np.arange(first_sale, first_sale + n, dtype=np.int64),
        ts=ts,
        ts_fmt=(rng.random(n) < 0.5).astype(np.int8),
        ts_bad=ts_bad,
        cust=cust,
        cust_st=_nullable(rng, n, _at_least(P_NULL_CUSTOMER, size)),
        prod=prod,
        prod_st=_nullable(rng, n, _at_least(P_NULL_PRODUCT, size)),
        store=store,
        store_st=_nullable(rng, n, _at_least(P_NULL_STORE, size)),
        chan=rng.integers(0, len(CHANNELS), n).astype(np.int8),
        qty=qty,
        qty_st=qty_st,
        price=price,
        price_st=price_st,
        ing=ts + rng.integers(60, 3 * 86_400 + 1, n),
        ing_st=np.zeros(n, dtype=np.int8),
    )


def _month_index(sec: np.ndarray) -> np.ndarray:
    months = sec.astype("datetime64[s]").astype("datetime64[M]")
    return (months - np.datetime64("2023-07", "M")).astype(np.int64)


def _resends(base: _Sales, src: np.ndarray, rng: np.random.Generator) -> _Sales:
    """Same sale_id, another payload: one field changed; a later, equal or missing ingested_at."""
    d = base.take(src)
    n = len(d)
    change = rng.integers(0, 4, n)
    new_qty = rng.integers(1, 11, n)
    new_price = rng.integers(100, 50_001, n)
    new_chan = rng.integers(0, len(CHANNELS), n).astype(np.int8)
    # An unparseable order_ts cannot be re-rendered: those resends change the quantity.
    reformat = (change == 3) & (d.ts_bad < 0)
    requantify = (change == 0) | ((change == 3) & (d.ts_bad >= 0))
    d.qty[requantify] = new_qty[requantify]
    d.qty_st[requantify] = PRESENT
    d.price[change == 1] = new_price[change == 1]
    d.price_st[change == 1] = PRESENT
    d.chan[change == 2] = new_chan[change == 2]
    d.ts_fmt[reformat] = 1 - d.ts_fmt[reformat]
    # Most resends are later; some carry the same ingested_at (the tie-break decides);
    # a few carry none (NULLS LAST: they never win).
    p_missing = min(0.2, _at_least(0.05, n, 6))
    p_equal = min(0.4, _at_least(0.2, n, 10))
    timing = rng.random(n)
    later = timing < 1 - p_missing - p_equal
    d.ing[later] += rng.integers(1, 7_201, int(later.sum()))
    missing = timing >= 1 - p_missing
    d.ing_st[missing] = np.where(rng.random(int(missing.sum())) < 0.5, NULL, ABSENT)
    return d


def _survivor_key(s: _Sales, i: int, order_ts: str | None) -> tuple[Any, ...]:
    """Sort key of the dedupe order: ingested_at DESC NULLS LAST, then the rest ASC NULLS LAST."""

    def asc(value: Any, state: int) -> tuple[int, Any]:
        return (1, 0) if state else (0, value)

    return (
        (1, 0) if s.ing_st[i] else (0, -int(s.ing[i])),
        (1, "") if order_ts is None else (0, order_ts),
        asc(f"C{int(s.cust[i]) + 1:07d}", s.cust_st[i]),
        asc(f"P{int(s.prod[i]):05d}", s.prod_st[i]),
        asc(f"ST{int(s.store[i]):04d}", s.store_st[i]),
        (0, CHANNELS[s.chan[i]]),
        asc(int(s.qty[i]), s.qty_st[i]),
        asc(int(s.price[i]), s.price_st[i]),
    )


def _survivors(base: _Sales, dups: _Sales, src: np.ndarray) -> _Sales:
    """The kept row of every sale: base values, replaced where a duplicate sorts first.
    Rows equal on every ordered column are interchangeable for the truth, so the
    file/line tie-break needs no simulation here."""
    kept = base.take(np.arange(len(base)))
    base_ts = _order_ts_values(base.take(np.unique(src)))
    base_ts_of = dict(zip(np.unique(src).tolist(), base_ts, strict=True))
    dup_ts = _order_ts_values(dups)
    best: dict[int, tuple[tuple[Any, ...], int]] = {}
    for j, b in enumerate(src.tolist()):
        if b not in best:
            best[b] = (_survivor_key(base, b, base_ts_of[b]), -1)
        key = _survivor_key(dups, j, dup_ts[j])
        if key < best[b][0]:
            best[b] = (key, j)
    winners = [(b, j) for b, (_, j) in best.items() if j >= 0]
    if winners:
        bi = np.array([b for b, _ in winners])
        di = np.array([j for _, j in winners])
        for f in fields(kept):
            getattr(kept, f.name)[bi] = getattr(dups, f.name)[di]
    return kept


def _truth(
    kept: _Sales, customers: _Customers
) -> tuple[dict[str, int], np.ndarray, dict[str, Any], int]:
    """Per-rule failures on the kept rows, the quarantine mask and the fact checksums."""
    fails = {
        "non_null_customer": kept.cust_st != PRESENT,
        "non_null_product": kept.prod_st != PRESENT,
        "non_null_store": kept.store_st != PRESENT,
        "positive_quantity": (kept.qty_st != PRESENT) | (kept.qty <= 0),
        "valid_price": (kept.price_st != PRESENT) | (kept.price < 0),
        "known_product": (kept.prod_st == PRESENT) & (kept.prod > N_PRODUCTS),
        "known_store": (kept.store_st == PRESENT) & (kept.store > N_STORES),
        "parseable_order_ts": kept.ts_bad >= 0,
    }
    assert tuple(fails) == tuple(name for name, _ in RULES)
    quarantined = np.zeros(len(kept), dtype=bool)
    for mask in fails.values():
        quarantined |= mask
    clean = ~quarantined
    qty = kept.qty[clean]
    cents = int((qty * kept.price[clean]).sum())
    versions = customers.version_at(kept.cust[clean], kept.ts[clean])
    assert (versions >= 1).all(), "every clean sale must have a customer version"
    checksum = {
        "sum_quantity": int(qty.sum()),
        "sum_amount": round(cents / 100, 2),
        "sum_customer_version": int(versions.sum()),
    }
    return {k: int(v.sum()) for k, v in fails.items()}, quarantined, checksum, cents


def _corrupt_lines(
    rng: np.random.Generator, n: int, first_sale: int, customers: _Customers
) -> list[str]:
    """Truncated sale lines (70%) and garbage. A proper prefix of a JSON object is never valid
    JSON, and no garbage line parses, so each is exactly one corrupt record."""
    truncated = rng.random(n) < 0.7
    truncated[:2] = [True, False][:n]  # both kinds, even in a tiny feed
    k = int(truncated.sum())
    cut_from = _render(_draw_sales(rng, k, first_sale, customers, boost=False), rng)
    out: list[str] = []
    it = iter(cut_from)
    for i, is_cut in enumerate(truncated.tolist()):
        if is_cut:
            line = next(it)
            out.append(line[: int(rng.integers(1, len(line) - 1))])
        else:
            tail = "".join(_LETTERS[rng.integers(0, len(_LETTERS), int(rng.integers(0, 40)))])
            kind = 0 if i == 1 else int(rng.integers(0, len(_GARBAGE)))  # an HTML page, surely
            out.append(_GARBAGE[kind] + tail)
    return out


def _write_reference(out: Path, rng: np.random.Generator, customers: _Customers) -> dict[str, int]:
    """products.json, stores.json and the unsorted customer change log with duplicate events."""
    cats = rng.integers(0, len(CATEGORIES), N_PRODUCTS).tolist()
    list_cents = rng.integers(100, 50_001, N_PRODUCTS).tolist()
    (out / "products.json").write_text(
        "".join(
            f'{{"product_id": "P{i + 1:05d}", "name": "product P{i + 1:05d}", '
            f'"category": "{CATEGORIES[c]}", "list_price": {p // 100}.{p % 100:02d}}}\n'
            for i, (c, p) in enumerate(zip(cats, list_cents, strict=True))
        )
    )
    cities = rng.integers(0, len(CITIES), N_STORES).tolist()
    regions = rng.integers(0, len(REGIONS), N_STORES).tolist()
    (out / "stores.json").write_text(
        "".join(
            f'{{"store_id": "ST{i + 1:04d}", "city": "{CITIES[c]}", "region": "{REGIONS[r]}"}}\n'
            for i, (c, r) in enumerate(zip(cities, regions, strict=True))
        )
    )

    n_versions = len(customers.eff)
    seg = rng.integers(0, len(SEGMENTS), n_versions).tolist()
    reg = rng.integers(0, len(REGIONS), n_versions).tolist()
    owner = customers.owner.tolist()
    for v in range(1, n_versions):  # a new version always changes something
        if owner[v] == owner[v - 1] and (seg[v], reg[v]) == (seg[v - 1], reg[v - 1]):
            seg[v] = (seg[v] + 1) % len(SEGMENTS)
    iso = _iso_seconds(customers.eff)
    lines = [
        f'{{"customer_id": "C{o + 1:07d}", "effective_ts": "{t}Z", '
        f'"segment": "{SEGMENTS[s]}", "region": "{REGIONS[r]}"}}'
        for o, t, s, r in zip(owner, iso, seg, reg, strict=True)
    ]
    repeat = np.nonzero(rng.random(n_versions) < 0.005)[0].tolist()
    lines += [lines[i] for i in repeat]
    order = rng.permutation(len(lines)).tolist()
    (out / "customers_cdc.json").write_text("".join(lines[i] + "\n" for i in order))
    return {
        "customer_dim_rows": n_versions,
        "customer_cdc_lines": len(lines),
        "customer_cdc_exact_duplicates": len(repeat),
        "customers": len(customers.count),
    }


def generate(
    out_dir: Path,
    lines: int,
    seed: int = 42,
    part_lines: int = 200_000,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Write the hostile feed under ``out_dir`` and return its ground truth.

    The same (lines, seed, part_lines) always writes the same bytes. The truth
    is also written to ``out_dir/expected.json``; its keys: raw_lines,
    corrupt_lines, duplicates_dropped, deduplicated_rows, rule_failures (per
    rule, on the kept rows), quarantined (kept rows failing any rule), clean,
    fact_rows, customer_dim_rows, fact_checksum {sum_quantity, sum_amount,
    sum_customer_version}, sale_files, plus descriptive counts.

    Args:
        out_dir: target folder; its ``sales/`` subfolder is replaced.
        lines: total raw sale lines (corrupt + duplicates + distinct sales).
        seed: the seed of every draw.
        part_lines: maximum lines per part file.
        progress: called as ``progress(step, lines_done, lines_total)`` while lines are
            rendered (step ``render``) and written (step ``write``); it never changes
            what is written.

    Example:
        >>> import tempfile
        >>> t = generate(Path(tempfile.mkdtemp()), lines=2_000)
        >>> t["clean"] + t["quarantined"] == t["deduplicated_rows"]
        True
    """
    if lines < 100:
        raise ValueError(f"lines must be at least 100, got {lines}")
    if part_lines < 1:
        raise ValueError(f"part_lines must be positive, got {part_lines}")
    out_dir = Path(out_dir)
    rng = np.random.default_rng(seed)
    report = progress or (lambda _step, _done, _total: None)
    n_corrupt = round(lines * _REFERENCE_CORRUPT / REFERENCE_LINES)
    n_dup = round(lines * _REFERENCE_DUPLICATES / REFERENCE_LINES)
    n_base = lines - n_corrupt - n_dup

    if (out_dir / "sales").exists():
        shutil.rmtree(out_dir / "sales")
    out_dir.mkdir(parents=True, exist_ok=True)

    customers = _draw_customers(rng, max(1_000, lines // 10))
    ref_counts = _write_reference(out_dir, rng, customers)

    base = _draw_sales(rng, n_base, 1, customers)
    base_month = _month_index(base.ts)
    late = (rng.random(n_base) < P_LATE) & (base_month < len(MONTHS) - 1)
    base_month = base_month + late
    report("render", 0, lines)
    base_lines = _render(base, rng)
    report("render", n_base, lines)

    # Duplicates: a sale may be duplicated more than once (draws with replacement).
    src = np.sort(rng.integers(0, n_base, n_dup))
    kind = rng.random(n_dup)  # < .35 byte copy, < .5 same values re-serialised, else resend
    copies = base.take(src)
    resent = _resends(base, src, rng)
    is_resend = kind >= 0.5
    dups = copies
    for f in fields(dups):
        getattr(dups, f.name)[is_resend] = getattr(resent, f.name)[is_resend]
    rendered = _render(dups, rng)
    dup_lines = [
        base_lines[b] if k < 0.35 else line
        for b, k, line in zip(src.tolist(), kind.tolist(), rendered, strict=True)
    ]
    elsewhere = rng.random(n_dup) >= 0.7
    dup_month = np.where(elsewhere, rng.integers(0, len(MONTHS), n_dup), base_month[src])

    report("render", n_base + n_dup, lines)
    corrupt = _corrupt_lines(rng, n_corrupt, n_base + 1, customers)
    report("render", lines, lines)
    corrupt_month = rng.integers(0, len(MONTHS), n_corrupt)

    kept = _survivors(base, dups, src)
    rule_failures, quarantined, checksum, cents = _truth(kept, customers)

    # Files: each month's lines in a seeded random order, cut into parts.
    all_lines = base_lines + dup_lines + corrupt
    month = np.concatenate([base_month, dup_month, corrupt_month])
    order = np.lexsort((rng.random(len(all_lines)), month))
    bounds = np.searchsorted(month[order], np.arange(len(MONTHS) + 1))
    files = written = 0
    report("write", 0, lines)
    for m, name in enumerate(MONTHS):
        chunk = order[bounds[m] : bounds[m + 1]].tolist()
        if not chunk:
            continue
        folder = out_dir / "sales" / f"month={name}"
        folder.mkdir(parents=True)
        for part, start in enumerate(range(0, len(chunk), part_lines)):
            text = "\n".join(all_lines[i] for i in chunk[start : start + part_lines]) + "\n"
            (folder / f"part-{part:03d}.json").write_bytes(text.encode("ascii"))
            files += 1
            written += len(chunk[start : start + part_lines])
            report("write", written, lines)

    n_quarantined = int(quarantined.sum())
    truth: dict[str, Any] = {
        "raw_lines": lines,
        "corrupt_lines": n_corrupt,
        "duplicates_dropped": n_dup,
        "deduplicated_rows": n_base,
        "rule_failures": rule_failures,
        "quarantined": n_quarantined,
        "clean": n_base - n_quarantined,
        "fact_rows": n_base - n_quarantined,
        **{k: v for k, v in ref_counts.items() if k == "customer_dim_rows"},
        "fact_checksum": checksum,
        "sale_files": files,
        "seed": seed,
        "part_lines": part_lines,
        "generator": "sluicegate.datagen.retail",
        "generator_version": GENERATOR_VERSION,
        "details": {
            **{k: v for k, v in ref_counts.items() if k != "customer_dim_rows"},
            "duplicate_byte_copies": int((kind < 0.35).sum()),
            "duplicate_reserialised": int(((kind >= 0.35) & (kind < 0.5)).sum()),
            "duplicate_resends": int(is_resend.sum()),
            "duplicates_in_other_month": int((dup_month != base_month[src]).sum()),
            "late_lines": int(late.sum()),
            "sum_amount_cents": cents,
            "boundary_sales": int(_on_boundary(kept, customers, ~quarantined)),
        },
    }
    (out_dir / "expected.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth


def _on_boundary(kept: _Sales, customers: _Customers, clean: np.ndarray) -> int:
    """Clean sales whose order instant equals a later version's valid_from."""
    keys = (customers.owner << 32) + customers.eff
    later = customers.eff > customers.eff[customers.start[customers.owner]]
    probe = (kept.cust[clean] << 32) + kept.ts[clean]
    pos = np.searchsorted(keys, probe)
    pos = np.minimum(pos, len(keys) - 1)
    return int(((keys[pos] == probe) & later[pos]).sum())


def main(argv: list[str] | None = None) -> int:
    """``python -m sluicegate.datagen.retail --lines N --seed S --out DIR``: prints the truth."""
    ap = argparse.ArgumentParser(
        prog="python -m sluicegate.datagen.retail",
        description="Write the hostile retail feed and its ground truth.",
    )
    ap.add_argument("--lines", type=int, default=REFERENCE_LINES)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--part-lines", type=int, default=200_000)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    truth = generate(args.out, args.lines, args.seed, args.part_lines)
    print(json.dumps(truth, indent=2))
    print(
        f"wrote {args.lines:,} lines to {args.out} in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
