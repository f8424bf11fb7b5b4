"""A resolved ``${secret:scope/key}``: a value that carries its secrecy.

Why a type and not a string: a plain ``str`` goes everywhere a string goes — a run id, a
summary line, a JSON document, ``_source_file`` — and the only defence left is to scrub
every exit by substring replacement, which misses escaped spellings and corrupts text
that merely contains the same characters. A :class:`Secret` prints, reprs and
serialises (pydantic ``mode="json"``) as its *shown* form: the contract text with every
secret token replaced by ``***`` (``postgresql://app:***@db/app``, or just ``***``). Its
plain value is only reached through :meth:`Secret.reveal`, called by the code that hands
it to a driver (``engines/kafka_config.py``, ``engines/postgres.py``).

Which contract keys may hold one is declared in :data:`SECRET_KEYS`; a token anywhere
else is a located contract error (``contract/tokens.py`` walks the tree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic is loaded by the models; redacting a message needs none of it
    from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler

#: Key paths (``*`` = any list index or mapping name) where ``${secret:…}`` is accepted:
#: credentials handed to a driver, and nothing that is stored, shown or used as a name.
SECRET_KEYS: tuple[tuple[str, ...], ...] = (
    ("source", "kafka", "security", "password"),
    ("serve", "*", "password"),
    ("engine", "options", "*"),  # engine settings: object-store keys, Spark credentials
    ("object_store", "access_key_id"),
    ("object_store", "secret_access_key"),
    ("object_store", "session_token"),
)


def secret_key_names() -> str:
    """The allowed keys as written in errors (``serve[].password``)."""
    return ", ".join(
        ".".join(k).replace("serve.*", "serve[]").replace(".*", ".<name>") for k in SECRET_KEYS
    )


def secret_allowed(path: tuple) -> bool:
    """True when ``path`` (keys and list indexes) is one of :data:`SECRET_KEYS`."""
    return any(
        len(path) == len(k) and all(p == "*" or p == str(x) for p, x in zip(k, path, strict=True))
        for k in SECRET_KEYS
    )


@dataclass(frozen=True)
class Secret:
    """A string holding a secret; ``str``/``repr``/JSON give only ``shown``."""

    _value: str = field(repr=False)
    shown: str = "***"

    def reveal(self) -> str:
        """The plain value — only for the driver boundary."""
        return self._value

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:
        return f"Secret({self.shown!r})"

    def __format__(self, spec: str) -> str:
        return format(self.shown, spec)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> Any:  # pickling would carry the value out of the process
        raise TypeError("a Secret cannot be pickled")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            _to_secret,
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: GetJsonSchemaHandler) -> Any:
        """In the contract's JSON Schema a secret key is text (a ``${secret:…}`` token)."""
        from pydantic_core import core_schema

        return handler(core_schema.str_schema())


def _to_secret(v: Any) -> Secret:
    """A literal in an allowed key (no token) is accepted and wrapped too: a password
    written in plain text is still a password once loaded."""
    if isinstance(v, Secret):
        return v
    if isinstance(v, str):
        return Secret(v, "***")
    raise ValueError("expected text (write ${secret:scope/key})")


def reveal(v: Secret | str | None) -> str | None:
    """The plain value of ``v`` whether or not it is a :class:`Secret` (driver boundary)."""
    return v.reveal() if isinstance(v, Secret) else v


_TOKEN = re.compile(r"\$\{\s*secret:[^}]*\}")


def shown_form(template: str) -> str:
    """The contract text with each ``${secret:…}`` token as ``***``."""
    return _TOKEN.sub("***", template)
