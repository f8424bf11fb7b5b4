"""The retail feed's constants and record shapes (sluicegate.datagen.retail generates it).

Kept apart from the generator so each module stays small; the generator re-exports every
name, so ``sluicegate.datagen.retail.SALE_FIELDS`` and friends keep working.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields

import numpy as np

GENERATOR_VERSION = 1
"""Bumped whenever the same (lines, seed) would produce different bytes, so caches expire."""

REFERENCE_LINES = 1_009_989
_REFERENCE_CORRUPT = 981
_REFERENCE_DUPLICATES = 9_993

RULES: tuple[tuple[str, str], ...] = (
    ("non_null_customer", "customer_id IS NOT NULL"),
    ("non_null_product", "product_id IS NOT NULL"),
    ("non_null_store", "store_id IS NOT NULL"),
    ("positive_quantity", "quantity IS NOT NULL AND quantity > 0"),
    ("valid_price", "unit_price IS NOT NULL AND unit_price >= 0"),
    ("known_product", "product_id IS NULL OR product_id IN products.product_id"),
    ("known_store", "store_id IS NULL OR store_id IN stores.store_id"),
    ("parseable_order_ts", "order_ts parses with one of TS_FORMATS (a real date/time)"),
)
"""The eight rules, in priority order: (name, condition as documentation)."""

TS_FORMATS = ("%Y-%m-%dT%H:%M:%SZ", "%d/%m/%Y %H:%M:%S")
DEDUPE_ORDER = (
    "ingested_at DESC NULLS LAST, order_ts, customer_id, product_id, store_id, "
    "channel, quantity, unit_price"
)
"""ASC NULLS LAST after ingested_at; strings (order_ts too) as raw strings, numbers as numbers."""

SALE_FIELDS = (
    "sale_id",
    "order_ts",
    "customer_id",
    "product_id",
    "store_id",
    "channel",
    "quantity",
    "unit_price",
    "ingested_at",
)

N_PRODUCTS = 5_000
N_STORES = 300
CHANNELS = ("store", "web", "app")
CATEGORIES = ("grocery", "electronics", "apparel", "home", "toys", "beauty", "sports", "books")
REGIONS = ("north", "south", "east", "west", "central")
SEGMENTS = ("consumer", "small_business", "corporate", "vip")
CITIES = ("Lyon", "Porto", "Leeds", "Gdansk", "Turin", "Ghent", "Malmo", "Bilbao", "Graz", "Brno")
PROMO_CODES = ("SPRING", "BF24", "WELCOME10")


def _epoch(year: int, month: int, day: int) -> int:
    return int(dt.datetime(year, month, day, tzinfo=dt.UTC).timestamp())


SALES_START = _epoch(2023, 7, 1)
SALES_END = _epoch(2025, 1, 1)  # exclusive
_FIRST_VERSION_START = _epoch(2021, 1, 1)
MONTHS = tuple(f"{2023 + (6 + i) // 12:04d}-{(6 + i) % 12 + 1:02d}" for i in range(18))

# Per-sale defect probabilities, independent draws (their sum gives ~1.3% quarantined).
P_NULL_CUSTOMER = 0.0025
P_NULL_PRODUCT = 0.0012
P_NULL_STORE = 0.0012
P_UNKNOWN_PRODUCT = 0.0018
P_UNKNOWN_STORE = 0.0010
P_BAD_QUANTITY = 0.0020
P_BAD_PRICE = 0.0020
P_ZERO_PRICE = 0.0005
P_BAD_TS = 0.0010
P_BOUNDARY_TS = 0.0005
P_LATE = 0.005
P_SHUFFLED_KEYS = 0.01
P_PROMO_CODE = 0.01
P_ABSENT_WHEN_NULL = 0.2  # a NULL value is sometimes written as a missing key

# Values of order_ts that no accepted format parses. None = JSON null; _ABSENT = key left out.
_ABSENT = "<absent>"
BAD_ORDER_TS: tuple[str | None, ...] = (
    "",
    "N/A",
    "not a date",
    "2024/03/05 10:11:12",
    "2024-13-01T00:00:00Z",
    "31/02/2024 10:00:00",
    "1709633472",
    "2024-03-05 10:11",
    None,
    _ABSENT,
)
_GARBAGE = (
    "<html><body><h1>502 Bad Gateway</h1></body></html>",
    "<!DOCTYPE html><html><head><title>Service Unavailable</title></head>",
    "sale_id,order_ts,customer_id,product_id,store_id,channel,quantity,unit_price,ingested_at",
    "#### partial upload, retry later ####",
    "{sale_id: SL000000001, quantity: 2}",
    '{"sale_id": "SLX" "quantity": 3}',
    "ERROR 0x7f: connection reset by peer",
    "}{",
    "garbage",
)
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_=+;:!?"))

# Value states of a nullable field.
PRESENT, NULL, ABSENT = 0, 1, 2


@dataclass
class _Sales:
    """Sale records as columns: values plus a state (PRESENT / NULL / ABSENT) per nullable field.

    Kept columnar so a million records are drawn and checked with numpy; only
    the rendering to JSON text is a Python loop.
    """

    sale: np.ndarray  # sale number; sale_id = SL%09d
    ts: np.ndarray  # order instant, epoch seconds (meaningful when ts_bad < 0)
    ts_fmt: np.ndarray  # 0 ISO, 1 dd/mm/yyyy
    ts_bad: np.ndarray  # -1, or index into BAD_ORDER_TS
    cust: np.ndarray  # customer index; customer_id = C%07d of cust + 1
    cust_st: np.ndarray
    prod: np.ndarray  # product code; > N_PRODUCTS is unknown; product_id = P%05d
    prod_st: np.ndarray
    store: np.ndarray  # store code; > N_STORES is unknown; store_id = ST%04d
    store_st: np.ndarray
    chan: np.ndarray
    qty: np.ndarray
    qty_st: np.ndarray
    price: np.ndarray  # cents
    price_st: np.ndarray
    ing: np.ndarray  # ingested_at, epoch seconds
    ing_st: np.ndarray

    def take(self, idx: np.ndarray) -> _Sales:
        return _Sales(**{f.name: getattr(self, f.name)[idx].copy() for f in fields(self)})

    def __len__(self) -> int:
        return len(self.sale)


@dataclass
class _Customers:
    """Customer versions, flat and sorted by (customer, effective): customer c owns
    versions ``start[c] .. start[c] + count[c] - 1``."""

    start: np.ndarray
    count: np.ndarray
    eff: np.ndarray
    owner: np.ndarray

    def version_at(self, cust: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """1-based number of the version valid at ``ts`` (valid_from <= ts < next valid_from)."""
        keys = (self.owner << 32) + self.eff
        return np.searchsorted(keys, (cust << 32) + ts, side="right") - self.start[cust]
