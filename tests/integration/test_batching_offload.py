"""Seed 000 end to end: assignment batching and offload with real confluent-kafka
``group.protocol=consumer`` members, read back from the store; per-group configs through
kafka-python's KafkaAdminClient."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from coordinator.bench.procfs import children
from tests.harness import ServerProcess, wait_until
from tests.integration.test_consumer_protocol import Group, create_topic, settled

OVERRIDES = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "1000",
    "group.consumer.assignor.offload.enable": "true",
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", OVERRIDES) as process:
        yield process


def dump(log_dir: Path) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", "--log-dirs",
                          str(log_dir)], capture_output=True, text=True, check=True, timeout=60)
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.slow
def test_eight_members_joining_at_once_are_batched_and_converge(server: ServerProcess,
                                                                  tmp_path: Path) -> None:
    create_topic(server.bootstrap, "batched", 16)
    partitions = {("batched", p) for p in range(16)}
    group = Group(server.bootstrap, "batching", ["batched"])
    try:
        for _ in range(8):
            group.add()
        wait_until(lambda: settled(group, partitions, 8), 90, interval=0.1,
                   message="eight members to share the 16 partitions")
        group.check_never_doubled(server.log_dir)
    finally:
        group.stop_all()
    server.stop()
    rows = [r for r in dump(tmp_path / "data") if r["key"].get("GroupId") == "batching"]
    targets = [r["value"] for r in rows
               if r["type"] == "ConsumerGroupTargetAssignmentMetadata" and r["value"]]
    joins = {r["key"]["MemberId"] for r in rows
             if r["type"] == "ConsumerGroupMemberMetadata" and r["value"]}
    assert len(joins) == 8
    epochs = [t["AssignmentEpoch"] for t in targets]
    stamps = [t["Timestamp"] for t in targets]
    assert epochs[0] == 2, epochs
    assert epochs == sorted(epochs)
    assert all(b - a >= 1000 for a, b in itertools.pairwise(stamps)), stamps
    assert len(targets) < len(joins), (epochs, stamps)


@pytest.fixture
def admin(server: ServerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000,
                              client_id="group-configs-test")
    try:
        yield client
    finally:
        client.close()


def group_resource(name: str, configs: dict[str, str] | None = None) -> ConfigResource:
    return ConfigResource(ConfigResourceType.GROUP, name, configs=configs)


def wait_loaded(admin: KafkaAdminClient, name: str) -> None:
    """Until the group's coordinator partition answers (it may still be loading)."""
    wait_until(lambda: admin.describe_configs([group_resource(name)], config_filter="all")
               .get("group", {}).get(name), 30, message="the group's coordinator to load")


@pytest.mark.slow
def test_group_configs_set_read_back_and_refused(admin: KafkaAdminClient,
                                                 server: ServerProcess) -> None:
    wait_loaded(admin, "configured")
    result = admin.alter_configs([group_resource("configured", {
        "consumer.assignment.interval.ms": "2500",
        "consumer.assignor.offload.enable": "false",
        "consumer.heartbeat.interval.ms": "400"})])
    assert result == {"group": {"configured": "OK"}}

    modified = admin.describe_configs([group_resource("configured")])["group"]["configured"]
    assert {name: entry["value"] for name, entry in modified.items()} == {
        "consumer.assignment.interval.ms": "2500", "consumer.assignor.offload.enable": "false",
        "consumer.heartbeat.interval.ms": "400"}
    assert {entry["config_source"] for entry in modified.values()} == {"DYNAMIC_GROUP_CONFIG"}

    everything = admin.describe_configs([group_resource("configured")],
                                        config_filter="all")["group"]["configured"]
    assert everything["consumer.session.timeout.ms"]["value"] == "6000"
    assert everything["consumer.session.timeout.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert everything["share.assignment.interval.ms"]["value"] == "-1"
    assert "streams.assignor.offload.enable" in everything

    too_long = admin.alter_configs([group_resource("configured", {
        "consumer.assignment.interval.ms": "20000"})])["group"]["configured"]
    assert "InvalidConfigurationError" in too_long
    assert ("consumer.assignment.interval.ms must be less than or equal to "
            "group.consumer.max.assignment.interval.ms") in too_long
    not_a_bool = admin.alter_configs([group_resource("configured", {
        "consumer.assignor.offload.enable": "maybe"})])["group"]["configured"]
    assert "InvalidConfigurationError" in not_a_bool
    with pytest.raises(ValueError, match="Unrecognized configs"):
        admin.alter_configs([group_resource("configured", {"consumer.no.such": "1"})])

    unchanged = admin.describe_configs([group_resource("configured")])["group"]["configured"]
    assert unchanged["consumer.assignment.interval.ms"]["value"] == "2500"

    admin.reset_configs([group_resource("configured", {"consumer.heartbeat.interval.ms": ""})])
    after = admin.describe_configs([group_resource("configured")])["group"]["configured"]
    assert set(after) == {"consumer.assignment.interval.ms", "consumer.assignor.offload.enable"}


@pytest.mark.slow
def test_group_configs_survive_a_restart(server: ServerProcess, tmp_path: Path) -> None:
    client = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
    try:
        wait_loaded(client, "kept")
        client.alter_configs([group_resource("kept", {"consumer.session.timeout.ms": "50000"})])
    finally:
        client.close()
    server.stop()
    again = ServerProcess(tmp_path / "data", OVERRIDES).start().wait_loaded()
    try:
        client = KafkaAdminClient(bootstrap_servers=again.bootstrap, request_timeout_ms=10000)
        try:
            described = wait_until(
                lambda: client.describe_configs([group_resource("kept")])["group"]["kept"],
                20, message="the group's configs after a restart")
        finally:
            client.close()
    finally:
        again.stop()
    assert described["consumer.session.timeout.ms"]["value"] == "50000"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _children_running(pid: int, word: str) -> set[int]:
    return {child for child in children(pid) if word in _command_line(child)}


@pytest.mark.slow
def test_a_killed_server_leaves_no_background_workers_behind(tmp_path: Path) -> None:
    """SIGKILL gives the server no chance to stop its pool: the workers notice on their own
    and exit, and with them the forkserver they were started from; so does the fsync helper
    process (storage/flusher_process.py)."""
    server = ServerProcess(tmp_path / "data", OVERRIDES).start()
    try:
        proc = server.proc
        assert proc is not None
        forkservers = wait_until(lambda: _children_running(proc.pid, "forkserver"), 20,
                                 message="forkserver")
        def started_workers() -> set[int] | None:  # the pool starts them one after the other
            workers: set[int] = set().union(*map(children, forkservers))
            return workers if len(workers) >= 2 else None

        workers = wait_until(started_workers, 20, message="the background workers")
        assert len(workers) == 2  # group.coordinator.background.threads
        flushers = wait_until(lambda: _children_running(proc.pid, "flusher_process"), 20,
                              message="the fsync helper")
        server.kill()
        wait_until(lambda: not any(map(_alive, forkservers | workers | flushers)), 15,
                   message="the workers, the forkserver and the fsync helper to exit")
    finally:
        server.kill()
