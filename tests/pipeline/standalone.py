"""A Spark standalone cluster on 127.0.0.1 from the PySpark install: one master, one worker.

    with standalone_cluster(tmp_path) as cluster:
        ...                     # the JVMs start meanwhile
        cluster.wait_ready()
        ... --master cluster.url ...

The master and the worker start together (the worker retries until the master is up), in JVMs
tuned to start fast like the driver's (:data:`pipeline.session.FAST_JVM`, through
``JAVA_TOOL_OPTIONS``, which the executors the worker starts inherit); the
cluster is ready when the master's JSON status lists the worker ALIVE, waited on with a
deadline. Both always stop on the way out (their process groups: the worker's executors go
too); their logs are in ``<work>/master.log`` and ``<work>/worker.log``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.find_spark_home import _find_spark_home

from pipeline.session import FAST_JVM
from tests.harness import free_port, wait_until

HOST = "127.0.0.1"
ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class Cluster:
    url: str  # spark://127.0.0.1:PORT
    ui: str  # the master's web UI
    work: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Until the worker is registered with the master (or either process exits)."""

        def ready() -> bool:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"the Spark {name} exited ({proc.returncode}):\n"
                                       f"{self.logs()}")
            try:
                status = self.status()
            except (OSError, ValueError):
                return False
            return status.get("status") == "ALIVE" and any(
                w.get("state") == "ALIVE" for w in status.get("workers", []))

        try:
            wait_until(ready, timeout=timeout, interval=0.25,
                       message="the Spark worker to register with the master")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    def status(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=5) as answer:
            status: dict[str, Any] = json.load(answer)
        return status

    def logs(self) -> str:
        return "\n".join(f"--- {name}\n{(self.work / name).read_text(errors='replace')}"
                         for name in ("master.log", "worker.log")
                         if (self.work / name).exists())


def cluster_env() -> dict[str, str]:
    """The environment of the cluster's processes, and of a driver that uses it: loopback
    only, and the executors' Python workers run this interpreter with this checkout."""
    paths = [ROOT, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {**os.environ, "SPARK_HOME": _find_spark_home(), "SPARK_LOCAL_IP": HOST,
            "SPARK_LOCAL_HOSTNAME": "localhost", "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


def _start(stack: ExitStack, args: list[str], log: Path, env: dict[str, str]
           ) -> subprocess.Popen[bytes]:
    spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
    out = stack.enter_context(log.open("wb"))
    proc = subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)
    stack.callback(_stop, proc)
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's group, SIGKILL if it lingers."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass
    try:  # executors the worker started, if any outlived it
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@contextmanager
def standalone_cluster(work: Path, cores: int = 2, memory: str = "2g") -> Iterator[Cluster]:
    """Start a master and a worker (not waiting for them: :meth:`Cluster.wait_ready`)."""
    work.mkdir(parents=True, exist_ok=True)
    # a test's short job: the JVMs' start, not their peak speed, is what it waits for
    env = {**cluster_env(), "JAVA_TOOL_OPTIONS": FAST_JVM}
    port, ui_port = free_port(), free_port()
    cluster = Cluster(f"spark://{HOST}:{port}", f"http://{HOST}:{ui_port}", work)
    with ExitStack() as stack:
        cluster.processes["master"] = _start(
            stack, ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port",
                    str(port), "--webui-port", str(ui_port)], work / "master.log", env)
        cluster.processes["worker"] = _start(
            stack, ["org.apache.spark.deploy.worker.Worker", cluster.url, "--host", HOST,
                    "--port", str(free_port()), "--webui-port", str(free_port()),
                    "--cores", str(cores), "--memory", memory,
                    "--work-dir", str(work / "worker")], work / "worker.log", env)
        yield cluster
