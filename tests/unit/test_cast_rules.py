"""sluicegate's cast rules (docs/contract-reference.md § Cast rules), run on DuckDB and held
to a reference written here in plain Python from the documented rules — never from the
compiler. Values either cast to what they say or are NULL (a type_mismatch)."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import duckdb
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sluicegate.compile import cast as cast_c
from sluicegate.compile.render import lit, render
from sluicegate.contract.models import ColumnSpec
from sluicegate.errors import ContractError

CON = duckdb.connect()


def cast(text: str | None, spec: ColumnSpec | dict | str):
    if not isinstance(spec, ColumnSpec):
        spec = ColumnSpec.model_validate({"type": spec} if isinstance(spec, str) else spec)
    e = cast_c.cast_text(lit(text), spec, "duckdb")
    return CON.execute("SELECT " + render(e, "duckdb")).fetchone()[0]


# -- the reference, from the documented rules ------------------------------------------------


def ref_integer(text: str, bits: int = 32):
    m = re.fullmatch(r" *([+-]?[0-9]+) *", text)
    if not m:
        return None
    v = int(m.group(1))
    return v if -(2 ** (bits - 1)) <= v < 2 ** (bits - 1) else None


#: The number syntax of the DECIMAL and DOUBLE rules, written independently of cast.py:
#: an exponent of at most four digits (a five-digit one is a mismatch; docs/contract-reference.md)
NUMBER = r" *([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?) *"


def ref_decimal(text: str, precision: int = 10, scale: int = 2):
    m = re.fullmatch(NUMBER, text)
    if not m:
        return None
    try:
        v = Decimal(m.group(1)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        return None
    return v if abs(v) < Decimal(10) ** (precision - scale) else None


def ref_double(text: str, finite: bool = True):
    if not finite and re.fullmatch(r" *[+-]?(?i:nan|inf|infinity) *", text):
        word = text.strip().lower()
        return math.nan if "nan" in word else (-math.inf if word.startswith("-") else math.inf)
    m = re.fullmatch(NUMBER, text)
    if not m:
        return None
    v = float(m.group(1))
    mantissa = re.split(r"[eE]", m.group(1))[0]
    if v == 0.0 and re.search(r"[1-9]", mantissa):
        return None  # underflowed ('1e-400'): a mismatch, like an overflow (docs/security.md)
    return v if math.isfinite(v) else None


# -- literal cases -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, spec, want",
    [
        ("7", "INTEGER", 7),
        (" 7 ", "INTEGER", 7),
        ("+7", "INTEGER", 7),
        ("-0", "INTEGER", 0),
        ("007", "INTEGER", 7),
        ("1.5", "INTEGER", None),  # DuckDB's TRY_CAST says 2
        ("1.0", "INTEGER", None),
        ("1e3", "INTEGER", None),  # DuckDB's TRY_CAST says 1000
        ("1_000", "INTEGER", None),  # DuckDB's TRY_CAST says 1000
        ("0x10", "INTEGER", None),
        ("\t7", "INTEGER", None),  # only spaces are ignored
        ("7\n", "INTEGER", None),  # Java's $ would match before a final newline
        ("", "INTEGER", None),
        ("2147483648", "INTEGER", None),
        ("2147483648", "BIGINT", 2147483648),
        ("128", "TINYINT", None),
        ("2.345", "DECIMAL(10,2)", Decimal("2.35")),  # half-up
        ("-2.345", "DECIMAL(10,2)", Decimal("-2.35")),  # half away from zero
        ("1e2", "DECIMAL(10,2)", Decimal("100.00")),
        (".5", "DECIMAL(10,2)", Decimal("0.50")),
        ("5.", "DECIMAL(10,2)", Decimal("5.00")),
        ("1,50", "DECIMAL(10,2)", None),
        ("100000000", "DECIMAL(10,2)", None),  # does not fit the precision
        ("NaN", "DECIMAL(10,2)", None),
        ("1e3", "DOUBLE", 1000.0),
        ("1e400", "DOUBLE", None),  # overflow is not finite
        ("1e-400", "DOUBLE", None),  # underflow is not 0.0: a type_mismatch too
        ("-2.5e-999", "DOUBLE", None),
        ("0e-999", "DOUBLE", 0.0),  # a zero mantissa is a true zero
        ("NaN", "DOUBLE", None),
        ("Infinity", "DOUBLE", None),
        ("true", "BOOLEAN", True),
        (" FALSE ", "BOOLEAN", False),
        ("1", "BOOLEAN", None),
        ("yes", "BOOLEAN", None),
        ("anything", "VARCHAR", "anything"),
        (" kept as is ", "VARCHAR", " kept as is "),
        ("2024-03-05", "DATE", dt.date(2024, 3, 5)),
        ("2024-3-5", "DATE", None),
        ("2024-02-30", "DATE", None),
        ("0000-01-01", "DATE", None),  # year 0 does not exist
        ("2024-03-05T10:11:12Z", "TIMESTAMP", dt.datetime(2024, 3, 5, 10, 11, 12)),
        ("2024-03-05 10:11:12.5", "TIMESTAMP", dt.datetime(2024, 3, 5, 10, 11, 12, 500000)),
        ("2024-03-05T10:11:12.123456Z", "TIMESTAMP", dt.datetime(2024, 3, 5, 10, 11, 12, 123456)),
        ("2024-03-05T10:11:12.1234567Z", "TIMESTAMP", None),  # more than microseconds
        ("2024-03-05T10:11:12+02:00", "TIMESTAMP", None),  # offsets are not dropped silently
        ("2024-03-05 24:00:00", "TIMESTAMP", None),
        (" 2024-03-05 10:11:12 ", "TIMESTAMP", dt.datetime(2024, 3, 5, 10, 11, 12)),
    ],
)
def test_literal_cases(text, spec, want):
    assert cast(text, spec) == want


def test_null_text_is_null_for_every_type():
    for t in ("INTEGER", "DECIMAL(10,2)", "DOUBLE", "BOOLEAN", "DATE", "TIMESTAMP", "VARCHAR"):
        assert cast(None, t) is None


def test_non_finite_only_when_the_column_says_so():
    spec = {"type": "DOUBLE", "finite": False}
    assert math.isnan(cast("NaN", spec)) and math.isnan(cast(" -nan", spec))
    assert cast("Infinity", spec) == math.inf and cast("inf", spec) == math.inf
    assert cast("-Infinity", spec) == -math.inf and cast("+INF", spec) == math.inf
    assert cast("1.5", spec) == 1.5
    assert cast("nanx", spec) is None


def test_formats_are_tried_in_order_with_fixed_widths():
    dm = {"type": "TIMESTAMP", "formats": ["%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S"]}
    assert cast("05/03/2024 10:11:12", dm) == dt.datetime(2024, 3, 5, 10, 11, 12)  # d/m first
    assert cast("03/25/2024 10:11:12", dm) == dt.datetime(2024, 3, 25, 10, 11, 12)  # then m/d
    assert cast("5/3/2024 10:11:12", dm) is None  # one-digit fields never match %d, %m
    assert cast("31/02/2024 10:00:00", dm) is None  # not a real date in either order


# -- properties against the reference ------------------------------------------------------

NUMBERISH = st.text(alphabet=" +-0123456789.eE_x\t", max_size=14)


@settings(max_examples=300, deadline=None)
@given(NUMBERISH)
def test_integer_rule(text):
    assert cast(text, "INTEGER") == ref_integer(text)


@settings(max_examples=300, deadline=None)
@given(NUMBERISH)
@example("0E40000")  # a five-digit exponent: DuckDB's parser refuses it, Java's reads 0
@example("1E-9999")  # four digits: rounds to 0.00 on both engines
def test_decimal_rule(text):
    assert cast(text, "DECIMAL(10,2)") == ref_decimal(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(NUMBERISH, st.sampled_from(["NaN", " inf", "-Infinity", "nan ", "INF"])))
@example("1E-324")  # below the smallest subnormal: underflows to 0.0, a mismatch
@example("0.0e-5")  # a zero written with an exponent stays 0.0
@example("0E40000")  # a five-digit exponent is a mismatch for DOUBLE too
def test_double_rule(text):
    for finite in (True, False):
        got = cast(text, {"type": "DOUBLE", "finite": finite})
        want = ref_double(text, finite)
        if isinstance(want, float) and math.isnan(want):
            assert got is not None and math.isnan(got)
        else:
            assert got == want


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)),
    st.sampled_from(["%Y-%m-%dT%H:%M:%SZ", "%d/%m/%Y %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f"]),
)
def test_timestamps_round_trip_through_their_format(value, fmt):
    text = value.strftime(fmt.replace("%Y", f"{value.year:04d}"))  # 4-digit years below 1000
    want = value if "%f" in fmt else value.replace(microsecond=0)
    assert cast(text, {"type": "TIMESTAMP", "formats": [fmt]}) == want


# -- portable formats ---------------------------------------------------------------------


def test_format_regex_and_java_pattern():
    assert cast_c.java_pattern("%Y-%m-%dT%H:%M:%SZ") == "yyyy-MM-dd'T'HH:mm:ss'Z'"
    assert cast_c.java_pattern("%d/%m/%Y %H:%M:%S.%f") == "dd/MM/yyyy HH:mm:ss.SSSSSS"
    rx = cast_c.format_regex("%d/%m/%Y")
    assert re.fullmatch(rx.removeprefix("^").removesuffix(r"\z"), "05/03/2024")
    assert not re.fullmatch(rx.removeprefix("^").removesuffix(r"\z"), "5/3/2024")


@pytest.mark.parametrize("fmt", ["%b %d %Y", "%y-%m-%d", "%Y-%m-%d %z", "%Y-%j", "%s", "%Y%"])
def test_non_portable_directives_are_contract_errors(fmt, tmp_path):
    with pytest.raises(ValueError, match="not supported|lone %"):
        ColumnSpec(type="TIMESTAMP", formats=[fmt])
    doc = {
        "name": "f",
        "source": {"path": "d", "columns": {"t": {"type": "TIMESTAMP", "formats": [fmt]}}},
        "outputs": {"warehouse": "w", "clean": "c", "quarantine": "q"},
    }
    (tmp_path / "c.yml").write_text(json.dumps(doc))
    from sluicegate.compile.contract_check import load_contract

    with pytest.raises(ContractError, match="source.columns.t"):
        load_contract(tmp_path / "c.yml")


def test_finite_false_only_on_doubles():
    with pytest.raises(ValueError, match="finite"):
        ColumnSpec(type="DECIMAL(10,2)", finite=False)
    assert ColumnSpec(type="DOUBLE", finite=False).finite is False


@pytest.mark.parametrize(
    "opts, needle",
    [
        ({"delimiter": ",,"}, "one character"),
        ({"delimiter": "\n"}, "one character"),
        ({"quote": "''"}, "one character"),
        ({"quote": ";", "delimiter": ";"}, "differ"),
    ],
)
def test_csv_options_are_checked(opts, needle):
    from sluicegate.contract.models import CsvOptions

    with pytest.raises(ValueError, match=needle):
        CsvOptions(**opts)
