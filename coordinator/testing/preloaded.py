"""Servers forked from a process that has already imported the server, for the test suite.

A server process spends most of its start importing itself (about a second of CPU on a small
machine, more than its partitions take to load), and the suite starts hundreds. ``Preloaded``
runs one helper process per test process that imports what ``serve`` imports and then waits;
each start asks it to fork a child, which takes the test's stdio, working directory,
environment and arguments and runs ``coordinator.cli.main`` as ``python -m coordinator``
would. The child is the real server from there on (its own pid, signals, exit code, stderr); it
skips the imports only. ``ServerProcess`` forks from it when :func:`enable` has been called
(tests/conftest.py does) and the server's environment agrees with the helper's in what is read
before a server runs (:data:`READ_AT_START`: ``LD_PRELOAD`` and the like, which only an
``exec`` applies, and the variables modules read as they are imported); otherwise it execs.

The helper and the test process talk over a Unix socket pair: a start sends the arguments as
JSON with the child's stdin, stdout and stderr as file descriptors (``SCM_RIGHTS``); the
helper answers ``{"pid"}``, and ``{"exited", "returncode"}`` when it has reaped the child
(the child is its child, not the test's). When the test process goes, the helper kills the
servers it forked and exits.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

PRELOAD = (
    "coordinator.cli",
    "coordinator.app",
    "coordinator.runtime.loop",
    "coordinator.metadata.meta_properties",
    "coordinator.security.credentials",
)
"""What ``serve`` imports before its partitions load; what a child still imports after the
fork (lazily, as the server needs it) it imports as a fresh server would."""
READ_AT_START = ("PYTHON", "LD_", "GLIBC_", "MALLOC_", "LANG", "LC_", "TZ", "COORDINATOR_",
                 "PROMETHEUS_", "prometheus_", "NO_COLOR", "FORCE_COLOR")
"""Prefixes of the variables read before a server runs: by the interpreter (``PYTHON*``, the
locale, ``TZ``), the dynamic loader and libc, and as modules are imported (ours,
prometheus_client's, structlog's ``NO_COLOR`` and ``FORCE_COLOR``). Everything else a server
reads as it runs, from the environment the child is given."""
_MAX_MESSAGE = 1 << 20
ROOT = Path(__file__).resolve().parents[2]
"""The repository: a server's working directory."""
_MAIN = ROOT / "coordinator" / "__main__.py"
"""``sys.argv[0]`` of ``python -m coordinator``."""
_enabled: dict[str, str] | None = None
"""The environment :func:`enable` was called in (the helper imports the server in it)."""


def enable() -> None:
    """From now on ``ServerProcess`` starts servers by forking them from this process's
    helper (started on the first such start, in this process's environment as it is now: a
    test that changes it later has its servers started afresh)."""
    global _enabled
    _enabled = dict(os.environ)


def helper_for(env: Mapping[str, str]) -> Preloaded | None:
    """The helper to fork a server with environment ``env`` from, if :func:`enable` was called
    and it imported the server with that environment."""
    if _enabled is None:
        return None
    helper = Preloaded.shared(_enabled)
    return helper if helper.imported_with(env) else None


def _read_at_start(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that :data:`READ_AT_START` names."""
    return {key: value for key, value in env.items() if key.startswith(READ_AT_START)}


# --- in the test process ---------------------------------------------------------------------
class Preloaded:
    """The test process's end: ``spawn`` forks a server and returns a ``ForkedServer``."""

    _instance: Preloaded | None = None
    _instance_lock = threading.Lock()

    @classmethod
    def shared(cls, environ: Mapping[str, str]) -> Preloaded:
        """This process's helper, started in ``environ`` on first use (again if it died)."""
        with cls._instance_lock:
            if cls._instance is None or not cls._instance.alive():
                cls._instance = cls(environ)
            return cls._instance

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = self.env = {**(os.environ if environ is None else environ),
                          "PYTHONUNBUFFERED": "1"}
        self._at_start = _read_at_start(env)
        self._helper = subprocess.Popen(
            [sys.executable, "-c", "from coordinator.testing.preloaded import serve_forks; "
                                   f"serve_forks({theirs.fileno()})"],
            cwd=ROOT, env=env, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)
        theirs.close()
        self._socket = ours
        self._lock = threading.Lock()  # one start at a time: its answer is the next message
        self._changed = threading.Condition()
        self._pids: list[int] = []
        self._returncodes: dict[int, int] = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def alive(self) -> bool:
        return self._helper.poll() is None and not self._closed

    def close(self) -> None:
        """Close this end (as the test process's exit does): the helper kills the servers it
        forked and exits."""
        try:
            self._socket.shutdown(socket.SHUT_RDWR)  # wakes the reader thread's recv too
        except OSError:
            pass
        self._socket.close()
        self._helper.wait(10)

    def imported_with(self, env: Mapping[str, str]) -> bool:
        """Whether a server with environment ``env`` would have started and imported itself
        as the helper did: the same values of what is read before the server runs
        (:data:`READ_AT_START`). The child gets ``env`` whole; a server whose differs in those
        (a test's ``LD_PRELOAD``, ``COORDINATOR_SLOW_EVENT_MS``) must be started afresh."""
        return _read_at_start(env) == self._at_start

    def spawn(self, args: Sequence[str], cwd: str, env: Mapping[str, str],
              stdin: int, stdout: int, stderr: int, timeout: float = 20.0) -> int:
        """Fork a server running ``args`` (what follows ``python -m coordinator``); its pid."""
        request = json.dumps({"args": list(args), "cwd": cwd, "env": dict(env)}).encode()
        with self._lock:
            with self._changed:
                known = len(self._pids)
            socket.send_fds(self._socket, [request], [stdin, stdout, stderr])
            with self._changed:
                if not self._changed.wait_for(
                        lambda: len(self._pids) > known or self._closed, timeout):
                    raise RuntimeError("the preloaded server helper did not fork in time")
                if len(self._pids) <= known:
                    raise RuntimeError("the preloaded server helper exited")
                return self._pids[known]

    def returncode(self, pid: int, timeout: float | None = 0.0) -> int | None:
        """``pid``'s exit code once the helper has reaped it (negative: killed by that
        signal), waiting up to ``timeout`` s (None: for ever); None if it still runs."""
        with self._changed:
            self._changed.wait_for(lambda: pid in self._returncodes or self._closed, timeout)
            return self._returncodes.get(pid)

    def _read(self) -> None:
        while True:
            try:
                data = self._socket.recv(_MAX_MESSAGE)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    self._closed = True
                    self._changed.notify_all()
                    return
                message = json.loads(data)
                if "exited" in message:
                    self._returncodes[int(message["exited"])] = int(message["returncode"])
                else:
                    self._pids.append(int(message["pid"]))
                self._changed.notify_all()


class ForkedServer:
    """The part of ``subprocess.Popen`` that ``ServerProcess`` and the tests use, for a server
    forked by the helper: ``pid``, ``stderr``, ``poll``, ``wait``, ``send_signal``, ``kill``,
    ``returncode``."""

    def __init__(self, helper: Preloaded, args: Sequence[str], cwd: str,
                 env: Mapping[str, str]) -> None:
        self._helper = helper
        read_end, write_end = os.pipe()
        with open(os.devnull, "rb") as null_in, open(os.devnull, "wb") as null_out:
            try:
                self.pid = self._helper.spawn(args, cwd, env, null_in.fileno(),
                                              null_out.fileno(), write_end)
            except BaseException:
                os.close(read_end)
                raise
            finally:
                os.close(write_end)
        self.stderr: IO[str] = open(read_end, encoding="utf-8", errors="replace")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._helper.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._helper.returncode(self.pid, timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"server {self.pid}", timeout or 0.0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:  # exited, not reaped yet
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


# --- in the helper ---------------------------------------------------------------------------
def serve_forks(fd: int) -> None:
    """The helper's main: import the server, then fork a child per request on ``fd``."""
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]  # as __main__ does
    for name in PRELOAD:
        __import__(name)
    gc.collect()
    gc.freeze()  # what the children inherit stays shared: no collection touches it
    channel = socket.socket(fileno=fd)
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_w, False)
    signal.set_wakeup_fd(wakeup_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    selector = selectors.DefaultSelector()
    selector.register(channel, selectors.EVENT_READ)
    selector.register(wakeup_r, selectors.EVENT_READ)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is channel:
                    data, fds, _, _ = socket.recv_fds(channel, _MAX_MESSAGE, 3)
                    if not data:
                        return
                    pid = _fork(json.loads(data), fds, channel, selector, (wakeup_r, wakeup_w))
                    for descriptor in fds:
                        os.close(descriptor)
                    children.add(pid)
                    channel.send(json.dumps({"pid": pid}).encode())
                else:
                    os.read(wakeup_r, 4096)
                _reap(children, channel)
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _reap(children: set[int], channel: socket.socket) -> None:
    """Tell the test process the exit code of each child that has exited."""
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            continue
        children.discard(pid)
        channel.send(json.dumps({"exited": pid,
                                 "returncode": os.waitstatus_to_exitcode(status)}).encode())


def _fork(request: Mapping[str, Any], fds: list[int], channel: socket.socket,
          selector: selectors.BaseSelector, wakeup: tuple[int, int]) -> int:
    """Fork the server ``request`` asks for, with ``fds`` as its stdin, stdout and stderr;
    in the helper, the child's pid (the child runs the server and exits)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        selector.close()
        channel.close()
        for descriptor in wakeup:
            os.close(descriptor)
        for target, descriptor in enumerate(fds):
            os.dup2(descriptor, target)
            os.close(descriptor)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [str(_MAIN), *request["args"]]
        gc.disable()  # as ``python -m coordinator serve`` starts (coordinator/__main__.py)
        from coordinator.cli import main

        code = main(request["args"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    raise AssertionError("unreachable")

