"""SIGQUIT dumps the server's stacks to stderr, threads' then asyncio tasks', and it goes on
serving (coordinator/observability/stack_dump.py)."""

from __future__ import annotations

from pathlib import Path

from kafka import KafkaAdminClient

from tests.harness import ServerProcess


def test_sigquit_dumps_the_threads_and_the_tasks_and_the_server_goes_on(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", profile="test") as server:
        dump = server.stacks()
        assert "Current thread" in dump  # faulthandler: the main thread's stack
        assert "asyncio tasks (" in dump
        assert "_accept_loop" in dump  # the listener's task, suspended in its accept
        assert "_process" in dump  # the coordinator partitions' event loops
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
        try:
            assert isinstance(admin.list_topics(), list)  # still serving
        finally:
            admin.close()
        assert server.proc is not None and server.proc.poll() is None
        assert server.stop() == 0  # not killed by the SIGQUIT: an orderly stop
        assert server.event("stopped") is not None
