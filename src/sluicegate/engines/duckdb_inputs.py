"""DuckDB input loaders: files → the lines relation or the Parquet relation (stage 2's input).

The lines relation (``Engine.load_lines``) has one row per non-blank line:
``_source_file`` (the path as bound), ``_source_line`` (1-based physical line number,
blank lines included), ``_line`` (the text: a UTF-8 BOM at the very start of a file and
trailing CRs removed), ``_bad_utf8`` (the line held bytes that are not UTF-8; they are
replaced by U+FFFD in ``_line`` and the reader makes the line a ``corrupt_record``).
Lines end at LF only. A line is blank when only spaces, tabs and CRs remain — the same
definition ``run/bind.py`` counts with, independently, from the bytes.

Fast path: ``read_text`` + ``string_split`` + ``unnest``/``generate_subscripts`` (numbers
lines without a window; ``UNNEST … WITH ORDINALITY`` exhausts memory on DuckDB 2.0.1).
``read_text`` refuses a file that is not valid UTF-8 as a whole, so those files (only
those) are split and decoded in Python, line by line, and appended.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import duckdb
import sqlglot
from sqlglot import exp

if TYPE_CHECKING:
    import pyarrow as pa

BOM = b"\xef\xbb\xbf"
Render = Callable[[exp.Expression], str]  # the engine's renderer
BLANK = " \t\r"

_LINES = sqlglot.parse_one(
    # rtrim/trim with a character list cost ~0.5 s per 1M lines; ends_with + a regex
    # anchored at both ends (it stops at the first other byte) cost ~0.05 s.
    "SELECT _source_file, _source_line,"
    "       CASE WHEN ends_with(_l, chr(13)) THEN rtrim(_l, chr(13)) ELSE _l END AS _line,"
    "       FALSE AS _bad_utf8 FROM ("
    "  SELECT filename AS _source_file, CAST(generate_subscripts(s, 1) AS BIGINT) AS _source_line,"
    "         unnest(s) AS _l"
    "  FROM (SELECT filename, string_split(CASE WHEN starts_with(content, chr(65279))"
    "               THEN substr(content, 2) ELSE content END, chr(10)) AS s"
    "        FROM read_text(?))"
    ") WHERE NOT regexp_matches(_l, '^[ \\t\\r]*$')",
    read="duckdb",
)
_NO_LINES = sqlglot.parse_one(
    "SELECT CAST(NULL AS VARCHAR) AS _source_file, CAST(NULL AS BIGINT) AS _source_line, "
    "CAST(NULL AS VARCHAR) AS _line, CAST(NULL AS BOOLEAN) AS _bad_utf8 WHERE FALSE",
    read="duckdb",
)
_PARQUET = sqlglot.parse_one(
    "SELECT * EXCLUDE (filename, file_row_number), filename AS _source_file, "
    "CAST(file_row_number + 1 AS BIGINT) AS _source_line "
    "FROM read_parquet(?, filename = true, file_row_number = true, union_by_name = true)",
    read="duckdb",
)
_NO_PARQUET = sqlglot.parse_one(
    "SELECT CAST(NULL AS VARCHAR) AS _source_file, CAST(NULL AS BIGINT) AS _source_line "
    "WHERE FALSE",
    read="duckdb",
)
_SLOW_VIEW = "_sg_slow_lines"
#: A line longer than this is one corrupt record with a truncated ``_raw`` (its first
#: ``KEEP_BYTES``), read in Python without holding it: a 200 MB line used to exhaust
#: DuckDB's memory (a JSON parse of the whole line) and end the run.
MAX_LINE_BYTES = 16 << 20
KEEP_BYTES = 4096


def lines_schema() -> pa.Schema:
    """The lines relation as Arrow (the slow path only: pyarrow is imported on first use,
    so a run whose files are all UTF-8 never loads it, ~0.15 s)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("_source_file", pa.string()),
            ("_source_line", pa.int64()),
            ("_line", pa.string()),
            ("_bad_utf8", pa.bool_()),
        ]
    )


def exact_path(path: str) -> str:
    """``path`` as a DuckDB file pattern that matches only itself.

    DuckDB expands ``*``, ``?`` and ``[…]`` in every path it is given, even in a list of
    exact files: ``[_]x.json`` would read ``_x.json`` (a file the binder skipped) instead.
    Each wildcard becomes a one-character class (``[`` → ``[[]``), which matches only the
    character itself; the ``filename`` DuckDB reports is still the real path.
    """
    return "".join(f"[{ch}]" if ch in "[*?" else ch for ch in path)


def create_temp(table: str, query: exp.Expression, kind: str = "TABLE") -> exp.Create:
    """CREATE OR REPLACE TEMPORARY ``kind`` (TABLE or VIEW) ``table`` AS (a copy of) ``query``."""
    return exp.Create(
        this=exp.Table(this=exp.to_identifier(table, quoted=True)),
        kind=kind,
        replace=True,
        expression=query.copy(),
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )


def file_enum(files: Sequence[str]) -> exp.DataType:
    """An ``ENUM`` of the bound paths in byte order: the type of ``_source_file``.

    A path is one of a run's few files but is repeated on every line: as ``VARCHAR`` the
    lines relation and the typed relation copy ~80 bytes per row, and every sort and join
    on the lineage (the dedupe ranking, the typed relation's partition join) compares
    long strings with a shared prefix. An ``ENUM`` holds one small integer per row,
    orders like the path (its values are sorted; UTF-8 byte order is code point order),
    compares equal to the path as text, and is cast to ``VARCHAR`` where a row leaves
    the engine (compile/render.py ``lineage_file``), so no output ever carries it.
    """
    return exp.DataType(
        this=exp.DataType.Type.ENUM,
        expressions=[exp.Literal.string(f) for f in sorted(set(files))],
    )


def _as_file_enum(query: exp.Expression, files: Sequence[str]) -> exp.Expression:
    """``query`` (``_LINES`` or ``_NO_LINES``) with its ``_source_file`` cast to
    :func:`file_enum` where it is first named."""
    typed = query.copy()
    alias = next(
        a for a in typed.find_all(exp.Alias) if a.alias == "_source_file"
    )  # the innermost projection that names the column
    value = alias.this.this if isinstance(alias.this, exp.Cast) else alias.this
    alias.set("this", exp.cast(value.copy(), file_enum(files)))
    return typed


def load_lines(
    con: duckdb.DuckDBPyConnection,
    render: Render,
    files: Sequence[str],
    table: str,
    *,
    cursors: int = 1,
    enum_files: bool = True,
) -> None:
    """Create ``table`` as the lines relation of ``files`` (see the module docstring).

    ``_source_file`` is an ``ENUM`` of the files (:func:`file_enum`) unless ``enum_files``
    is False or a file is read on the slow path.

    ``cursors=1`` makes a TEMP table with one statement. DuckDB splits and numbers a
    file's lines on one thread, so the one statement ran on one core (0.48 wall / 0.48
    CPU s per 1M lines); ``cursors=n`` loads n groups of files at once, each on a cursor
    of its own, into a table of the connection's default catalog (a TEMP table is one
    connection's alone). Only for a default catalog in memory (a run's staging
    database): it would otherwise write the lines into the warehouse file.
    """
    files = list(files)
    if not files:
        con.execute(render(create_temp(table, _NO_LINES)))
        return
    long = [f for f in files if has_long_line(f)]
    if not long:
        drop = exp.Drop(tables=[exp.to_table(table)], kind="TABLE", exists=True)
        for enum in (True, False) if enum_files else (False,):
            lines = _as_file_enum(_LINES, files) if enum else _LINES
            try:
                if cursors > 1 and len(files) > 1:
                    empty = _as_file_enum(_NO_LINES, files) if enum else _NO_LINES
                    _load_lines_in_parallel(con, render, files, table, cursors, lines, empty)
                else:
                    query = create_temp(table, lines)
                    con.execute(render(query), [[exact_path(f) for f in files]])
                return
            except duckdb.ConversionException:
                # read_text named a file otherwise than it was bound: paths as text instead
                if not enum:
                    raise
                con.execute(render(drop))  # a parallel load may have appended some groups
            except duckdb.InvalidInputException as exc:
                if "UTF-8" not in str(exc):
                    raise
                # a parallel load may have appended some groups: the slow path starts over
                con.execute(render(drop))
                break
    good, bad = [], list(long)
    for f in files:
        if f not in long:
            (good if _is_utf8(f) else bad).append(f)
    import pyarrow as pa

    rows = [row for f in bad for row in split_bytes(f)]
    slow = pa.Table.from_pylist(rows, schema=lines_schema())
    con.register(_SLOW_VIEW, slow)
    try:
        slow_select = exp.select("*").from_(exp.to_table(_SLOW_VIEW))
        query = exp.union(_LINES.copy(), slow_select, distinct=False) if good else slow_select
        con.execute(
            render(create_temp(table, query)), [[exact_path(f) for f in good]] if good else []
        )
    finally:
        con.unregister(_SLOW_VIEW)


def _load_lines_in_parallel(
    con: duckdb.DuckDBPyConnection,
    render: Render,
    files: list[str],
    table: str,
    n: int,
    lines: exp.Expression = _LINES,
    empty: exp.Expression = _NO_LINES,
) -> None:
    """The lines of ``files`` appended to a new ``table`` by ``n`` cursors at once, each
    taking a group of files of about equal bytes (DuckDB lets connections of one database
    append to one table concurrently). The first failure is raised once all are done."""
    from concurrent.futures import ThreadPoolExecutor

    size = {f: os.path.getsize(f) for f in files}
    groups: list[list[str]] = [[] for _ in range(min(n, len(files)))]
    sizes = [0] * len(groups)
    for f in sorted(files, key=size.__getitem__, reverse=True):
        i = sizes.index(min(sizes))
        groups[i].append(exact_path(f))
        sizes[i] += size[f]
    # a TEMP relation of that name (an earlier batch's slow path) would hide the new table
    temp = exp.Table(this=exp.to_identifier(table), db=exp.to_identifier("main"),
                     catalog=exp.to_identifier("temp"))  # fmt: skip
    con.execute(render(exp.Drop(tables=[temp], kind="TABLE", exists=True)))
    con.execute(render(exp.Drop(tables=[temp.copy()], kind="VIEW", exists=True)))
    create = exp.Create(
        this=exp.to_table(table), kind="TABLE", replace=True, expression=empty.copy()
    )
    con.execute(render(create))
    append = render(exp.insert(lines.copy(), exp.to_table(table)))

    def one(group: list[str]) -> None:
        cursor = con.cursor()
        try:
            cursor.execute(append, [group])
        finally:
            cursor.close()

    with ThreadPoolExecutor(len(groups)) as pool:
        for future in [pool.submit(one, g) for g in groups]:
            future.result()


def load_line_rows(
    con: duckdb.DuckDBPyConnection, render: Render, rows: pa.Table, table: str
) -> None:
    """Create TEMP ``table`` from rows already shaped like the lines relation (Kafka)."""
    con.register(_SLOW_VIEW, rows)
    try:
        con.execute(render(create_temp(table, exp.select("*").from_(exp.to_table(_SLOW_VIEW)))))
    finally:
        con.unregister(_SLOW_VIEW)


def _is_utf8(path: str) -> bool:
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def split_bytes(path: str, limit: int = MAX_LINE_BYTES) -> list[dict]:
    """The lines relation of one file, in Python, streamed: invalid bytes replaced by U+FFFD
    and flagged; a line over ``limit`` bytes is never held whole (see :func:`too_long`)."""
    rows = []
    with open(path, "rb") as fh:
        n = 0
        while raw := fh.readline(limit + 1):
            n += 1
            if n == 1 and raw.startswith(BOM):
                raw = raw[len(BOM) :]
            if len(raw) > limit and not raw.endswith(b"\n"):
                size = len(raw) + _skip_line(fh)
                rows.append(
                    {"_source_file": path, "_source_line": n, "_line": too_long(raw, size),
                     "_bad_utf8": True}
                )  # fmt: skip
                continue
            raw = raw[:-1] if raw.endswith(b"\n") else raw
            try:
                text, bad = raw.decode("utf-8"), False
            except UnicodeDecodeError:
                text, bad = raw.decode("utf-8", errors="replace"), True
            text = text.rstrip("\r")
            if text.strip(BLANK):
                rows.append(
                    {"_source_file": path, "_source_line": n, "_line": text, "_bad_utf8": bad}
                )
    return rows


def has_long_line(path: str, limit: int = MAX_LINE_BYTES) -> bool:
    """True when a line of ``path`` is longer than ``limit`` bytes, in one pass at disk speed.

    The file is read in ``limit``-sized chunks; a line inside one chunk is shorter than the
    limit, so only a line that crosses a chunk boundary can be too long, and its length is
    the gap between the last newline before the boundary and the first one after it.
    """
    if os.path.getsize(path) <= limit:
        return False
    last_nl = -1  # offset of the last newline seen
    offset = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(limit):
            first = chunk.find(b"\n")
            if first < 0:
                if offset + len(chunk) - last_nl - 1 > limit:
                    return True
            else:
                if offset + first - last_nl - 1 > limit:
                    return True
                last_nl = offset + chunk.rfind(b"\n")
            offset += len(chunk)
    return False  # a last line without LF that crossed a boundary was measured above


def too_long(head: bytes, size: int) -> str:
    """The ``_raw`` of a line over the limit: its first bytes and what was cut, so the
    quarantined record says why without holding hundreds of megabytes."""
    kept = head[:KEEP_BYTES].decode("utf-8", errors="ignore")
    return (
        f"{kept}… [line_too_long: {size:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit; "
        f"the first {len(kept.encode()):,} kept]"
    )


def _skip_line(fh) -> int:  # noqa: ANN001 - a binary file object
    """Read to the end of the current line without holding it; the bytes skipped (not the LF)."""
    skipped = 0
    while part := fh.readline(1 << 20):
        skipped += len(part)
        if part.endswith(b"\n"):
            return skipped - 1
    return skipped


def load_parquet(
    con: duckdb.DuckDBPyConnection,
    render: Render,
    files: Sequence[str],
    table: str,
    *,
    view: bool = False,
) -> bool:
    """Create TEMP ``table`` from Parquet files, by column name, with 1-based row lineage.

    ``view=True`` makes it a TEMP view over the files instead: Parquet is already
    columnar and typed, so the reader's one pass over the view reads the files directly
    (copying them into a table first cost ~0.2 s per 1M rows). Only for files that stay
    in place for the run (not the S3 copies, which are updated): a typed relation that
    computes nothing per row stays a view over this one (run/pipeline.py ``_load_typed``).
    Returns whether ``table`` is a view.
    """
    files = list(files)
    if not files:
        con.execute(render(create_temp(table, _NO_PARQUET)))
        return False
    paths = [exact_path(f) for f in files]
    if not view:
        con.execute(render(create_temp(table, _PARQUET)), [paths])
        return False
    view_def = create_temp(table, _PARQUET, kind="VIEW")
    # a view keeps no parameters: the file list is a literal of the tree
    view_def.find(exp.Placeholder).replace(
        exp.Array(expressions=[exp.Literal.string(p) for p in paths])
    )
    con.execute(render(view_def))
    return True
