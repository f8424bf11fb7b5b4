"""Engine-free pieces of the seed-helper tests: data, oracle, reconciliation.

Why engine-free: the same edge-case data, the same pure-Python oracle and the
same reconciliation run on DuckDB, Spark (main venv) and Flink (its own venv
without DuckDB or PySpark), so nothing here may import an engine.

Reconciliation returns a list of problems instead of asserting, so the mutant
tests can show that each broken helper produces at least one problem while the
real helpers produce none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

SENTINEL = 9223372036854775807

Row = tuple

# Logical column types; each engine's test runner maps them to its own names.
ORDERS_SCHEMA = (("oid", "int"), ("cid", "int"), ("amt", "int"), ("ots", "bigint"))
CUSTOMERS_SCHEMA = (("cid", "int"), ("cname", "string"))
CDC_SCHEMA = (("cid", "int"), ("eff", "bigint"), ("name", "string"), ("tier", "string"))

REASONS = ("null_customer", "non_positive_amount", "unknown_customer")


@dataclass(frozen=True)
class SeedData:
    """The three source tables of seeds 000 and 003."""

    orders_raw: tuple[Row, ...]
    customers: tuple[Row, ...]
    cust_cdc: tuple[Row, ...]


# Every edge case the seeds name, each on its own order id (see the comments).
EDGE_CASES = SeedData(
    orders_raw=(
        (1, 1, 10, 15),  # good; mid-version -> bronze
        (2, 1, 5, 20),  # good; exactly at a change -> the NEW version (silver)
        (3, 1, 7, 9),  # good; before cid 1's first change -> no version
        (4, 1, 3, 31),  # good; newest version (gold)
        (5, None, 5, 15),  # NULL cid
        (6, None, None, 15),  # NULL cid and NULL amt -> null_customer wins
        (7, 2, None, 15),  # NULL amt
        (8, 2, 0, 15),  # amt = 0
        (9, 2, -4, 15),  # negative amt
        (10, 99, 5, 15),  # unknown customer
        (11, 99, 0, 15),  # unknown customer AND amt 0 -> non_positive_amount wins
        (12, 3, 8, 150),  # cid 3 is duplicated in customers: must appear once
        (13, 3, 1, 200),  # boundary of cid 3 -> second version
        (14, 2, 2, 5),  # exactly at cid 2's first (only) change
        (15, 4, 1, 49),  # one tick before cid 4's first change -> no version
        (16, 1, 2, 29),  # one tick before a change -> still silver
        (17, 4, 1, 10**12),  # far in the future -> current version
        (18, 5, 6, 60),  # in the changelog but not in customers -> unknown_customer
    ),
    customers=(
        (1, "Ann"),
        (2, "Bob"),
        (3, "Cy"),
        (3, "Cy (duplicate row)"),
        (4, "Di"),
        (None, "no key"),  # a NULL key must match nothing
    ),
    cust_cdc=(
        (1, 30, "Ann", "gold"),  # out of order on purpose
        (1, 10, "Ann", "bronze"),
        (1, 20, "Ann", "silver"),
        (2, 5, "Bob", "basic"),
        (3, 100, "Cy", "a"),
        (3, 200, "Cy", "b"),
        (4, 50, "Di", "x"),
        (5, 1, "Ed", "y"),
    ),
)


class Outputs(NamedTuple):
    """What a pipeline produced (or what an oracle expects), as row lists."""

    good: list[Row]  # (oid, cid, amt, ots)
    quarantine: list[Row]  # (oid, reason)
    dim: list[Row]  # (cid, name, tier, valid_from, valid_to, is_current)
    fct: list[Row]  # (oid, cid, amt, tier)


class Helpers(NamedTuple):
    """The four helpers under test; mutants replace one of them."""

    good: Callable[..., str]
    quarantine: Callable[..., str]
    dim: Callable[..., str]
    fct: Callable[..., str]


class Runner(Protocol):
    """The little an engine must offer to run the seed pipeline."""

    def load(self, name: str, schema: Sequence[tuple[str, str]], rows: Iterable[Row]) -> None: ...

    def create_view(self, name: str, sql: str) -> None: ...

    def query(self, sql: str) -> list[Row]: ...


def run_pipeline(
    runner: Runner,
    helpers: Helpers,
    data: SeedData,
    *,
    dialect: str | None = None,
    names: dict[str, str] | None = None,
) -> Outputs:
    """Load ``data``, run the four helpers as the seeds do, read everything back.

    ``names`` maps the logical names (orders_raw, customers, cust_cdc,
    good_orders, dim_customer) to the names used on the engine, to exercise
    qualified names.
    """
    n = {
        "orders_raw": "orders_raw",
        "customers": "customers",
        "cust_cdc": "cust_cdc",
        "good_orders": "good_orders",
        "dim_customer": "dim_customer",
        **(names or {}),
    }
    runner.load(n["orders_raw"], ORDERS_SCHEMA, data.orders_raw)
    runner.load(n["customers"], CUSTOMERS_SCHEMA, data.customers)
    runner.load(n["cust_cdc"], CDC_SCHEMA, data.cust_cdc)
    good_sql = helpers.good(n["orders_raw"], n["customers"], dialect=dialect)
    dim_sql = helpers.dim(n["cust_cdc"], dialect=dialect)
    runner.create_view(n["good_orders"], good_sql)
    runner.create_view(n["dim_customer"], dim_sql)
    return Outputs(
        good=runner.query(good_sql),
        quarantine=runner.query(
            helpers.quarantine(n["orders_raw"], n["customers"], dialect=dialect)
        ),
        dim=runner.query(dim_sql),
        # Seed 000: the mart is built on the good orders only.
        fct=runner.query(helpers.fct(n["good_orders"], n["dim_customer"], dialect=dialect)),
    )


# ---------------------------------------------------------------- the oracle


def oracle(data: SeedData) -> Outputs:
    """The expected outputs, computed row by row in plain Python."""
    known = {cid for cid, _ in data.customers if cid is not None}
    good: list[Row] = []
    quarantine: list[Row] = []
    for oid, cid, amt, ots in data.orders_raw:
        if cid is None:
            quarantine.append((oid, "null_customer"))
        elif amt is None or amt <= 0:
            quarantine.append((oid, "non_positive_amount"))
        elif cid not in known:
            quarantine.append((oid, "unknown_customer"))
        else:
            good.append((oid, cid, amt, ots))

    by_cid: dict[int, list[Row]] = {}
    for change in data.cust_cdc:
        by_cid.setdefault(change[0], []).append(change)
    dim: list[Row] = []
    for cid, changes in by_cid.items():
        changes.sort(key=lambda change: change[1])
        for i, (_, eff, name, tier) in enumerate(changes):
            valid_to = changes[i + 1][1] if i + 1 < len(changes) else SENTINEL
            dim.append((cid, name, tier, eff, valid_to, valid_to == SENTINEL))

    fct: list[Row] = []
    for oid, cid, amt, ots in good:
        effective = [c for c in by_cid.get(cid, []) if c[1] <= ots]
        if effective:
            fct.append((oid, cid, amt, max(effective, key=lambda c: c[1])[3]))
    return Outputs(good, quarantine, dim, fct)


# ---------------------------------------------------------- reconciliation


def _diff(what: str, actual: Iterable[Row], expected: Iterable[Row]) -> list[str]:
    got, want = Counter(map(tuple, actual)), Counter(map(tuple, expected))
    if got == want:
        return []
    extra = sorted((got - want).elements(), key=repr)[:5]
    missing = sorted((want - got).elements(), key=repr)[:5]
    return [f"{what} differs: unexpected {extra}, missing {missing}"]


def completeness_problems(
    raw: Sequence[Row], good: Sequence[Row], quarantine: Sequence[Row]
) -> list[str]:
    """Seed 000's gate: every raw order lands in exactly one place."""
    problems = []
    if len(good) + len(quarantine) != len(raw):
        problems.append(
            f"completeness: good {len(good)} + quarantine {len(quarantine)} != raw {len(raw)}"
        )
    good_oids = [row[0] for row in good]
    quarantine_oids = [row[0] for row in quarantine]
    if both := set(good_oids) & set(quarantine_oids):
        problems.append(f"overlap: oids in both good and quarantine: {sorted(both)}")
    for what, oids in (("good", good_oids), ("quarantine", quarantine_oids)):
        if dupes := sorted(oid for oid, n in Counter(oids).items() if n > 1):
            problems.append(f"{what}: oids multiplied: {dupes}")
    if lost := {row[0] for row in raw} - set(good_oids) - set(quarantine_oids):
        problems.append(f"silent drop: oids in neither output: {sorted(lost)}")
    if bad := sorted({row[1] for row in quarantine if row[1] not in REASONS}, key=repr):
        problems.append(f"quarantine: reasons outside the contract: {bad}")
    return problems


def scd2_shape_problems(dim: Sequence[Row]) -> list[str]:
    """Structural SCD2 checks that hold for any changelog."""
    problems = []
    by_cid: dict[object, list[Row]] = {}
    for row in dim:
        by_cid.setdefault(row[0], []).append(row)
    for cid, versions in sorted(by_cid.items(), key=repr):
        versions.sort(key=lambda v: (v[3], v[4]))
        if sum(1 for v in versions if v[5]) != 1:
            problems.append(
                f"dim: cid {cid} has {sum(1 for v in versions if v[5])} current versions"
            )
        for v in versions:
            if v[5] != (v[4] == SENTINEL):
                problems.append(f"dim: is_current disagrees with valid_to in {v}")
            if not v[3] <= v[4]:
                problems.append(f"dim: empty-backwards interval {v}")
        for before, after in zip(versions, versions[1:], strict=False):
            if before[4] != after[3]:
                problems.append(f"dim: cid {cid} intervals not contiguous: {before} then {after}")
        if versions[-1][4] != SENTINEL:
            problems.append(f"dim: cid {cid} newest version is closed: {versions[-1]}")
    return problems


def reconcile(raw: Sequence[Row], actual: Outputs, expected: Outputs) -> list[str]:
    """Every problem found comparing a pipeline's outputs with the expected ones."""
    problems = completeness_problems(raw, actual.good, actual.quarantine)
    problems += _diff("good_orders", actual.good, expected.good)
    problems += _diff("quarantine", actual.quarantine, expected.quarantine)
    problems += scd2_shape_problems(actual.dim)
    problems += _diff("dim_customer", actual.dim, expected.dim)
    if dupes := sorted(oid for oid, n in Counter(r[0] for r in actual.fct).items() if n > 1):
        problems.append(f"fct: orders matched more than one version: {dupes}")
    problems += _diff("fct_orders", actual.fct, expected.fct)
    return problems
