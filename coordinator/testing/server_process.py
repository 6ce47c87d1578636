"""Start the real server as a child process (``python -m coordinator serve``) for tests and
benchmarks.

The server binds port 0 and logs its bound port; ``ServerProcess`` reads its stderr (JSON lines)
on a thread, so tests can wait on log events with a deadline and assert on them. With a
``profile`` (``serve --profile``) the profile decides the metrics listener; ``restart`` kills
the server (SIGKILL) and starts it again on the ports it had, with the same data.

The first start in a process writes the bytecode of the server's modules (``compile_server``):
where ``PYTHONDONTWRITEBYTECODE`` is set and nothing compiled them yet (a clean clone), every
server process would otherwise compile ~250 modules again as it starts (about 0.75 s of CPU
more per start, on a suite that starts hundreds). In the suite, the server is forked from a
helper that has imported it instead (``preloaded``), where its environment allows.
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from .preloaded import ROOT, ForkedServer, helper_for

SERVER_PACKAGES = ("coordinator", "storage", "protocol", "assignors", "metrics")
"""The packages of this repository a server imports."""
_compiled = False


def compile_server() -> None:
    """Write the bytecode of the server's modules, where Python looks for it (``__pycache__``,
    or ``PYTHONPYCACHEPREFIX``); those already compiled are left as they are."""
    global _compiled
    for package in SERVER_PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=1)
    _compiled = True


def wait_until(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02,
               message: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


class ServerProcess:
    def __init__(self, log_dir: Path, overrides: Mapping[str, str] | None = None,
                 extra_args: list[str] | None = None, profile: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.log_dir = log_dir
        self.env = dict(env or {})  # added to this process's environment (e.g. LD_PRELOAD)
        self.overrides = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            **({} if profile else {"metrics.listener": ""}),
            "log.dirs": str(log_dir),
            **(overrides or {}),
        }
        self.extra_args = [*(["--profile", profile] if profile else []), *(extra_args or [])]
        self.proc: subprocess.Popen[str] | ForkedServer | None = None
        self.lines: list[str] = []
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._drainer: threading.Thread | None = None
        self.port: int = 0

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 20.0) -> ServerProcess:
        if not _compiled:
            compile_server()
        args = ["serve", *self.extra_args]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        with self._lock:
            self.lines.clear()
            self.events.clear()
        helper = helper_for(env)
        self.proc = ForkedServer(helper, args, str(ROOT), env) if helper is not None else \
            subprocess.Popen([sys.executable, "-m", "coordinator", *args], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._drainer = threading.Thread(target=self._drain, args=(self.proc,), daemon=True)
        self._drainer.start()
        wait_until(lambda: self.event("started") or self._exited(), timeout,
                   message="the server to start")
        if self._exited():
            self._exit_failed()
        ports = self.broker_ports()
        assert ports, "the server started without logging its listener"
        self.port = ports[min(ports)]
        return self

    def wait_loaded(self, timeout: float = 20.0) -> ServerProcess:
        """Wait until every coordinator partition is loaded (until then a group's requests get
        COORDINATOR_LOAD_IN_PROGRESS, which clients retry after a backoff)."""
        wait_until(lambda: self.event("coordinator partitions loaded") or self._exited(), timeout,
                   interval=0.005, message="the coordinator partitions to load")
        if self._exited():
            self._exit_failed()
        return self

    def _exit_failed(self) -> NoReturn:
        """The server exited while starting: fail with its code and all it wrote (read to the
        end first: the drainer may still be reading what it wrote before exiting)."""
        assert self.proc is not None
        self._drained()
        raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.output()}")

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def _drain(self, proc: subprocess.Popen[str] | ForkedServer) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with self._lock:
                self.lines.append(line)
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    pass

    def __enter__(self) -> ServerProcess:
        """Start it and wait until its coordinator partitions are loaded, so a client's first
        request is served (clients that do not retry COORDINATOR_LOAD_IN_PROGRESS, such as
        kafka-python's admin client, would fail on a slow start)."""
        return self.start().wait_loaded() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        """Stop it (SIGTERM), and kill it if it does not stop."""
        try:
            self.stop()
        finally:
            self.kill()

    def stop(self, timeout: float = 15.0) -> int:
        """Stop it (SIGTERM) and wait for it to exit; then every line it wrote is in
        ``events`` (its stderr is read to the end)."""
        if self.proc is None:
            return 0
        exited = self.proc.poll()
        if exited is not None:
            self._drained()
            return exited
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the server did not stop within {timeout} s of SIGTERM; "
                                 f"its stacks and last lines:\n{self.stacks()}") from None
        self._drained()
        return code

    def stacks(self, timeout: float = 5.0, tail: int = 200) -> str:
        """Its stacks (SIGQUIT: every thread's, then every asyncio task's, on its stderr)
        after the last lines it wrote: the last ``tail`` lines of its output."""
        assert self.proc is not None
        with self._lock:
            seen = len(self.lines)
        self.proc.send_signal(signal.SIGQUIT)
        with contextlib.suppress(AssertionError):  # what it wrote by then, dumped or not
            wait_until(lambda: self._tasks_dumped(seen) or self._exited(), timeout, 0.05)
        with self._lock:
            return "".join(self.lines[-tail:])

    def _tasks_dumped(self, seen: int) -> bool:
        with self._lock:
            return any(line.startswith("asyncio tasks (") for line in self.lines[seen:])

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._drained()

    def _drained(self, timeout: float = 10.0) -> None:
        """Wait until the exited server's stderr has been read to its end."""
        if self._drainer is not None and self.proc is not None and self.proc.poll() is not None:
            self._drainer.join(timeout)

    def restart(self, timeout: float = 20.0) -> ServerProcess:
        """Kill the server (SIGKILL: no shutdown, what the page cache holds stays) and start it
        again with the same data and on the same ports, so clients reconnect to it."""
        pinned = self.bound_ports()
        self.kill()
        self.overrides.update(pinned)
        return self.start(timeout)

    def bound_ports(self) -> dict[str, str]:
        """The listener configs with each port 0 replaced by the port the server bound: broker
        1's in ``listeners``, those of brokers 2..N (``cluster.brokers``) in
        ``cluster.listeners``."""
        pinned: dict[str, str] = {}
        brokers = self._bound_listeners()
        bound = {name: port for name, (_, port) in brokers[min(brokers)].items()} if brokers \
            else {}
        listeners = []
        for item in self.overrides.get("listeners", "").split(","):
            name, _, address = item.strip().partition("://")
            host, _, port = address.rpartition(":")
            if port == "0" and name.upper() in bound:
                item = f"{name}://{host}:{bound[name.upper()]}"
            listeners.append(item.strip())
        if any(listeners):
            pinned["listeners"] = ",".join(listeners)
        others = sorted(brokers)[1:]
        if others:
            pinned["cluster.listeners"] = ",".join(
                "|".join(f"{name}://{host}:{port}" for name, (host, port) in
                         brokers[node].items()) for node in others)
        for key, event in (("metrics.listener", "metrics exporter listening"),
                           ("control.listener", "control listening")):
            url = self._url(event)
            if url is not None:
                pinned[key] = url
        return pinned

    def _bound_listeners(self) -> dict[int, dict[str, tuple[str, int]]]:
        """node id -> listener name -> (host, bound port), from the ``listening`` events."""
        brokers: dict[int, dict[str, tuple[str, int]]] = {}
        for event in self.events_of("listening"):
            listeners = brokers.setdefault(_node_of(event), {})
            listeners.setdefault(str(event.get("listener")).upper(),
                                 (str(event.get("host") or ""), int(event["port"])))
        return brokers

    def broker_ports(self) -> dict[int, int]:
        """Each broker's port (that of its first listener, as logged in the ``listening``
        events since the last start), by node id; one broker (node 1) unless
        ``cluster.brokers`` says more."""
        return {node: next(iter(listeners.values()))[1]
                for node, listeners in self._bound_listeners().items()}

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # --- what it said ------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's ``host:port``, comma-separated, node 1 first."""
        ports = self.broker_ports() or {1: self.port}
        return ",".join(f"127.0.0.1:{ports[broker]}" for broker in sorted(ports))

    @property
    def control_url(self) -> str | None:
        """The HTTP control endpoint (``control.listener``), if it is on."""
        return self._url("control listening")

    @property
    def metrics_url(self) -> str | None:
        """The Prometheus exporter (``metrics.listener``), if it is on."""
        return self._url("metrics exporter listening")

    def _url(self, event_name: str) -> str | None:
        found = self.event(event_name)
        if found is None or "port" not in found:
            return None
        host = found.get("host") or "127.0.0.1"
        return f"http://{host}:{found['port']}"

    def events_of(self, name: str | None = None) -> list[dict[str, Any]]:
        """The events logged since the last start (those called ``name`` if given)."""
        with self._lock:
            return [event for event in self.events if name is None or event.get("event") == name]

    def output(self) -> str:
        with self._lock:
            return "".join(self.lines)

    def event(self, name: str, **fields: Any) -> dict[str, Any] | None:
        with self._lock:
            for event in self.events:
                if event.get("event") == name and all(event.get(k) == v for k, v in fields.items()):
                    return event
        return None

    def wait_event(self, name: str, timeout: float = 10.0, **fields: Any) -> dict[str, Any]:
        """:meth:`event`, waiting up to ``timeout`` s for it: the server writes its log to a
        pipe that a thread of this process reads, so a line written before an answer can be
        read after the client has the answer (and some, such as "connection closed", are
        written after what the client sees)."""
        found: dict[str, Any] = wait_until(lambda: self.event(name, **fields), timeout,
                                           message=f"the server to log {name!r} {fields}")
        return found

    def count(self, name: str) -> int:
        with self._lock:
            return sum(1 for event in self.events if event.get("event") == name)


def _node_of(event: Mapping[str, Any]) -> int:
    """The broker a ``listening`` event is of (node 1 where it does not say)."""
    node = event.get("broker", event.get("node_id"))
    return 1 if node is None else int(node)


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_PORT = 10_000


def event_seconds(event: Mapping[str, Any]) -> float:
    """When the server logged ``event``: its ISO ``timestamp`` (UTC, ``...Z``) as seconds since
    the epoch, to compare events of one server's clock."""
    return datetime.fromisoformat(event["timestamp"]).timestamp()


def free_port() -> int:
    """A port free on 127.0.0.1 now, for a process that must be told its port before it binds.

    It is picked at random below the kernel's ephemeral range (where ``bind`` to port 0 and
    outgoing connections take theirs), so the servers and clients of tests running in parallel
    processes cannot take it in the meantime; another ``free_port`` would have to draw the same
    number. Where that range is unknown, the kernel picks one."""
    try:
        low = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    if low - _LOWEST_PORT >= 1_000:
        for _ in range(100):
            port = random.randrange(_LOWEST_PORT, low)
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
