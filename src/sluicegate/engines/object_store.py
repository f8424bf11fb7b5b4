"""S3 for every client sluicegate drives: one set of settings, three spellings.

A contract's ``object_store:`` section (contract/object_store_spec.py) and the standard
AWS environment variables give one :class:`S3Settings`; each client gets it in its own
words:

* delta-rs (``deltalake``): :meth:`S3Settings.delta_options` (``storage_options``:
  ``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``,
  ``AWS_VIRTUAL_HOSTED_STYLE_REQUEST``, the keys). delta-rs commits a table version with
  a conditional put (``If-None-Match: *``), so two writers of one version cannot
  overwrite each other's commit: no locking provider is needed (docs/lakehouse.md).
* pyarrow (the embedded engine's reads of Delta files and of ``s3://`` sources, the
  binder's hashing): :meth:`S3Settings.arrow_fs`, an ``S3FileSystem``.
* Hadoop's S3A (Spark): :meth:`S3Settings.hadoop_conf`, ``fs.s3a.*`` keys set on the
  session's Hadoop configuration (``s3://`` is read as ``s3a://``).

DuckDB's own ``httpfs`` extension is not used: it is downloaded at run time from
DuckDB's extension site, which a machine without that site cannot reach; pyarrow's S3
client ships in the wheel.

Secrets: the secret key and the session token are registered for redaction
(contract/tokens.py) the moment they are read, whatever their origin, and
:class:`S3Settings` never shows them in its ``repr``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..contract.secret import reveal
from ..contract.tokens import remember_secret
from ..errors import EngineUnavailable

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from ..contract.object_store_spec import ObjectStore

SCHEMES = ("s3://", "s3a://")
DEFAULT_REGION = "us-east-1"


def is_s3(path: str) -> bool:
    """``s3://bucket/key`` or ``s3a://bucket/key``."""
    return str(path).lower().startswith(SCHEMES)


def canonical(uri: str) -> str:
    """``s3a://b/k`` → ``s3://b/k`` (the spelling sluicegate binds and records)."""
    return "s3://" + uri.split("://", 1)[1] if is_s3(uri) else uri


def key_path(uri: str) -> str:
    """``s3://bucket/key`` → ``bucket/key`` (pyarrow's S3 path)."""
    return uri.split("://", 1)[1].rstrip("/")


@dataclass(frozen=True)
class S3Settings:
    """Where the S3 API is and how to sign for it (see the module docstring)."""

    endpoint: str | None = None
    region: str = DEFAULT_REGION
    path_style: bool = False
    allow_http: bool = False
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(
        cls, spec: ObjectStore | None = None, environ: Mapping[str, str] | None = None
    ) -> S3Settings:
        """The contract's ``object_store:`` values, else the AWS environment variables.

        >>> s = S3Settings.resolve(None, {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
        >>> s.path_style, s.allow_http, s.region
        (True, True, 'us-east-1')
        """
        env = os.environ if environ is None else environ

        def pick(value: Any, *names: str) -> Any:
            if value is not None:
                return value
            return next((env[n] for n in names if env.get(n)), None)

        endpoint = pick(spec and spec.endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
        endpoint = endpoint.rstrip("/") if endpoint else None
        path_style = spec.path_style if spec and spec.path_style is not None else bool(endpoint)
        allow_http = (
            spec.allow_http
            if spec and spec.allow_http is not None
            else bool(endpoint and endpoint.startswith("http://"))
        )
        out = cls(
            endpoint=endpoint,
            region=pick(spec and spec.region, "AWS_REGION", "AWS_DEFAULT_REGION") or DEFAULT_REGION,
            path_style=path_style,
            allow_http=allow_http,
            # the driver boundary: a contract credential is a Secret until here
            access_key_id=pick(reveal(spec and spec.access_key_id), "AWS_ACCESS_KEY_ID"),
            secret_access_key=pick(
                reveal(spec and spec.secret_access_key), "AWS_SECRET_ACCESS_KEY"
            ),
            session_token=pick(reveal(spec and spec.session_token), "AWS_SESSION_TOKEN"),
        )
        remember_secret(out.secret_access_key)
        remember_secret(out.session_token)
        return out

    # -- delta-rs -----------------------------------------------------------------------
    def delta_options(self) -> dict[str, str]:
        """delta-rs ``storage_options`` (object_store's ``AWS_*`` configuration keys)."""
        out = {
            "AWS_REGION": self.region,
            "AWS_ALLOW_HTTP": str(self.allow_http).lower(),
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": str(not self.path_style).lower(),
        }
        if self.endpoint:
            out["AWS_ENDPOINT_URL"] = self.endpoint
        for key, value in (
            ("AWS_ACCESS_KEY_ID", self.access_key_id),
            ("AWS_SECRET_ACCESS_KEY", self.secret_access_key),
            ("AWS_SESSION_TOKEN", self.session_token),
        ):
            if value:
                out[key] = value
        return out

    # -- pyarrow --------------------------------------------------------------------------
    def arrow_fs(self) -> pafs.S3FileSystem:
        """A pyarrow ``S3FileSystem`` on these settings (paths are ``bucket/key``)."""
        import pyarrow.fs as pafs

        kwargs: dict[str, Any] = {
            "region": self.region,
            "force_virtual_addressing": not self.path_style,
        }
        if self.endpoint:
            scheme, _, host = self.endpoint.partition("://")
            kwargs["endpoint_override"] = host
            kwargs["scheme"] = scheme
        if self.access_key_id and self.secret_access_key:
            kwargs["access_key"] = self.access_key_id
            kwargs["secret_key"] = self.secret_access_key
            if self.session_token:
                kwargs["session_token"] = self.session_token
        return pafs.S3FileSystem(**kwargs)

    # -- Hadoop S3A (Spark) ---------------------------------------------------------------
    def hadoop_conf(self) -> dict[str, str]:
        """``fs.s3a.*`` settings for Spark's Hadoop configuration."""
        out = {
            "fs.s3a.endpoint.region": self.region,
            "fs.s3a.path.style.access": str(self.path_style).lower(),
            "fs.s3a.connection.ssl.enabled": str(not self.allow_http).lower(),
        }
        if self.endpoint:
            out["fs.s3a.endpoint"] = self.endpoint
        if self.access_key_id and self.secret_access_key:
            out["fs.s3a.access.key"] = self.access_key_id
            out["fs.s3a.secret.key"] = self.secret_access_key
            if self.session_token:
                out["fs.s3a.session.token"] = self.session_token
                out["fs.s3a.aws.credentials.provider"] = (
                    "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
                )
            else:
                out["fs.s3a.aws.credentials.provider"] = (
                    "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
                )
        return out


@contextlib.contextmanager
def unreachable_store(root: str, settings: S3Settings | None) -> Iterator[None]:
    """Opening an ``s3://`` warehouse: a store that does not answer (or refuses the
    credentials) is a one-line error naming the endpoint, not an internal error. The
    clients' messages name endpoints, buckets and keys, never the secret (and it is
    registered for redaction anyway)."""
    if not is_s3(root):
        yield
        return
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - pyarrow OSError, delta-rs and py4j errors
        where = (settings.endpoint if settings else None) or "AWS S3"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise EngineUnavailable(
            f"the object store at {where} did not open the warehouse {root}: {first}",
            hint="check object_store: (endpoint, region, path_style) and the credentials "
            "(${secret:…} tokens or AWS_* variables)",
        ) from None


def apply_to_spark(spark: Any, settings: S3Settings) -> None:
    """Set the ``fs.s3a.*`` keys on a running session's Hadoop configuration (the
    configuration S3A file systems are created from; set before the first S3 access)."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 - py4j: Hadoop conf
    for key, value in settings.hadoop_conf().items():
        conf.set(key, value)
