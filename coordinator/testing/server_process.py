"""Start the real server as a child process (``python -m coordinator serve``) for tests and
benchmarks.

The server binds port 0 and logs its bound port; ``ServerProcess`` reads its stderr (JSON lines)
on a thread, so tests can wait on log events with a deadline and assert on them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent


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
                 extra_args: list[str] | None = None) -> None:
        self.log_dir = log_dir
        self.overrides = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "metrics.listener": "",
            "log.dirs": str(log_dir),
            **(overrides or {}),
        }
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.port: int = 0

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 20.0) -> ServerProcess:
        args = [sys.executable, "-m", "coordinator", "serve", *self.extra_args]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with self._lock:
            self.lines.clear()
            self.events.clear()
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
        wait_until(lambda: self.event("started") or self._exited(), timeout,
                   message="the server to start")
        if self._exited():
            raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.output()}")
        listening = self.event("listening")
        assert listening is not None, "the server started without logging its listener"
        self.port = int(listening["port"])
        return self

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with self._lock:
                self.lines.append(line)
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    pass

    def __enter__(self) -> ServerProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        """Stop it (SIGTERM), and kill it if it does not stop."""
        try:
            self.stop()
        finally:
            self.kill()

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # --- what it said ------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def output(self) -> str:
        with self._lock:
            return "".join(self.lines)

    def event(self, name: str, **fields: Any) -> dict[str, Any] | None:
        with self._lock:
            for event in self.events:
                if event.get("event") == name and all(event.get(k) == v for k, v in fields.items()):
                    return event
        return None

    def count(self, name: str) -> int:
        with self._lock:
            return sum(1 for event in self.events if event.get("event") == name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
