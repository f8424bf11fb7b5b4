"""The hostile corpus (issue 3, item 8): every line of every hostile file lands exactly once,
with the right reason, and the ledger balances — checked line by line against expectations
written here, and against a raw-record count taken by an independent byte-level rule.

The decisions these cases pin are in docs/contract-reference.md (§ JSON edge cases, § CSV,
§ Parquet, § Cast rules). Mutants at the end show the checks can fail.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp

from sluicegate.compile import cast as cast_c
from sluicegate.compile.contract_check import load_contract
from sluicegate.compile.read import ndjson_duckdb as json_duckdb
from sluicegate.compile.read import relation as read_c
from sluicegate.run import bind as bind_s
from sluicegate.run.pipeline import RunResult, run_contract
from tests.conftest import run_cli

pytestmark = pytest.mark.duckdb

COLUMNS: dict[str, Any] = {
    "id": {"type": "BIGINT", "nullable": False},
    "qty": "INTEGER",
    "price": "DECIMAL(10,2)",
    "name": "VARCHAR",
    "ts": {"type": "TIMESTAMP", "formats": ["%Y-%m-%dT%H:%M:%SZ", "%d/%m/%Y %H:%M:%S"]},
    "score": "DOUBLE",
    "never": "VARCHAR",  # declared, present in no record: drift
}
RULES = [{"name": "positive_qty", "expect": "qty IS NULL OR qty > 0"}]
BOM = b"\xef\xbb\xbf"

# -- harness -----------------------------------------------------------------------


def write_contract(
    root: Path,
    *,
    path: str = "data",
    fmt: str = "ndjson",
    columns: dict | None = None,
    rules: list | None = None,
    dedupe: dict | None = None,
    source: dict | None = None,
) -> Path:
    doc: dict[str, Any] = {
        "name": "hostile",
        "source": {"path": path, "format": fmt, "columns": columns or COLUMNS, **(source or {})},
        "rules": RULES if rules is None else rules,
        "gate": {"warn_above": 1.0, "fail_above": 1.0},
        "outputs": {
            "warehouse": "wh.duckdb",
            "clean": "clean",
            "quarantine": "dlq",
            "duplicates": "dups",
        },
    }
    if dedupe:
        doc["dedupe"] = dedupe
    p = root / "contract.yml"
    p.write_text(json.dumps(doc), encoding="utf-8")  # JSON is YAML
    return p


def write_lines(path: Path, lines: list[bytes], *, end: bytes = b"\n", final: bool = True) -> Path:
    """Raw bytes, joined by ``end``; ``final`` adds the terminator after the last line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(end.join(lines) + (end if final and lines else b""))
    return path


def run(root: Path, day: str = "2024-01-01") -> RunResult:
    return run_contract(load_contract(root / "contract.yml", logical_date=day))


def fetch(root: Path, sql: str) -> list[dict]:
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def placement(root: Path) -> dict[tuple[str, int], str]:
    """Where every record went, by (file name, line): clean, a reason, or duplicate.

    Raises if a record appears twice (in one table or across tables).
    """
    out: dict[tuple[str, int], str] = {}
    queries = {
        "clean": "SELECT _source_file f, _source_line n, 'clean' AS w FROM clean",
        "dlq": "SELECT _source_file f, _source_line n, _reason AS w FROM dlq",
        "dups": "SELECT _source_file f, _source_line n, 'duplicate' AS w FROM dups",
    }
    for sql in queries.values():
        for r in fetch(root, sql):
            key = (Path(r["f"]).name, int(r["n"]))
            assert key not in out, f"{key} landed twice: {out[key]} and {r['w']}"
            out[key] = r["w"]
    return out


def raw_records(files: list[Path]) -> int:
    """Independent oracle of the raw count: LF lines, file BOM dropped, not only spaces/tabs/CRs."""
    n = 0
    for f in files:
        data = f.read_bytes()
        if data.startswith(BOM):
            data = data[3:]
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        n += sum(1 for ln in lines if ln.strip(b" \t\r"))
    return n


def check_ledger(result: RunResult, expected_records: int) -> None:
    led = result.metrics["ledger"]
    assert result.status != "ledger_violation", result.metrics.get("error")
    assert led["balanced"], led
    assert led["raw"] == expected_records
    assert led["raw"] == led["clean"] + led["quarantined"] + led["duplicates"]


def by_line(root: Path, table: str, file: str) -> dict[int, dict]:
    rows = fetch(root, f"SELECT * FROM {table}")
    return {int(r["_source_line"]): r for r in rows if Path(r["_source_file"]).name == file}


# -- the NDJSON corpus: one line per hostile case ------------------------------------

ISO = b'"2024-03-05T10:11:12Z"'
CASES: list[tuple[bytes, str]] = [
    # (line bytes, where it must land)
    (
        BOM + b'{"id":1,"qty":2,"price":1.5,"name":"a","ts":' + ISO + b',"score":1.5}',
        "clean",
    ),  # a BOM at the start of the file is not part of the record
    (b'{"id":2,"qty":1}\r', "clean"),  # CRLF: the CR is part of the line end
    (b'{"id":3,"qty":', "corrupt_record"),  # truncated JSON
    (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "corrupt_record"),  # garbage
    (b'[{"id":5}]', "corrupt_record"),  # an array, not an object
    (b"42", "corrupt_record"),  # a scalar
    (b"   \r", "blank"),  # blank: not a record
    (b'{"id":"8","qty":"3","price":"2.50","score":"1e3"}', "clean"),  # numbers as strings
    (b'{"id":9,"qty":"three"}', "type_mismatch"),  # a string where a number belongs
    (b'{"id":10,"name":{"first":"x"}}', "type_mismatch"),  # an object where a scalar belongs
    (b'{"id":11,"qty":[1,2]}', "type_mismatch"),  # an array where a scalar belongs
    (b'{"id":12,"ts":"05/03/2024 10:11:12"}', "clean"),  # the second timestamp format
    (b'{"id":13,"ts":"2024-13-01T00:00:00Z"}', "type_mismatch"),  # month 13
    (b'{"id":14,"ts":"5/3/2024 10:11:12"}', "type_mismatch"),  # one-digit day and month
    (b'{"id":15,"promo":"X","extra":{"a":1}}', "clean"),  # undeclared fields: rescued, clean
    (b'{"qty":1}', "missing_required"),  # id absent
    (b'{"id":null}', "missing_required"),  # id null
    (b'{"id":18,"score":"NaN"}', "type_mismatch"),  # non-finite (finite by default)
    (b'{"id":19,"score":NaN}', "type_mismatch"),  # the bare token Python writes
    (b'{"id":20,"score":nan}', "corrupt_record"),  # other spellings are not JSON
    (b'{"id":21,}', "corrupt_record"),  # trailing comma
    (b"{'id':22}", "corrupt_record"),  # single quotes
    (b'{"id":23,"id":24}', "corrupt_record"),  # duplicate key: neither value may win
    (b'{"id":24} x', "corrupt_record"),  # trailing garbage after the object
    (b'{"id":25}{"id":26}', "corrupt_record"),  # two objects on one line
    (b'{"id":26,"price":2.345}', "clean"),  # decimal: half-up to the scale -> 2.35
    (b'{"id":27,"qty":1.0}', "type_mismatch"),  # a fraction is never an integer
    (b'{"id":28,"qty":"1e3"}', "type_mismatch"),  # nor an exponent
    (b'{"id":29,"qty":99999999999}', "type_mismatch"),  # overflow
    (b'{"id":30,"qty":" 7 "}', "clean"),  # spaces around a number are ignored
    (b'{"id":31,"qty":"\\t7"}', "type_mismatch"),  # a tab is not
    (BOM + b'{"id":32}', "corrupt_record"),  # a BOM inside the file is a character
    (b"{}", "missing_required"),  # an empty object
    (b'{"id":34,"qty":-1}', "positive_qty"),  # a user rule
    (b'{"id":35,"ts":"2024-03-05T10:11:12+02:00"}', "type_mismatch"),  # an offset
    (b'{"id":36,"price":"1,50"}', "type_mismatch"),  # a decimal comma
    (b'{"id":37,"qty":true}', "type_mismatch"),  # a boolean where a number belongs
    (b'{"id":38,"name":123}', "clean"),  # a number where a string belongs: its text
    (b'{"id":039}', "corrupt_record"),  # JSON forbids leading zeros
    (b'{"id":"0x10"}', "type_mismatch"),  # hex is not an integer
    (b'{"id":41,"score":Infinity}', "type_mismatch"),
    (b'{"id":42,"score":1e400}', "type_mismatch"),  # overflows to infinity
    (b'{"id":43,"name":"{not nested"}', "clean"),  # a string that looks like an object
    (b'{"id":44,"name":"a\tb"}', "corrupt_record"),  # a raw control character in a string
    (b'{"id":45,"name":"caf\\u00e9"}', "clean"),  # escapes decode
    (b'{"id":46,"qty":-1,"score":"x"}', "type_mismatch"),  # priority: built-ins first
    (b'  {"id":47}  ', "clean"),  # whitespace around the object
    (b'{"id":48,"price":1E2}', "clean"),  # exponent notation is fine for a decimal
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunResult]:
    root = tmp_path_factory.mktemp("hostile")
    data = root / "data"
    write_lines(data / "a_cases.json", [line for line, _ in CASES])
    (data / "b_empty.json").write_bytes(b"")
    write_lines(data / "c_blank.json", [b"", b"", b"  ", b"\t\r", b"\r"])
    write_lines(
        data / "d_bad_utf8.json",
        [b'{"id":100}', b'{"id":101,"name":"\xff\xfe"}', b'{"id":102,"name":"ok"}', b"\x80{}"],
    )
    big = b'{"id":200,"name":"' + b"x" * (5 << 20) + b'"}'
    write_lines(data / "e_big.json", [big, b"#" * (5 << 20)])
    (data / "f_no_final_newline.json").write_bytes(b'{"id":300}\n{"id":301}')
    write_lines(data / "g_crlf.json", [b'{"id":400}', b"", b'{"id":401}'], end=b"\r\n")
    (data / "_SUCCESS").write_bytes(b"")  # underscore files are not data
    (data / ".hidden.json").write_bytes(b"garbage\n")  # nor are hidden files
    write_contract(root, rules=RULES)
    return root, run(root)


def expected_corpus() -> dict[tuple[str, int], str]:
    want = {("a_cases.json", i): w for i, (_l, w) in enumerate(CASES, 1) if w != "blank"}
    want |= {("d_bad_utf8.json", 1): "clean", ("d_bad_utf8.json", 2): "corrupt_record"}
    want |= {("d_bad_utf8.json", 3): "clean", ("d_bad_utf8.json", 4): "corrupt_record"}
    want |= {("e_big.json", 1): "clean", ("e_big.json", 2): "corrupt_record"}
    want |= {("f_no_final_newline.json", 1): "clean", ("f_no_final_newline.json", 2): "clean"}
    want |= {("g_crlf.json", 1): "clean", ("g_crlf.json", 3): "clean"}
    return want


def test_every_line_lands_where_the_contract_reference_says(corpus):
    root, result = corpus
    got = placement(root)
    want = expected_corpus()
    wrong = {k: (got.get(k), w) for k, w in want.items() if got.get(k) != w}
    assert not wrong, wrong
    assert set(got) == set(want)  # nothing else, nothing from _SUCCESS or hidden files


def test_ledger_balances_with_an_independent_raw_count(corpus):
    root, result = corpus
    files = sorted(p for p in (root / "data").iterdir() if not p.name.startswith(("_", ".")))
    check_ledger(result, raw_records(files))
    # blank lines are reported apart: line 7 of a_cases, 5 in c_blank, 1 in g_crlf
    assert result.metrics["ledger"]["blank_lines"] == 1 + 5 + 1
    assert result.metrics["ledger"]["corrupt"] == sum(
        1 for w in expected_corpus().values() if w == "corrupt_record"
    )
    manifest = {Path(f["path"]).name: f for f in result.metrics["input"]["files"]}
    assert manifest["b_empty.json"]["records"] == 0
    assert manifest["c_blank.json"] == {**manifest["c_blank.json"], "records": 0, "blank_lines": 5}
    import hashlib

    assert (
        manifest["e_big.json"]["sha256"]
        == hashlib.sha256((root / "data/e_big.json").read_bytes()).hexdigest()
    )


def test_values_of_clean_rows(corpus):
    root, _ = corpus
    rows = by_line(root, "clean", "a_cases.json")
    ts = dt.datetime(2024, 3, 5, 10, 11, 12)
    assert (rows[1]["id"], rows[1]["qty"], rows[1]["price"], rows[1]["ts"]) == (
        1,
        2,
        Decimal("1.50"),
        ts,
    )
    assert rows[12]["ts"] == ts  # both formats, one instant
    assert (rows[8]["id"], rows[8]["qty"], rows[8]["price"], rows[8]["score"]) == (
        8,
        3,
        Decimal("2.50"),
        1000.0,
    )
    assert rows[26]["price"] == Decimal("2.35")
    assert rows[30]["qty"] == 7
    assert rows[38]["name"] == "123"
    assert rows[43]["name"] == "{not nested"
    assert rows[45]["name"] == "café"
    assert rows[48]["price"] == Decimal("100.00")
    big = by_line(root, "clean", "e_big.json")[1]
    assert len(big["name"]) == 5 << 20


def test_quarantine_keeps_raw_text_and_rescued_values(corpus):
    root, _ = corpus
    dlq = by_line(root, "dlq", "a_cases.json")
    assert dlq[3]["_raw"] == '{"id":3,"qty":'
    assert dlq[3]["id"] is None  # a corrupt record has no values
    assert dlq[9]["_raw"] is None  # parseable records keep values, not raw text
    assert json.loads(dlq[9]["_rescued_data"]) == {"qty": "three"}
    assert dlq[9]["id"] == 9  # the other fields are kept
    assert json.loads(dlq[10]["_rescued_data"]) == {"name": {"first": "x"}}
    assert json.loads(dlq[11]["_rescued_data"]) == {"qty": [1, 2]}
    assert json.loads(dlq[13]["_rescued_data"]) == {"ts": "2024-13-01T00:00:00Z"}
    assert json.loads(dlq[29]["_rescued_data"]) == {"qty": 99999999999}
    assert [f["name"] for f in dlq[46]["_failed_rules"]] == ["type_mismatch", "positive_qty"]
    assert dlq[34]["_rescued_data"] is None
    bad = by_line(root, "dlq", "d_bad_utf8.json")
    assert bad[2]["_raw"] == '{"id":101,"name":"\ufffd\ufffd"}'  # replaced, never fatal
    assert bad[4]["_raw"] == "\ufffd{}"
    big = by_line(root, "dlq", "e_big.json")[2]
    assert big["_raw"] == "#" * (5 << 20)


def test_drift_is_reported(corpus):
    _, result = corpus
    drift = {(e["kind"], e["field"]): e["records"] for e in result.metrics["drift"]}
    assert drift[("undeclared_field", "promo")] == 1
    assert drift[("undeclared_field", "extra")] == 1
    assert ("declared_field_absent", "never") in drift
    assert ("declared_field_absent", "id") not in drift
    mismatched = {f for (k, f) in drift if k == "type_mismatch"}
    assert mismatched == {"qty", "name", "ts", "score", "price", "id"}


def test_a_field_whose_values_never_cast_is_drift(tmp_path):
    write_lines(
        tmp_path / "data" / "x.json", [b'{"id":1,"qty":"a"}', b'{"id":2,"qty":"b"}', b'{"id":3}']
    )
    write_contract(tmp_path, rules=[])
    r = run(tmp_path)
    check_ledger(r, 3)
    drift = {(e["kind"], e["field"]): e["records"] for e in r.metrics["drift"]}
    assert drift[("field_never_casts", "qty")] == 2
    assert ("type_mismatch", "qty") not in drift
    assert ("declared_field_absent", "price") in drift


def test_an_only_empty_input_balances_at_zero(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "empty.json").write_bytes(b"")
    write_contract(tmp_path)
    r = run(tmp_path)
    check_ledger(r, 0)
    assert placement(tmp_path) == {}


# -- CSV -----------------------------------------------------------------------------

CSV_COLUMNS = {
    "id": {"type": "BIGINT", "nullable": False},
    "name": "VARCHAR",
    "amt": "DECIMAL(10,2)",
}


def test_csv_corpus(tmp_path):
    data = tmp_path / "data"
    write_lines(
        data / "a.csv",
        [
            BOM + b"id, name ,amt,extra",  # header: names trimmed; extra is undeclared
            b'1,"Smith, J",1.50,x',  # a quoted delimiter
            b'2,"say ""hi""",,',  # doubled quotes; empty -> NULL
            b"",  # blank
            b'3,bad"quote,1,y',  # a quote inside an unquoted field
            b'4,"",2',  # too few fields
            b"5,x,abc,q",  # amt does not cast
            b"6,x,1,q,extra-field",  # too many fields
            b',"no id",1,q',  # missing required
            b'7,"unterminated,1,q',  # an unbalanced quote
            b"8,\xff,1,q",  # invalid UTF-8
        ],
        end=b"\r\n",
    )
    write_lines(data / "b.csv", [b"amt,id", b"3,9"])  # another column order, name absent
    write_lines(data / "c.csv", [b"id,id,amt", b"1,2,3"])  # a header repeating a name
    write_lines(data / "d.csv", [b"id,name,amt"])  # header only
    write_contract(tmp_path, fmt="csv", columns=CSV_COLUMNS, rules=[])
    r = run(tmp_path)
    got = placement(tmp_path)
    want = {
        ("a.csv", 2): "clean",
        ("a.csv", 3): "clean",
        ("a.csv", 5): "corrupt_record",
        ("a.csv", 6): "corrupt_record",
        ("a.csv", 7): "type_mismatch",
        ("a.csv", 8): "corrupt_record",
        ("a.csv", 9): "missing_required",
        ("a.csv", 10): "corrupt_record",
        ("a.csv", 11): "corrupt_record",
        ("b.csv", 2): "clean",
        ("c.csv", 2): "corrupt_record",
    }
    assert got == want
    files = [data / n for n in ("a.csv", "b.csv", "c.csv", "d.csv")]
    check_ledger(r, raw_records(files) - 4)  # minus one header line per file
    clean = by_line(tmp_path, "clean", "a.csv")
    assert (clean[2]["name"], clean[2]["amt"]) == ("Smith, J", Decimal("1.50"))
    assert (clean[3]["name"], clean[3]["amt"]) == ('say "hi"', None)
    assert by_line(tmp_path, "clean", "b.csv")[2] | {} == {
        **by_line(tmp_path, "clean", "b.csv")[2],
        "id": 9,
        "name": None,
        "amt": Decimal("3.00"),
    }
    dlq = by_line(tmp_path, "dlq", "a.csv")
    assert json.loads(dlq[7]["_rescued_data"]) == {"extra": "q", "amt": "abc"}
    assert dlq[11]["_raw"] == "8,\ufffd,1,q"
    drift = {(e["kind"], e["field"]) for e in r.metrics["drift"]}
    assert ("undeclared_field", "extra") in drift


def test_csv_without_header_and_other_dialect(tmp_path):
    write_lines(tmp_path / "data" / "x.txt", [b"1;'a;b'", b"2;x;y", b"3", b"4;'it''s'"])
    write_contract(
        tmp_path,
        fmt="csv",
        columns={"id": "BIGINT", "name": "VARCHAR"},
        rules=[],
        source={"csv": {"header": False, "delimiter": ";", "quote": "'"}},
    )
    r = run(tmp_path)
    assert placement(tmp_path) == {
        ("x.txt", 1): "clean",
        ("x.txt", 2): "corrupt_record",
        ("x.txt", 3): "corrupt_record",
        ("x.txt", 4): "clean",
    }
    check_ledger(r, 4)
    clean = by_line(tmp_path, "clean", "x.txt")
    assert clean[1]["name"] == "a;b" and clean[4]["name"] == "it's"


# -- Parquet -----------------------------------------------------------------------------


def test_parquet_typed_values_follow_the_same_rules(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    utc = dt.UTC
    t1 = pa.table(
        {
            "id": pa.array([1, 2, 3, 4, None], pa.int64()),
            "qty": pa.array(["5", "x", None, " 6 ", "1"], pa.string()),  # text rules
            "price": pa.array([1.005, 2.5, 3.0, float("nan"), 1.0], pa.float64()),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, 12, tzinfo=utc)] * 5, pa.timestamp("us", tz="UTC")
            ),
            "name": pa.array([{"a": 1}, None, None, None, None], pa.struct([("a", pa.int64())])),
            "promo": pa.array(["P", None, None, None, None], pa.string()),
        }
    )
    pq.write_table(t1, data / "a.parquet")
    t2 = pa.table({"id": pa.array([9999999999], pa.int64()), "qty": pa.array([7], pa.int64())})
    pq.write_table(t2, data / "b.parquet")
    pq.write_table(t2.slice(0, 0), data / "c.parquet")  # an empty file
    cols = {
        "id": {"type": "INTEGER", "nullable": False},
        "qty": "INTEGER",
        "price": "DECIMAL(10,2)",
        "ts": "TIMESTAMP",
        "name": "VARCHAR",
        "never": "VARCHAR",
    }
    write_contract(tmp_path, fmt="parquet", columns=cols, rules=[])
    r = run(tmp_path)
    assert placement(tmp_path) == {
        ("a.parquet", 1): "type_mismatch",  # a struct where a scalar belongs
        ("a.parquet", 2): "type_mismatch",  # 'x' is not an integer
        ("a.parquet", 3): "clean",
        ("a.parquet", 4): "type_mismatch",  # NaN is not a decimal
        ("a.parquet", 5): "missing_required",
        ("b.parquet", 1): "type_mismatch",  # 9999999999 does not fit INTEGER
    }
    check_ledger(r, 6)
    clean = by_line(tmp_path, "clean", "a.parquet")[3]
    assert clean["price"] == Decimal("3.00") and clean["ts"] == dt.datetime(2024, 1, 1, 12)
    dlq = by_line(tmp_path, "dlq", "a.parquet")
    assert json.loads(dlq[1]["_rescued_data"]) == {"name": {"a": 1}, "promo": "P"}
    assert dlq[1]["qty"] == 5 and dlq[1]["price"] == Decimal("1.01")  # half-up from '1.005'
    drift = {(e["kind"], e["field"]) for e in r.metrics["drift"]}
    assert ("declared_field_absent", "never") in drift
    assert ("undeclared_field", "promo") in drift


def test_parquet_columns_of_the_declared_type_are_taken_as_they_are(tmp_path):
    """A column already of its declared type skips the cast (parquet.same_type); one of a
    wider type still goes through it: a BIGINT beyond INTEGER is a type_mismatch."""
    data = tmp_path / "data"
    data.mkdir()
    ts = dt.datetime(2024, 3, 1, 8, 30, 15, 123456)
    table = pa.table(
        {
            "id": pa.array([1, 2, 3, None], pa.int32()),
            "qty": pa.array([5, None, 9999999999, 1], pa.int64()),
            "price": pa.array([Decimal("1.25"), None, Decimal("0.00"), None], pa.decimal128(10, 2)),
            "ts": pa.array([ts, None, ts, ts], pa.timestamp("us")),
            "day": pa.array([dt.date(2024, 3, 1), None, None, None], pa.date32()),
            "name": pa.array(["a", None, "", "d"], pa.string()),
            "score": pa.array([0.5, None, None, None, None][:4], pa.float64()),
        }
    )
    pq.write_table(table, data / "a.parquet")
    nan = table.slice(0, 1).set_column(6, "score", pa.array([float("nan")], pa.float64()))
    pq.write_table(nan, data / "b.parquet")
    cols = {
        "id": {"type": "INTEGER", "nullable": False},
        "qty": "INTEGER",
        "price": "DECIMAL(10,2)",
        "ts": "TIMESTAMP",
        "day": "DATE",
        "name": "VARCHAR",
        "score": "DOUBLE",
    }
    write_contract(tmp_path, fmt="parquet", columns=cols, rules=[])
    r = run(tmp_path)
    assert placement(tmp_path) == {
        ("a.parquet", 1): "clean",
        ("a.parquet", 2): "clean",  # NULLs of typed columns are values, not mismatches
        ("a.parquet", 3): "type_mismatch",  # 9999999999 (BIGINT) does not fit INTEGER
        ("a.parquet", 4): "missing_required",
        ("b.parquet", 1): "type_mismatch",  # a DOUBLE NaN still meets `finite`
    }
    check_ledger(r, 5)
    clean = by_line(tmp_path, "clean", "a.parquet")
    assert clean[1] == {
        **clean[1],
        "id": 1,
        "qty": 5,
        "price": Decimal("1.25"),
        "ts": ts,
        "day": dt.date(2024, 3, 1),
        "name": "a",
    }
    assert [clean[2][c] for c in ("qty", "price", "ts", "day", "name")] == [None] * 5
    dlq = by_line(tmp_path, "dlq", "a.parquet")
    assert json.loads(dlq[3]["_rescued_data"]) == {"qty": 9999999999}
    assert dlq[3]["price"] == Decimal("0.00") and dlq[3]["name"] == ""


# -- paths and partitions -----------------------------------------------------------------


def test_hive_partitions_globs_and_undeclared_folders(tmp_path):
    for month, region in (("2024-01", "eu"), ("2024-02", "us")):
        write_lines(
            tmp_path / "feed" / f"month={month}" / f"region={region}" / "part-0.json",
            [b'{"id":1}', b'{"id":2}'],
        )
    write_lines(tmp_path / "feed" / "month=" / "part-0.json", [b'{"id":3}'])  # empty value
    write_lines(tmp_path / "feed" / "month=2024-03" / "skip.txt", [b"not matched by the glob"])
    write_contract(
        tmp_path,
        path="feed/*/**/*.json",
        columns={"id": "BIGINT"},
        rules=[{"name": "has_month", "expect": "month IS NOT NULL"}],
        source={"partitions": ["month"]},
    )
    r = run(tmp_path)
    check_ledger(r, 5)
    rows = fetch(tmp_path, "SELECT month, count(*) AS n FROM clean GROUP BY 1 ORDER BY 1")
    assert rows == [{"month": "2024-01", "n": 2}, {"month": "2024-02", "n": 2}]
    assert [x["_reason"] for x in fetch(tmp_path, "SELECT _reason FROM dlq")] == ["has_month"]
    drift = {(e["kind"], e["field"]) for e in r.metrics["drift"]}
    assert ("undeclared_partition", "region") in drift
    assert "region" not in fetch(tmp_path, "SELECT * FROM clean LIMIT 1")[0]


def test_a_partition_named_in_the_path_is_a_column_without_declaring_it(tmp_path):
    write_lines(tmp_path / "d" / "day=2024-05-01" / "x.json", [b'{"id":1}'])
    write_contract(
        tmp_path,
        path="d/day=*/*.json",
        columns={"id": "BIGINT"},
        rules=[{"name": "day_set", "expect": "day = '2024-05-01'"}],
    )
    check_ledger(run(tmp_path), 1)
    assert fetch(tmp_path, "SELECT day FROM clean") == [{"day": "2024-05-01"}]


def test_contract_errors_name_the_partition_key(tmp_path):
    from sluicegate.errors import ContractError

    write_lines(tmp_path / "data" / "x.json", [b"{}"])
    write_contract(tmp_path, columns={"id": "BIGINT"}, source={"partitions": ["id"]})
    with pytest.raises(ContractError, match="partition 'id' is also a declared column"):
        load_contract(tmp_path / "contract.yml")
    write_contract(
        tmp_path,
        columns={"id": "BIGINT"},
        rules=[{"name": "r", "expect": "montth IS NOT NULL"}],
        source={"partitions": ["month"]},
    )
    with pytest.raises(ContractError, match="month"):  # did you mean: month
        load_contract(tmp_path / "contract.yml")


def test_the_cli_never_shows_a_traceback_on_hostile_input(corpus, tmp_path):
    root, _ = corpus
    out = run_cli("run", str(root / "contract.yml"), "--logical-date", "2024-01-02", "--json")
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["ledger"]["balanced"] is True
    write_contract(tmp_path, path="nowhere")
    missing = run_cli("run", str(tmp_path / "contract.yml"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "does not exist" in missing.stderr


# -- mutants: each breaks one decision and must be caught ------------------------------


def problems(root: Path, want: dict[tuple[str, int], str]) -> dict[int, tuple[Any, str]]:
    """{line: (where it went, where it should have gone)} for every misplaced line."""
    got = placement(root)
    return {k[1]: (got.get(k), w) for k, w in want.items() if got.get(k) != w}


@pytest.fixture
def small(tmp_path: Path) -> Path:
    write_lines(tmp_path / "data" / "a_cases.json", [line for line, _ in CASES])
    write_contract(tmp_path)
    return tmp_path


SMALL_WANT = {("a_cases.json", i): w for i, (_l, w) in enumerate(CASES, 1) if w != "blank"}


def test_unmutated_reader_passes_the_small_corpus(small):
    r = run(small)
    assert r.metrics["ledger"]["balanced"]
    assert problems(small, SMALL_WANT) == {}


def test_mutant_mismatch_lumped_into_corrupt_is_caught(small, monkeypatch):
    real = read_c.finish

    def lumped(*a: Any, **k: Any) -> exp.Select:  # Spark PERMISSIVE's behaviour
        sel = real(*a, **k)
        for e in sel.expressions:
            if e.alias == "_corrupt":
                e.set("this", exp.or_(exp.Not(this=exp.column("_ok")), exp.column("_mismatch")))
        return sel

    monkeypatch.setattr(read_c, "finish", lumped)
    run(small)
    assert problems(small, SMALL_WANT)[9] == ("corrupt_record", "type_mismatch")


def test_mutant_lenient_json_is_caught(small, monkeypatch):
    monkeypatch.setattr(json_duckdb, "lenient_only", lambda line: exp.false())
    run(small)
    bad = problems(small, SMALL_WANT)
    assert bad[21] == ("clean", "corrupt_record")  # the trailing comma
    assert bad[20] == ("type_mismatch", "corrupt_record")  # nan, read as a number


def test_mutant_without_the_integer_guard_is_caught(small, monkeypatch):
    monkeypatch.setattr(cast_c, "INT_RE", ".*")  # TRY_CAST alone rounds 1.0, accepts 1e3
    run(small)
    assert problems(small, SMALL_WANT)[27] == ("clean", "type_mismatch")  # 1.0 rounded to 1


def test_mutant_without_the_timestamp_width_guard_is_caught(small, monkeypatch):
    monkeypatch.setattr(cast_c, "format_regex", lambda fmt: ".*")
    run(small)
    assert problems(small, SMALL_WANT)[14] == ("clean", "type_mismatch")  # 5/3/2024 accepted


def test_mutant_nested_value_taken_as_text_is_caught(small, monkeypatch):
    real = json_duckdb.text_select

    def flat(*a: Any, **k: Any) -> exp.Select:
        sel = real(*a, **k)
        for e in sel.expressions:
            if e.alias.startswith("_s"):  # keep the extracted text even when it is nested
                value = exp.column(f"_t{e.alias[2:]}")
                e.set("this", exp.Case(ifs=[exp.If(this=exp.column("_ok"), true=value)]))
        sel.set(
            "expressions",
            [
                exp.alias_(exp.false(), e.alias_or_name) if e.alias_or_name.startswith("_n") else e
                for e in sel.expressions
            ],
        )
        return sel

    monkeypatch.setattr(json_duckdb, "text_select", flat)
    run(small)
    assert problems(small, SMALL_WANT)[10] == ("clean", "type_mismatch")


def test_mutant_counting_blank_lines_as_records_is_caught(small, monkeypatch):
    monkeypatch.setattr(bind_s, "BLANK_BYTES", b"")  # only empty lines would be blank
    r = run(small)
    assert r.status == "ledger_violation" and "conservation" in r.metrics["error"]


def test_mutant_bom_kept_is_caught(small, monkeypatch):
    from sluicegate.engines import duckdb_inputs

    lines = duckdb_inputs._LINES.sql("duckdb").replace(
        "CASE WHEN STARTS_WITH(content, CHR(65279)) THEN SUBSTRING(content, 2) ELSE content END",
        "content",
    )
    import sqlglot

    monkeypatch.setattr(duckdb_inputs, "_LINES", sqlglot.parse_one(lines, read="duckdb"))
    run(small)
    assert problems(small, SMALL_WANT)[1] == ("corrupt_record", "clean")


def test_invalid_utf8_never_crashes_even_alone(tmp_path):
    write_lines(tmp_path / "data" / "x.json", [b"\xc3\x28", b'{"id":1}'])
    write_contract(tmp_path)
    r = run(tmp_path)
    check_ledger(r, 2)
    assert placement(tmp_path) == {("x.json", 1): "corrupt_record", ("x.json", 2): "clean"}
    assert os.path.exists(tmp_path / "wh.duckdb")
