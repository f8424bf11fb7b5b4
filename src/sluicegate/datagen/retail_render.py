"""Rendering the retail feed's records as NDJSON lines (sluicegate.datagen.retail).

Every value is written the way a hostile upstream writes it: two timestamp formats, keys
left out or shuffled, strings where numbers belong; a separate module so the generator
stays small.
"""

from __future__ import annotations

import numpy as np

from .retail_spec import (
    _ABSENT,
    ABSENT,
    BAD_ORDER_TS,
    NULL,
    P_PROMO_CODE,
    P_SHUFFLED_KEYS,
    PROMO_CODES,
    SALE_FIELDS,
    _Sales,
)


def _iso_seconds(sec: np.ndarray) -> list[str]:
    """'YYYY-MM-DDTHH:MM:SS' for each epoch second, vectorized (strftime per value is slow)."""
    return np.datetime_as_string(sec.astype("datetime64[s]"), unit="s").tolist()


def _order_ts_values(s: _Sales) -> list[str | None]:
    """The raw order_ts string of each record (None when NULL or absent)."""
    iso = _iso_seconds(s.ts)
    out: list[str | None] = [
        f"{v[8:10]}/{v[5:7]}/{v[:4]} {v[11:]}" if f else v + "Z"
        for v, f in zip(iso, s.ts_fmt.tolist(), strict=True)
    ]
    for i in np.nonzero(s.ts_bad >= 0)[0].tolist():
        bad = BAD_ORDER_TS[s.ts_bad[i]]
        out[i] = None if bad == _ABSENT else bad
    return out


def _literals(s: _Sales) -> list[list[str | None]]:
    """JSON text of every field of every record: a column per field, None = key absent."""

    def with_states(values: list[str | None], st: np.ndarray) -> list[str | None]:
        for i in np.nonzero(st)[0].tolist():
            values[i] = "null" if st[i] == NULL else None
        return values

    order_ts: list[str | None] = [
        '"' + v + '"' if v is not None else "null" for v in _order_ts_values(s)
    ]
    for i in np.nonzero(s.ts_bad >= 0)[0].tolist():
        if BAD_ORDER_TS[s.ts_bad[i]] == _ABSENT:
            order_ts[i] = None
    cents = s.price.tolist()
    return [
        [f'"SL{v:09d}"' for v in s.sale.tolist()],
        order_ts,
        with_states([f'"C{v + 1:07d}"' for v in s.cust.tolist()], s.cust_st),
        with_states([f'"P{v:05d}"' for v in s.prod.tolist()], s.prod_st),
        with_states([f'"ST{v:04d}"' for v in s.store.tolist()], s.store_st),
        [('"store"', '"web"', '"app"')[v] for v in s.chan.tolist()],
        with_states([str(v) for v in s.qty.tolist()], s.qty_st),
        with_states(
            [
                f"-{-c // 100}.{-c % 100:02d}" if c < 0 else f"{c // 100}.{c % 100:02d}"
                for c in cents
            ],
            s.price_st,
        ),
        with_states(['"' + v + 'Z"' for v in _iso_seconds(s.ing)], s.ing_st),
    ]


def _render(s: _Sales, rng: np.random.Generator, chunk: int = 200_000) -> list[str]:
    """Serialise records as JSON lines, a chunk at a time (the per-field text columns of a
    whole 10M-line feed would not fit comfortably in memory)."""
    if len(s) <= chunk:
        return _render_chunk(s, rng)
    lines: list[str] = []
    for start in range(0, len(s), chunk):
        lines += _render_chunk(s.take(np.arange(start, min(start + chunk, len(s)))), rng)
    return lines


def _render_chunk(s: _Sales, rng: np.random.Generator) -> list[str]:
    """Serialise records as JSON lines: half compact, half spaced; some with shuffled keys
    and an undeclared promo_code. Plain lines take a %-template (the fast path)."""
    n = len(s)
    cols = _literals(s)
    spaced = (rng.random(n) < 0.5).tolist()
    shuffled = rng.random(n) < P_SHUFFLED_KEYS
    promo = rng.random(n) < P_PROMO_CODE
    absent = np.zeros(n, dtype=bool)
    for st in (s.cust_st, s.prod_st, s.store_st, s.qty_st, s.price_st, s.ing_st):
        absent |= st == ABSENT
    absent |= (s.ts_bad >= 0) & (np.array([b == _ABSENT for b in BAD_ORDER_TS])[s.ts_bad])
    slow = set(np.nonzero(shuffled | promo | absent)[0].tolist())
    templates = [
        "{" + ",".join(f'"{k}":%s' for k in SALE_FIELDS) + "}",
        "{" + ", ".join(f'"{k}": %s' for k in SALE_FIELDS) + "}",
    ]
    rows = zip(*cols, strict=True)
    lines = [templates[sp] % row for sp, row in zip(spaced, rows, strict=True)]
    for i in sorted(slow):
        items = [
            (k, v) for k, v in zip(SALE_FIELDS, (c[i] for c in cols), strict=True) if v is not None
        ]
        if shuffled[i]:
            items = [items[j] for j in rng.permutation(len(items)).tolist()]
        if promo[i]:
            code = PROMO_CODES[int(rng.integers(0, len(PROMO_CODES)))]
            items.insert(int(rng.integers(0, len(items) + 1)), ("promo_code", f'"{code}"'))
        sep, colon = (", ", ": ") if spaced[i] else (",", ":")
        lines[i] = "{" + sep.join(f'"{k}"{colon}{v}' for k, v in items) + "}"
    return lines
