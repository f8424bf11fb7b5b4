"""The type names a contract may declare: canonical names, aliases, and how to say so.

``coltypes.parse_type`` decides what a name means (through sqlglot); this module is the
vocabulary users see — in the JSON Schema's completion list, in the contract reference,
and in the message for a type that does not exist. A test checks that the schema pattern
accepts exactly the names ``parse_type`` accepts.
"""

from __future__ import annotations

from .suggest import closest

#: Canonical spellings, offered first by editors (DECIMAL(p,s) with its parameters).
TYPE_NAMES: tuple[str, ...] = (
    "BIGINT",
    "INTEGER",
    "SMALLINT",
    "TINYINT",
    "DECIMAL(10,2)",
    "DECIMAL",
    "DOUBLE",
    "VARCHAR",
    "BOOLEAN",
    "DATE",
    "TIMESTAMP",
)

#: Other spellings accepted for each canonical type (case-insensitive, like the names).
ALIASES: dict[str, tuple[str, ...]] = {
    "BIGINT": ("INT8", "LONG"),
    "INTEGER": ("INT", "INT4", "SIGNED"),
    "SMALLINT": ("INT2", "SHORT"),
    "TINYINT": ("INT1",),
    "DECIMAL": ("NUMERIC", "DEC"),
    "DOUBLE": ("FLOAT", "FLOAT4", "FLOAT8", "REAL", "DOUBLE PRECISION"),
    "VARCHAR": ("TEXT", "STRING", "CHAR", "BPCHAR", "NCHAR", "NVARCHAR", "CHARACTER VARYING"),
    "BOOLEAN": ("BOOL", "LOGICAL"),
    "DATE": (),
    "TIMESTAMP": ("DATETIME", "TIMESTAMP_NTZ", "TIMESTAMPNTZ", "TIMESTAMP WITHOUT TIME ZONE"),
}

_DECIMALS = ("DECIMAL", *ALIASES["DECIMAL"])
_STRINGS = ("VARCHAR", *ALIASES["VARCHAR"])


def all_names() -> list[str]:
    """Every accepted bare name (canonical and alias), without parameters."""
    return [n for canonical, aliases in ALIASES.items() for n in (canonical, *aliases)]


def valid_types_text() -> str:
    """One line listing the types and their aliases, for error messages and docs."""
    parts = []
    for canonical, aliases in ALIASES.items():
        shown = "DECIMAL(p,s)" if canonical == "DECIMAL" else canonical
        parts.append(f"{shown} ({', '.join(aliases)})" if aliases else shown)
    return ", ".join(parts)


def unknown_type_message(text: str) -> str:
    """``unknown type 'MONEY'; valid types: …`` with the closest name when one is near."""
    bare = text.split("(", 1)[0].strip()
    guess = closest(bare, all_names())
    hint = f" — did you mean {guess}?" if guess else ""
    return f"unknown type '{text}'{hint}; valid types (case-insensitive): {valid_types_text()}"


def _ci(word: str) -> str:
    out = []
    for c in word:
        if c.isalpha():
            out.append(f"[{c.lower()}{c.upper()}]")
        elif c == " ":
            out.append(" +")
        else:
            out.append(c)
    return "".join(out)


def type_pattern() -> str:
    """An ECMA-262 pattern (no inline flags: editors' regexes lack ``(?i)``) for every
    accepted type text: names in any case, ``(n)`` on strings, ``(p)``/``(p,s)`` on decimals."""
    num = r" *\( *[0-9]+ *\)"
    dec = r" *\( *[0-9]+ *(, *[0-9]+ *)?\)"
    plain = [n for n in all_names() if n not in _DECIMALS and n not in _STRINGS]
    alts = (
        [_ci(n) for n in plain]
        + [f"{_ci(n)}({num})?" for n in _STRINGS]
        + [f"{_ci(n)}({dec})?" for n in _DECIMALS]
    )
    return r"^ *(" + "|".join(alts) + r") *$"
