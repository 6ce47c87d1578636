"""Group configs are cluster metadata (ConfigRecords of GROUP resources in
``__cluster_metadata-0``), against a real server process with real clients:

1. set through confluent-kafka's AdminClient while the coordinator partitions are still loading
   (no retry: librdkafka does not retry COORDINATOR_LOAD_IN_PROGRESS for config calls), they are
   answered at once and obeyed: two share groups configured ``earliest`` within 0.1 s of the
   server's start both read all 100 records;
2. a consumer group's ``consumer.session.timeout.ms`` set before the group exists governs its
   first member;
3. they survive the group's deletion and a kill -9 restart; DescribeConfigs on a group that
   never existed answers every config with its default; ListConfigResources v1 (kafka-python's
   admin client) lists the GROUP resources;
4. an older store (``tests/unit/data/store-5e6b16b``, whose group configs are 1001 records on the
   coordinator partitions) is migrated once: its configs become ConfigRecords, the 1001 records
   tombstones, and a restart migrates nothing again; a config the metadata already had is kept.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from confluent_kafka.admin import ResourceType as AdminResourceType
from kafka.admin import ConfigResourceType, KafkaAdminClient

from coordinator.bench.store_load import build_store
from coordinator.groups.common.group_configs import GROUP_CONFIG_NAMES
from coordinator.metadata.log import METADATA_TOPIC, SEGMENT_BYTES
from storage.log import PartitionLog
from storage.records import ConfigRecordKey, ConfigRecordValue, encode_record
from tests.harness import ServerProcess, wait_until
from tests.integration import old_config_store
from tests.integration.share_clients import create_topic, produce
from tests.integration.test_consumer_protocol import Group, settled

OLD_STORE = Path(__file__).resolve().parents[1] / "unit" / "data" / "store-5e6b16b"
LOADING_RECORDS = 400_000
"""Offset commits in the store of test 1, so that its partitions load for about a second."""
MIGRATED = "group configs migrated to the cluster metadata"


def admin_for(server: ServerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap, "log_level": 0})


def alter(admin: AdminClient, group: str, configs: Mapping[str, str | None]) -> None:
    """One IncrementalAlterConfigs (SET, or DELETE for None), not retried."""
    resource = ConfigResource(AdminResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value or "", incremental_operation=AlterConfigOpType.SET
                    if value is not None else AlterConfigOpType.DELETE)
        for name, value in configs.items()])
    admin.incremental_alter_configs([resource], request_timeout=15)[resource].result(20)


def described(admin: AdminClient, group: str) -> dict[str, tuple[str | None, str]]:
    """name -> (value, source name) of every config DescribeConfigs gives the group
    (confluent-kafka's name for DYNAMIC_GROUP_CONFIG, 8, is GROUP_CONFIG)."""
    resource = ConfigResource(AdminResourceType.GROUP, group)
    entries = admin.describe_configs([resource], request_timeout=15)[resource].result(20)
    return {name: (entry.value, ConfigSource(entry.source).name)
            for name, entry in entries.items()}


def overrides(admin: AdminClient, group: str) -> dict[str, str | None]:
    return {name: value for name, (value, source) in described(admin, group).items()
            if source == "GROUP_CONFIG"}


def dump(server: ServerProcess, *args: str) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", "--log-dirs",
                          str(server.log_dir), *args], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


# ------------------------------------------------------------------------------ 1. at start
class SharePoller:
    """An implicit-mode ShareConsumer on its own thread, keeping every offset it got."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.conf = {"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0}
        self.topic = topic
        self.offsets: set[int] = set()
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        consumer = ShareConsumer(self.conf)
        try:
            consumer.subscribe([self.topic])
            while not self.stop.is_set():
                for message in consumer.poll(0.2):
                    if message.error() is not None:
                        self.errors.append(str(message.error()))
                    elif (offset := message.offset()) is not None:
                        self.offsets.add(offset)
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))
        finally:
            consumer.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(20)


@pytest.mark.slow
def test_share_groups_configured_at_start_read_everything(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    build_store(log_dir, LOADING_RECORDS)
    server = ServerProcess(log_dir).start()  # returns once the port accepts
    started = time.monotonic()
    try:
        admin = admin_for(server)
        groups = ["early-a", "early-b"]
        futures = {}
        for group in groups:
            resource = ConfigResource(AdminResourceType.GROUP, group, incremental_configs=[
                ConfigEntry("share.auto.offset.reset", "earliest",
                            incremental_operation=AlterConfigOpType.SET)])
            futures[group] = admin.incremental_alter_configs([resource])[resource]
        assert time.monotonic() - started < 0.1  # both sent within 0.1 s of the start
        for future in futures.values():
            future.result(20)  # answered, not COORDINATOR_LOAD_IN_PROGRESS
        assert server.event("coordinator partitions loaded") is None, \
            "the partitions loaded before the configs were answered: not the case under test"
        create_topic(server.bootstrap, "early")
        produce(server.bootstrap, "early", 100)
        pollers = [SharePoller(server.bootstrap, group, "early") for group in groups]
        try:
            wait_until(lambda: all(len(p.offsets) == 100 for p in pollers), 60, interval=0.1,
                       message="both share groups to read all 100 records")
        finally:
            for poller in pollers:
                poller.close()
        for poller in pollers:
            assert poller.offsets == set(range(100)) and not poller.errors, poller.errors
    finally:
        server.stop()
        server.kill()


# ------------------------------------------------------------------------------ 2. before a group
@pytest.mark.slow
def test_a_session_timeout_set_before_the_group_exists_governs_its_first_member(
        tmp_path: Path) -> None:
    overrides_ = {"group.consumer.min.session.timeout.ms": "1000",
                  "group.consumer.min.heartbeat.interval.ms": "100",
                  "group.consumer.assignment.interval.ms": "0"}
    with ServerProcess(tmp_path / "data", overrides_) as server:
        admin = admin_for(server)
        # the broker's session timeout is 45 s; this group's is 3 s
        alter(admin, "short", {"consumer.session.timeout.ms": "3000",
                               "consumer.heartbeat.interval.ms": "500"})
        create_topic(server.bootstrap, "sessions", 2)
        group = Group(server.bootstrap, "short", ["sessions"])
        try:
            member = group.add()
            wait_until(lambda: settled(group, {("sessions", 0), ("sessions", 1)}, 1), 30,
                       message="the first member to own both partitions")
            member.kill()
            killed = time.monotonic()
            server.wait_event("consumer group member session expired", 20, group_id="short")
            took = time.monotonic() - killed
            assert 2.0 <= took < 15.0, f"expired after {took:.1f}s (the group's is 3 s)"
        finally:
            group.stop_all()


# ------------------------------------------------------------------------------ 3. kept
@pytest.mark.slow
def test_configs_survive_the_groups_deletion_and_a_kill_9_restart(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        admin = admin_for(server)
        configs = {"consumer.session.timeout.ms": "50000",
                   "consumer.heartbeat.interval.ms": "6000"}
        alter(admin, "doomed", configs)
        create_topic(server.bootstrap, "doomed-topic")
        consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "doomed",
                             "group.protocol": "consumer", "log_level": 0})
        consumer.subscribe(["doomed-topic"])
        wait_until(lambda: consumer.poll(0.1) is None and consumer.assignment(), 30,
                   message="the member to be assigned")
        consumer.close()
        [deleted] = admin.delete_consumer_groups(["doomed"], request_timeout=15).values()
        deleted.result(20)
        assert overrides(admin, "doomed") == configs  # KIP-848: kept when the group goes
        server.restart()  # kill -9
        admin = admin_for(server)
        assert overrides(admin, "doomed") == configs
        records = [r for r in dump(server, "--metadata") if r["type"] == "ConfigRecord"]
        assert len(records) == 2
        assert not [r for r in dump(server) if r["type"] == "GroupConfig"]
        python_admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        try:
            assert "doomed" in python_admin.list_config_resources(
                [ConfigResourceType.GROUP])["group"]
        finally:
            python_admin.close()


def test_alter_configs_replaces_a_groups_configs(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        admin = admin_for(server)
        alter(admin, "legacy", {"consumer.session.timeout.ms": "50000"})
        resource = ConfigResource(AdminResourceType.GROUP, "legacy",
                                  set_config={"consumer.heartbeat.interval.ms": "6000"})
        admin.alter_configs([resource], request_timeout=15)[resource].result(20)
        assert overrides(admin, "legacy") == {"consumer.heartbeat.interval.ms": "6000"}
        bad = ConfigResource(AdminResourceType.GROUP, "legacy",
                             set_config={"consumer.heartbeat.interval.ms": "1"})
        with pytest.raises(KafkaException, match="INVALID_CONFIG"):
            admin.alter_configs([bad], request_timeout=15)[bad].result(20)
        assert overrides(admin, "legacy") == {"consumer.heartbeat.interval.ms": "6000"}


def test_describe_configs_of_a_group_that_never_existed(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        answered = described(admin_for(server), "never-existed")
        assert set(answered) == set(GROUP_CONFIG_NAMES)
        assert {source for _, source in answered.values()} == {"DEFAULT_CONFIG"}
        assert answered["consumer.session.timeout.ms"][0] == "45000"
        assert answered["share.auto.offset.reset"][0] == "latest"


# ------------------------------------------------------------------------------ 4. migration
@pytest.fixture
def old_store(tmp_path: Path) -> Iterator[Path]:
    log_dir = tmp_path / "data"
    shutil.copytree(OLD_STORE, log_dir)
    yield log_dir


def _write_metadata(log_dir: Path, group: str, configs: Mapping[str, str]) -> None:
    plog = PartitionLog.open(log_dir, 0, SEGMENT_BYTES, topic=METADATA_TOPIC)
    try:
        plog.append_batch([encode_record(ConfigRecordKey(resource_type=32, resource_name=group,
                                                         name=name), ConfigRecordValue(value=value))
                           for name, value in configs.items()], int(time.time() * 1000))
        plog.flush()
    finally:
        plog.close()


@pytest.mark.slow
def test_an_older_stores_group_configs_are_migrated_once(old_store: Path) -> None:
    server = ServerProcess(old_store, old_config_store.OVERRIDES).start()
    try:
        wait_until(lambda: len(server.events_of(MIGRATED)) == len(old_config_store.CONFIGS),
                   20, message="the three groups' configs to be migrated")
        admin = admin_for(server)
        for group, configs in old_config_store.CONFIGS.items():
            assert overrides(admin, group) == configs
        assert overrides(admin, old_config_store.CLEARED) == {}
        metadata = [r for r in dump(server, "--metadata") if r["type"] == "ConfigRecord"]
        assert len(metadata) == sum(len(c) for c in old_config_store.CONFIGS.values())
        legacy = [r for r in dump(server) if r["type"] == "GroupConfig"]
        assert {r["key"]["GroupId"] for r in legacy if r["value"] is None} == {
            *old_config_store.CONFIGS, old_config_store.CLEARED}
        server.restart()  # kill -9, then the same store again: nothing more to migrate
        server.wait_loaded()
        admin = admin_for(server)
        for group, configs in old_config_store.CONFIGS.items():
            assert overrides(admin, group) == configs
        assert server.events_of(MIGRATED) == []
        assert [r for r in dump(server, "--metadata") if r["type"] == "ConfigRecord"] == \
            metadata
    finally:
        server.stop()
        server.kill()


@pytest.mark.slow
def test_a_config_the_metadata_has_is_kept_by_the_migration(old_store: Path) -> None:
    """As after a crash between the migration's two writes, or a config set while the
    partition loaded: the metadata's value is the newer one."""
    _write_metadata(old_store, "cg", {"consumer.session.timeout.ms": "55000"})
    with ServerProcess(old_store, old_config_store.OVERRIDES) as server:
        wait_until(lambda: len(server.events_of(MIGRATED)) == len(old_config_store.CONFIGS),
                   20, message="the three groups' configs to be migrated")
        assert overrides(admin_for(server), "cg") == {
            **old_config_store.CONFIGS["cg"], "consumer.session.timeout.ms": "55000"}
