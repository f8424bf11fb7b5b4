"""A throwaway PostgreSQL 15 server for tests: ``initdb`` + ``pg_ctl`` in a temp folder.

PostgreSQL refuses to run as root, so when the tests run as root (CI does) every server
command runs as the unprivileged ``postgres`` user through ``runuser`` (the user is created
when missing). The server listens on a free loopback port only (no Unix socket in /tmp,
no TCP on other interfaces), authenticates with passwords (``scram-sha-256``) so a wrong
password is a real error, and :meth:`PostgresServer.stop` kills it and removes its folder
even when the test failed. Used by the ``pg_server`` session fixture (tests/conftest.py)
and meant for any test that needs a real server (serving, an Iceberg catalog).

Example::

    with PostgresServer() as pg:
        url = pg.url()                  # postgresql://sluicegate:…@127.0.0.1:PORT/postgres
        pg.create_database("app")
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BIN = Path(os.environ.get("SLUICEGATE_PG_BIN", "/usr/lib/postgresql/15/bin"))
RUN_AS = "postgres"


def free_port() -> int:
    """A TCP port nobody listens on right now (bound, read back, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", name], check=True)
        return pwd.getpwnam(name)


class PostgresServer:
    """One PostgreSQL server in its own temp folder, on a free loopback port.

    ``user``/``password`` is the superuser the tests connect as; :meth:`kill` (SIGKILL of
    the postmaster) and :meth:`start` again simulate a crash and a recovery.
    """

    def __init__(
        self,
        *,
        user: str = "sluicegate",
        password: str = "sluicegate-test",
        file_size_limit: int | None = None,
    ) -> None:
        if not (BIN / "initdb").exists():
            raise RuntimeError(
                f"PostgreSQL 15 binaries not found in {BIN} "
                "(apt-get install postgresql-15, or set SLUICEGATE_PG_BIN)"
            )
        self.user = user
        self.password = password
        self.host = "127.0.0.1"
        self.port = free_port()
        #: RLIMIT_FSIZE of the server in bytes: a table file growing past it fails with
        #: "File too large", the way a full disk fails a write (PostgreSQL ignores SIGXFSZ).
        self.file_size_limit = file_size_limit
        self._as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="sluicegate-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        if self._as_root:
            pw = _ensure_user(RUN_AS)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self._initdb()

    # -- commands ------------------------------------------------------------------------
    def _cmd(self, *args: str) -> list[str]:
        cmd = [str(BIN / args[0]), *args[1:]]
        return ["runuser", "-u", RUN_AS, "--", *cmd] if self._as_root else cmd

    def _run(
        self, *args: str, timeout: float = 120, limited: bool = False
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            self._cmd(*args),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
            preexec_fn=self._limits if limited and self.file_size_limit else None,
        )

    def _limits(self) -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_size_limit, self.file_size_limit))

    def _initdb(self) -> None:
        pwfile = self.root / "pw"
        pwfile.write_text(self.password)
        if self._as_root:
            pw = pwd.getpwnam(RUN_AS)
            os.chown(pwfile, pw.pw_uid, pw.pw_gid)
        r = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            self.user,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
            # 1 MB WAL segments: a file-size limit (disk-full tests) stays above them
            *(["--wal-segsize=1"] if self.file_size_limit else []),
        )
        pwfile.unlink()
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed: {r.stderr or r.stdout}")

    def start(self) -> PostgresServer:
        """Start (or restart after :meth:`kill`) and wait until it accepts connections."""
        opts = (
            f"-c listen_addresses={self.host} -c port={self.port} "
            f"-c unix_socket_directories='{self.root}' -c fsync=off "
            "-c full_page_writes=off -c max_connections=30 -c shared_buffers=32MB"
        )
        r = self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60",
            "start", limited=True,
        )  # fmt: skip
        if r.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {r.stderr or r.stdout}\n{self.server_log()}")
        return self

    def stop(self) -> None:
        """Stop the server (fast, then kill) — safe to call twice or after a kill."""
        if self.data.exists() and (self.data / "postmaster.pid").exists():
            r = self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop")
            if r.returncode != 0:
                self.kill()

    def kill(self) -> None:
        """SIGKILL the postmaster and its backends: a crash, not a shutdown."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        for target in [pid, *_children(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        # Nobody may reap the orphaned postmaster here (PID 1 of a micro-VM need not), and
        # PostgreSQL takes a zombie's pid for a live server: drop the stale lock file, as a
        # reboot would, so :meth:`start` recovers the crashed cluster.
        if not _alive(pid):
            (self.data / "postmaster.pid").unlink(missing_ok=True)
            for lock in self.root.glob(".s.PGSQL.*"):
                lock.unlink(missing_ok=True)

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def cleanup(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- what tests use ------------------------------------------------------------------
    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        pw = self.password if password is None else password
        return f"postgresql://{self.user}:{pw}@{self.host}:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL with the server's own ``psql`` (an independent reader); returns stdout."""
        env = dict(os.environ, PGPASSWORD=self.password)
        cmd = [
            str(BIN / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-h", self.host, "-p", str(self.port), "-U", self.user, "-d", database, "-c", sql,
        ]  # fmt: skip
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"psql failed: {r.stderr}")
        return r.stdout

    def create_database(self, name: str) -> str:
        """Create database ``name`` (dropped first if it exists); returns its URL."""
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            out.append(int(p.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie reaped by nobody counts as dead
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
