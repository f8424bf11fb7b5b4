#!/usr/bin/env python3
"""Start and stop a one-machine Spark standalone cluster from the PySpark install.

PySpark ships ``bin/spark-class``, which runs Spark's own standalone Master and Worker;
no separate Spark download is needed. This starts one master and one worker (``--workers
N`` for more, each with ``--cores`` and ``--memory`` of its own) on 127.0.0.1, waits
until every worker has registered, and records what it started
(``<dir>/cluster.json``) so ``stop`` — or a test's ``finally`` — ends exactly those
processes (each runs in its own process group, which is killed as a whole).

    python scripts/spark_cluster.py start --dir /tmp/sg-cluster     # prints spark://127.0.0.1:PORT
    python scripts/spark_cluster.py start --dir /tmp/sg-2 --workers 2 --cores 1 --memory 4g
    sluicegate run examples/orders/contract.yml --spark-master spark://127.0.0.1:PORT
    python scripts/spark_cluster.py stop --dir /tmp/sg-cluster

Or from Python: ``with running(folder) as cluster: ... cluster.master_url ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
HOST = "127.0.0.1"


@dataclass
class Cluster:
    """What :func:`start` started: where to connect, and which processes to stop."""

    folder: str
    master_url: str
    master_ui: str
    pids: list[int] = field(default_factory=list)

    def save(self) -> None:
        Path(self.folder, "cluster.json").write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, folder: str | Path) -> Cluster:
        return cls(**json.loads(Path(folder, "cluster.json").read_text()))


def spark_home() -> Path:
    """The PySpark install folder: it holds ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _launch(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stop() kills the JVM and shell
        )


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: the process exited ({proc.returncode}); see {log}")
        time.sleep(0.5)
    raise TimeoutError(f"{log.name}: no '{text}' after {timeout:.0f} s; see {log}")


def start(
    folder: str | Path,
    *,
    cores: int = 1,
    memory: str = "1536m",
    workers: int = 1,
    timeout: float = 180,
) -> Cluster:
    """Start a master and ``workers`` workers (``cores`` and ``memory`` each) on 127.0.0.1;
    return once every worker is registered. Worker logs: ``worker.log``, ``worker-2.log`` …"""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": HOST,
            "SPARK_LOG_DIR": str(folder / "logs"),
            "SPARK_WORKER_DIR": str(folder / "work"),
        }
    )
    port, ui = free_port(), free_port()
    master_url = f"spark://{HOST}:{port}"
    cluster = Cluster(str(folder), master_url, f"http://{HOST}:{ui}")
    master = _launch(
        [MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(ui)],
        folder / "master.log",
        env,
    )
    cluster.pids.append(master.pid)
    cluster.save()
    try:
        _wait_for(folder / "master.log", "I have been elected leader", master, timeout)
        launched = []
        for i in range(1, workers + 1):
            log = folder / ("worker.log" if i == 1 else f"worker-{i}.log")
            worker = _launch(
                [
                    WORKER_CLASS,
                    master_url,
                    "--host",
                    HOST,
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",  # shared: executors get app-<id>/<executor id> folders
                    str(folder / "work"),
                ],
                log,
                env,
            )
            cluster.pids.append(worker.pid)
            cluster.save()
            launched.append((log, worker))
        for log, worker in launched:
            _wait_for(log, "Successfully registered with master", worker, timeout)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def stop(cluster: Cluster, *, grace: float = 15) -> None:
    """End every process the cluster started (its whole process group), then reap it."""
    for pid in cluster.pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for pid in cluster.pids:
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)


def _alive(pid: int) -> bool:
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass  # not our child (stopped from another process): ask the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def alive(cluster: Cluster) -> list[int]:
    """The cluster's processes still running."""
    return [pid for pid in cluster.pids if _alive(pid)]


@contextlib.contextmanager
def running(folder: str | Path, **kwargs) -> Iterator[Cluster]:  # noqa: ANN003
    """A cluster for the block; stopped afterwards, also when the block raises."""
    cluster = start(folder, **kwargs)
    try:
        yield cluster
    finally:
        stop(cluster)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=["start", "stop", "status"])
    p.add_argument("--dir", required=True, help="folder for logs, work dirs and cluster.json")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--cores", type=int, default=1, help="cores of each worker")
    p.add_argument("--memory", default="1536m", help="memory of each worker (executors must fit)")
    a = p.parse_args(argv)
    if a.action == "start":
        if a.workers < 1:
            p.error("--workers must be at least 1")
        cluster = start(a.dir, cores=a.cores, memory=a.memory, workers=a.workers)
        print(cluster.master_url)
        return 0
    cluster = Cluster.load(a.dir)
    if a.action == "stop":
        stop(cluster)
        print("stopped" if not alive(cluster) else f"still running: {alive(cluster)}")
        return 0 if not alive(cluster) else 1
    print(json.dumps({**asdict(cluster), "alive": alive(cluster)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
