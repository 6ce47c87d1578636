"""A background worker ends with its server (``_exit_with``), and at once when the server is
gone before the worker's watch begins (a server stopped while its workers were still being
forked): before, the watch fell back to polling once a second, and the forkserver, which waits
for every worker, outlived the server by that second, with the server's stderr open."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from coordinator.testing.preloaded import ROOT

_WORKER = textwrap.dedent("""
    import os, sys, threading
    from coordinator.background import executor

    def slept(seconds):  # the polling fallback would sleep before it looks again
        os._exit(3)

    def watching(*fds, select=executor.select.select):
        print("watching", flush=True)
        return select(*fds)

    executor.time.sleep = slept
    executor.select.select = watching
    executor._exit_with(int(sys.argv[1]))
    threading.Event().wait(30)
    os._exit(4)
""")


def _gone_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def _worker(server_pid: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _WORKER, str(server_pid)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)


def test_a_worker_whose_server_is_gone_exits_at_once() -> None:
    worker = _worker(_gone_pid())
    assert worker.wait(30) == 0
    assert worker.stdout is not None and worker.stdout.read() == ""  # nothing to watch


def test_a_worker_exits_when_its_server_does() -> None:
    server = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                              stdin=subprocess.PIPE)
    worker = _worker(server.pid)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline() == "watching\n"  # its watch is on the live server
        assert server.stdin is not None
        server.stdin.close()  # the server ends
        assert server.wait(30) == 0
        assert worker.wait(30) == 0
    finally:
        server.kill()
        worker.kill()
