"""A real S3 API on loopback for tests: moto's server mode (``moto[server]``, the dev extra).

``python -m moto.server`` is started as a child process on a free 127.0.0.1 port; the
clients under test (delta-rs, pyarrow's S3 client, Hadoop's S3A in Spark) talk HTTP to
it exactly as to any S3 endpoint — path-style addressing, plain HTTP, SigV4-signed
requests with the keys below. moto enforces ``If-None-Match: *`` on PutObject (the
conditional put delta-rs commits with). :meth:`S3Server.stop` terminates it (SIGKILL
after 10 s) even when a test failed. Used by the ``s3_server`` session fixture
(tests/conftest.py).

The keys are test values, but the tests treat them as secrets: they reach sluicegate
only as ``${secret:…}`` tokens (``SLUICEGATE_SECRET_*``) or ``AWS_*`` variables, and
tests/engines/test_s3_duckdb.py checks that no output shows them.

Example::

    with S3Server() as s3:
        s3.create_bucket("lake")
        s3.endpoint                      # http://127.0.0.1:PORT
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

from tests.servers.postgres import free_port

ACCESS_KEY_ID = "sluicegate-test-key-id"
SECRET_ACCESS_KEY = "sluicegate-test-secret-Xq7pV2mK9w"
REGION = "us-east-1"


class S3Server:
    """One moto S3 server in a child process, on a free loopback port."""

    def __init__(self) -> None:
        self.host = "127.0.0.1"
        self.port = free_port()
        self.endpoint = f"http://{self.host}:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> S3Server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto server exited with code {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2):
                    return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"moto server did not answer on {self.endpoint} in {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test helpers (boto3 comes with moto) ---------------------------------------------
    def client(self):  # noqa: ANN201 - botocore client
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
            region_name=REGION,
        )

    def create_bucket(self, name: str) -> None:
        with contextlib.suppress(Exception):  # already there: shared across tests
            self.client().create_bucket(Bucket=name)

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=data)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        out: list[str] = []
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        for page in pages:
            out += [o["Key"] for o in page.get("Contents", [])]
        return sorted(out)

    def storage_options(self) -> dict[str, str]:
        """delta-rs options for a reader sluicegate did not configure (the tests' own)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
            "AWS_ALLOW_HTTP": "true",
        }

    def env(self) -> dict[str, str]:
        """The secrets a contract's ``${secret:s3/…}`` tokens resolve to."""
        return {
            "SLUICEGATE_SECRET_S3_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "SLUICEGATE_SECRET_S3_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
        }
