"""``object_store:``: how to reach the S3 API a ``s3://`` warehouse or source lives on.

Why a section of its own: the endpoint, region and addressing style are facts about *the
store*, shared by the warehouse (``outputs.warehouse: s3://…``) and the source
(``source.path: s3://…``), and the same for both engines (delta-rs and pyarrow on the
embedded engine, Hadoop's S3A on Spark: engines/object_store.py maps them). Every key is
optional: what is not set comes from the standard AWS environment variables
(``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``), and without credentials each client's own default chain applies.

Credentials are never written in the contract: ``access_key_id``, ``secret_access_key``
and ``session_token`` must be a ``${secret:scope/key}`` or ``${env:NAME}`` token
(:func:`clear_text_credentials` refuses anything else before tokens are resolved), and
the resolved values are redacted from every message.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .secret import Secret

CREDENTIAL_KEYS = ("access_key_id", "secret_access_key", "session_token")
_TOKEN_ONLY = re.compile(r"^\$\{\s*(secret:[^}]+|env:[^}]+)\}$")


class ObjectStore(BaseModel):
    """The S3 API settings of a contract (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    #: e.g. ``http://127.0.0.1:9000`` (MinIO, moto, Ceph); None = AWS itself
    endpoint: str | None = Field(default=None, pattern=r"^https?://[^\s/]+/?$")
    region: str | None = Field(default=None, pattern=r"^[a-z0-9-]{2,32}$")
    #: ``http://host:port/bucket/key`` addressing; None = yes when an endpoint is set
    path_style: bool | None = None
    #: plain HTTP to the endpoint; None = yes when the endpoint is ``http://``
    allow_http: bool | None = None
    access_key_id: Secret | None = None  # write ${secret:scope/key} or ${env:NAME}
    secret_access_key: Secret | None = None  # write ${secret:scope/key} or ${env:NAME}
    session_token: Secret | None = None  # write ${secret:scope/key} or ${env:NAME}


def clear_text_credentials(data: Any) -> list[tuple[tuple[str, str], str]]:
    """``(key path, message)`` for each credential written as a value, not a token.

    Called on the parsed YAML *before* tokens are resolved: after resolution a token and
    a value look the same.

    >>> clear_text_credentials({"object_store": {"secret_access_key": "abc"}})[0][0]
    ('object_store', 'secret_access_key')
    >>> clear_text_credentials({"object_store": {"secret_access_key": "${secret:s3/key}"}})
    []
    """
    section = data.get("object_store") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return []
    out = []
    for key in CREDENTIAL_KEYS:
        value = section.get(key)
        if value is not None and not (isinstance(value, str) and _TOKEN_ONLY.match(value)):
            out.append(
                (
                    ("object_store", key),
                    f"a credential is never written in the contract: write "
                    f"${{secret:scope/key}} or ${{env:NAME}} for {key}",
                )
            )
    return out
