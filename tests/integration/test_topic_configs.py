"""TOPIC and BROKER configs through confluent-kafka's AdminClient: DescribeConfigs with sources
and synonyms, IncrementalAlterConfigs and AlterConfigs, durable across kill -9."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

import protocol
from protocol import ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class
from tests.integration.test_admin_confluent import TIMEOUT, admin_for, unique


@pytest.fixture(scope="module")
def admin(shared_server: ServerProcess) -> Iterator[AdminClient]:
    yield admin_for(shared_server)


def new_topic(admin: AdminClient, config: dict[str, str] | None = None) -> str:
    name = unique("cfg")
    admin.create_topics([NewTopic(name, 1, config=config or {})],
                        request_timeout=TIMEOUT)[name].result(TIMEOUT)
    return name


def describe(admin: AdminClient, name: str) -> dict:
    """(librdkafka asks for synonyms.)"""
    resource = ConfigResource(ResourceType.TOPIC, name)
    return admin.describe_configs([resource], request_timeout=TIMEOUT)[resource].result(TIMEOUT)


def alter(admin: AdminClient, name: str, *entries: ConfigEntry,
          validate_only: bool = False) -> None:
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=list(entries))
    admin.incremental_alter_configs([resource], validate_only=validate_only,
                                    request_timeout=TIMEOUT)[resource].result(TIMEOUT)


def alter_error(admin: AdminClient, resource: ConfigResource) -> KafkaError:
    future = admin.incremental_alter_configs([resource], request_timeout=TIMEOUT)[resource]
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT)
    return info.value.args[0]


def op(name: str, operation: AlterConfigOpType, value: str | None = None) -> ConfigEntry:
    return ConfigEntry(name, value, incremental_operation=operation)


def test_defaults_come_from_the_broker_synonym(admin: AdminClient) -> None:
    configs = describe(admin, new_topic(admin))
    retention = configs["retention.ms"]
    assert retention.value == "604800000"
    assert retention.source == ConfigSource.DEFAULT_CONFIG.value
    assert [(s.name, s.source) for s in retention.synonyms.values()] == [
        ("log.retention.ms", ConfigSource.DEFAULT_CONFIG.value)]
    assert configs["max.message.bytes"].value == "1048588"


def test_set_delete_and_synonyms(admin: AdminClient) -> None:
    name = new_topic(admin)
    alter(admin, name, op("retention.ms", AlterConfigOpType.SET, "3600000"),
          op("max.message.bytes", AlterConfigOpType.SET, "2000"))
    configs = describe(admin, name)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert [(s.name, s.value, s.source) for s in configs["retention.ms"].synonyms.values()] == [
        ("retention.ms", "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG.value)]
    assert configs["max.message.bytes"].value == "2000"
    alter(admin, name, op("retention.ms", AlterConfigOpType.DELETE))
    configs = describe(admin, name)
    assert configs["retention.ms"].value == "604800000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["max.message.bytes"].value == "2000"  # untouched by the incremental delete


def test_append_and_subtract_on_a_list_config(admin: AdminClient) -> None:
    name = new_topic(admin)
    alter(admin, name, op("cleanup.policy", AlterConfigOpType.APPEND, "compact"))
    assert describe(admin, name)["cleanup.policy"].value == "delete,compact"
    alter(admin, name, op("cleanup.policy", AlterConfigOpType.SUBTRACT, "delete"))
    assert describe(admin, name)["cleanup.policy"].value == "compact"
    error = alter_error(admin, ConfigResource(
        ResourceType.TOPIC, name,
        incremental_configs=[op("retention.ms", AlterConfigOpType.APPEND, "5")]))
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "Can't APPEND to key retention.ms because its type is not LIST." in error.str()


def test_unknown_and_bad_values_are_invalid_config(admin: AdminClient) -> None:
    name = new_topic(admin)
    for entry, message in (
            (op("no.such.config", AlterConfigOpType.SET, "1"),
             "Unknown topic config name: no.such.config"),
            (op("retention.ms", AlterConfigOpType.SET, "soon"),
             "Invalid value soon for configuration retention.ms"),
            (op("min.insync.replicas", AlterConfigOpType.SET, "0"),
             "Value must be at least 1"),
            (op("cleanup.policy", AlterConfigOpType.SET, "forever"),
             "String must be one of")):
        error = alter_error(admin, ConfigResource(ResourceType.TOPIC, name,
                                                  incremental_configs=[entry]))
        assert error.code() == KafkaError.INVALID_CONFIG, entry
        assert message in error.str()
    assert describe(admin, name)["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_validate_only_changes_nothing(admin: AdminClient) -> None:
    name = new_topic(admin)
    alter(admin, name, op("retention.ms", AlterConfigOpType.SET, "1000"), validate_only=True)
    assert describe(admin, name)["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_unknown_topic(admin: AdminClient) -> None:
    error = alter_error(admin, ConfigResource(
        ResourceType.TOPIC, unique("missing"),
        incremental_configs=[op("retention.ms", AlterConfigOpType.SET, "1000")]))
    assert error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_legacy_alter_configs_replaces_every_override(admin: AdminClient) -> None:
    name = new_topic(admin, {"retention.ms": "1000", "segment.bytes": "1048576"})
    resource = ConfigResource(ResourceType.TOPIC, name, set_config={"max.message.bytes": "5000"})
    admin.alter_configs([resource], request_timeout=TIMEOUT)[resource].result(TIMEOUT)
    configs = describe(admin, name)
    assert configs["max.message.bytes"].value == "5000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_broker_configs_are_not_dynamic(admin: AdminClient) -> None:
    error = alter_error(admin, ConfigResource(
        ResourceType.BROKER, "1",
        incremental_configs=[op("log.retention.ms", AlterConfigOpType.SET, "1000")]))
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "Cannot update these configs dynamically: Set(log.retention.ms)" in error.str()


@pytest.mark.slow
def test_altered_configs_survive_kill_9(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        admin = admin_for(server)
        name = new_topic(admin)
        alter(admin, name, op("retention.ms", AlterConfigOpType.SET, "3600000"),
              op("cleanup.policy", AlterConfigOpType.SET, "compact"))
        alter(admin, name, op("cleanup.policy", AlterConfigOpType.DELETE))
        server.kill()
        server.restart()
        configs = describe(admin_for(server), name)
        assert configs["retention.ms"].value == "3600000"
        assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        assert configs["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value
    finally:
        server.stop()


@pytest.mark.slow
def test_static_broker_synonym_is_the_topic_default(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", {"log.retention.ms": "7200000"}).start() as server:
        admin = admin_for(server)
        configs = describe(admin, new_topic(admin))
        retention = configs["retention.ms"]
        assert retention.value == "7200000"
        assert retention.source == ConfigSource.STATIC_BROKER_CONFIG.value
        # (the static value, then the default: librdkafka keys synonyms by name)
        assert list(retention.synonyms) == ["log.retention.ms"]


# --- the data plane obeys altered configs ------------------------------------------------------
def produce(server: ServerProcess, topic: str, count: int, size: int,
            acks: str = "all") -> list[KafkaError | None]:
    """One batch per record (flushed each time); the delivery error of each."""
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": acks, "linger.ms": 0,
                         "enable.idempotence": False, "message.max.bytes": 10_000_000,
                         "retries": 0})
    errors: list[KafkaError | None] = []
    for i in range(count):
        producer.produce(topic, value=bytes([i % 256]) * size,
                         on_delivery=lambda err, _msg: errors.append(err))
        producer.flush(TIMEOUT)
    assert len(errors) == count
    return errors


def watermarks(server: ServerProcess, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": unique("wm")})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
        return low, high
    finally:
        consumer.close()


@pytest.mark.slow
def test_retention_bytes_then_retention_ms_delete_old_segments(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data",
                       {"log.retention.check.interval.ms": "100"}).start() as server:
        admin = admin_for(server)
        name = new_topic(admin, {"segment.bytes": "1024"})
        assert produce(server, name, 10, 700) == [None] * 10  # ten segments of one batch
        assert watermarks(server, name) == (0, 10)
        alter(admin, name, op("retention.bytes", AlterConfigOpType.SET, "3000"))
        wait_until(lambda: watermarks(server, name)[0] > 0, timeout=TIMEOUT)
        low, high = watermarks(server, name)
        assert high == 10 and 5 <= low < 10  # what is left fits in 3000 bytes, whole segments
        alter(admin, name, op("retention.ms", AlterConfigOpType.SET, "1"))
        wait_until(lambda: watermarks(server, name) == (10, 10), timeout=TIMEOUT)


def test_max_message_bytes_and_min_insync_replicas(shared_server: ServerProcess,
                                                   admin: AdminClient) -> None:
    name = new_topic(admin)
    alter(admin, name, op("max.message.bytes", AlterConfigOpType.SET, "2000"))
    small, large = produce(shared_server, name, 1, 100) + produce(shared_server, name, 1, 5000)
    assert small is None
    assert large is not None and large.code() == KafkaError.MSG_SIZE_TOO_LARGE
    alter(admin, name, op("min.insync.replicas", AlterConfigOpType.SET, "2"))
    [refused] = produce(shared_server, name, 1, 100)
    assert refused is not None and refused.code() == KafkaError.NOT_ENOUGH_REPLICAS
    assert produce(shared_server, name, 1, 100, acks="1") == [None]  # only acks=all needs it
    assert watermarks(shared_server, name) == (0, 2)


@pytest.mark.slow
def test_log_append_time(shared_server: ServerProcess, admin: AdminClient) -> None:
    name = new_topic(admin, {"message.timestamp.type": "LogAppendTime"})
    producer = Producer({"bootstrap.servers": shared_server.bootstrap})
    producer.produce(name, value=b"x", timestamp=1_000)  # 1970: replaced by the broker's time
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer({"bootstrap.servers": shared_server.bootstrap, "group.id": unique("t"),
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([name])
        message = None
        deadline = time.monotonic() + TIMEOUT
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        assert message is not None and message.error() is None
        kind, stamp = message.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME
        assert abs(stamp - time.time() * 1000) < 60_000
    finally:
        consumer.close()


def test_a_resource_named_twice_is_an_invalid_request(wire: WireClient) -> None:
    """(Raw: both admin clients merge a resource named twice.)"""
    request_class = kio_class("incremental_alter_configs", 1, "request",
                              "IncrementalAlterConfigsRequest")
    resource_class = kio_class("incremental_alter_configs", 1, "request",
                               "AlterConfigsResource")
    twice = [protocol.make(resource_class, resource_type=2, resource_name="t", configs=())] * 2
    response = wire.request(protocol.make(request_class, resources=tuple(twice),
                                          validate_only=True))
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (ErrorCode.invalid_request, "Each resource must appear at most once.")] * 2
