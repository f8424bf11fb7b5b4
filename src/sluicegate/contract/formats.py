"""Contract vocabulary for dates and times: the portable strptime directives.

A ``formats:`` list in a contract may use only these directives: each has a fixed-width
regular expression (the cast guard, compile/cast.py), a DuckDB ``strptime`` meaning and
a Java ``DateTimeFormatter`` pattern (Spark's ``try_to_timestamp``) that parse alike.
The contract models validate formats here; the compiler turns them into SQL.
"""

from __future__ import annotations

import re

DEFAULT_TIMESTAMP_FORMATS = [
    "%Y-%m-%dT%H:%M:%S.%fZ",
    "%Y-%m-%dT%H:%M:%SZ",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
]
DEFAULT_DATE_FORMATS = ["%Y-%m-%d"]

# The portable strptime directives: each has a fixed-width regex, a DuckDB strptime meaning
# and a Java DateTimeFormatter pattern (Spark's try_to_timestamp) that parse alike.
YEAR_RE = "([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"  # 0001..9999
DIRECTIVES: dict[str, tuple[str, str]] = {
    "%Y": (YEAR_RE, "yyyy"),
    "%m": ("[0-9]{2}", "MM"),
    "%d": ("[0-9]{2}", "dd"),
    "%H": ("[0-9]{2}", "HH"),
    "%M": ("[0-9]{2}", "mm"),
    "%S": ("[0-9]{2}", "ss"),
    "%f": ("[0-9]{1,6}", "SSSSSS"),
    "%%": ("%", "%"),
}
STRPTIME_TO_JAVA = {d: java for d, (_rx, java) in DIRECTIVES.items()}


class FormatError(ValueError):
    """A strptime format uses a directive sluicegate cannot parse alike on every engine."""


def check_format(fmt: str) -> None:
    """Raise :class:`FormatError` unless every directive of ``fmt`` is portable."""
    for d in re.findall(r"%.", fmt):
        if d not in DIRECTIVES:
            portable = " ".join(sorted(DIRECTIVES))
            raise FormatError(
                f"strptime directive {d} in '{fmt}' is not supported (use {portable})"
            )
    if fmt.endswith("%") and not fmt.endswith("%%"):
        raise FormatError(f"format '{fmt}' ends with a lone %")
