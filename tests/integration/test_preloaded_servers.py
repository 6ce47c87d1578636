"""The suite's servers are forked from a process that has imported the server
(coordinator/testing/preloaded.py): each is still a real server of its own, with its own pid,
stderr, signals and exit code, and one that needs a fresh ``exec`` gets one."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from coordinator.testing import preloaded
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, api_versions_v0


def _parent(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1])


def test_a_forked_server_serves_and_stops_as_one_started_afresh(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        assert isinstance(server.proc, preloaded.ForkedServer)
        assert server.proc.pid != os.getpid() and _parent(server.proc.pid) != os.getpid()
        with WireClient(server.bootstrap) as client:
            answer = client.request(api_versions_v0())
        assert answer.error_code == 0 and answer.api_keys  # it answers on its own port
        assert server.event("coordinator partitions loaded") is not None
        assert server.alive() and server.proc.poll() is None
    assert server.proc.returncode == 0  # SIGTERM: a clean stop
    assert server.event("stopped") is not None  # its stderr, read to the end
    assert not server.alive()


def test_a_killed_forked_server_reports_the_signal_and_restarts_on_its_ports(
        tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        first, port = server.proc, server.port
        assert first is not None
        server.restart().wait_loaded()
        assert first.returncode == -signal.SIGKILL
        assert server.proc is not first and server.port == port


def test_a_bad_config_exits_with_kafkas_code_and_message(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {"group.consumer.heartbeat.interval.ms": "-1"})
    with pytest.raises(AssertionError, match="server exited with 2"):
        server.start()
    assert isinstance(server.proc, preloaded.ForkedServer)
    assert ("Invalid value -1 for configuration group.consumer.heartbeat.interval.ms: "
            "Value must be at least 1") in server.output()


def test_a_server_given_its_own_environment_is_started_afresh(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", env={"COORDINATOR_SLOW_EVENT_MS": "250"}) as server:
        assert isinstance(server.proc, subprocess.Popen)
        assert _parent(server.proc.pid) == os.getpid()


def test_the_helper_kills_its_servers_when_the_test_process_goes(tmp_path: Path) -> None:
    helper = preloaded.Preloaded()
    read_end, write_end = os.pipe()
    with open(os.devnull, "rb") as null_in, open(os.devnull, "wb") as null_out:
        pid = helper.spawn(["serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                            "--override", f"log.dirs={tmp_path / 'data'}",
                            "--override", "metrics.listener="],
                           str(preloaded.ROOT), helper.env, null_in.fileno(),
                           null_out.fileno(), write_end)
    os.close(write_end)
    with open(read_end, encoding="utf-8") as stderr:
        assert "started" in next(line for line in stderr if '"started"' in line)
        helper.close()  # as the socket closes when the test process exits
        wait_until(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 10,
                   message="the helper to kill its server")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_server_started_after_the_test_changed_the_environment_is_started_afresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COORDINATOR_TURN_BUDGET_MS", "0.5")  # read as runtime.py is imported
    with ServerProcess(tmp_path / "data") as server:
        assert isinstance(server.proc, subprocess.Popen)


def test_a_variable_read_only_as_the_server_runs_does_not_stop_the_fork(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_HOME_FOR_SOMETHING_ELSE", "/nowhere")  # as PySpark sets its own
    with ServerProcess(tmp_path / "data") as server:
        assert isinstance(server.proc, preloaded.ForkedServer)
