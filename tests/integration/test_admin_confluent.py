"""confluent-kafka's AdminClient (librdkafka 2.16) against the server: topics, cluster, configs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from tests.harness import ServerProcess, wait_until

TIMEOUT = 10.0


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin_for(server: ServerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap, "socket.timeout.ms": 5000})


@pytest.fixture(scope="module")
def admin(shared_server: ServerProcess) -> Iterator[AdminClient]:
    yield admin_for(shared_server)


def create(admin: AdminClient, *topics: NewTopic, validate_only: bool = False) -> dict:
    futures = admin.create_topics(list(topics), validate_only=validate_only,
                                  operation_timeout=5, request_timeout=TIMEOUT)
    return futures


def error_of(future) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT)
    return info.value.args[0]


def topic_names(admin: AdminClient) -> set[str]:
    return set(admin.list_topics(timeout=TIMEOUT).topics)


# --- create -----------------------------------------------------------------------------------
def test_create_topic_then_list_and_describe(admin: AdminClient) -> None:
    name = unique("created")
    assert create(admin, NewTopic(name, num_partitions=3, replication_factor=1))[name].result(
        TIMEOUT) is None
    metadata = admin.list_topics(timeout=TIMEOUT)
    assert name in metadata.topics
    topic = metadata.topics[name]
    assert topic.error is None
    assert sorted(topic.partitions) == [0, 1, 2]
    for partition in topic.partitions.values():
        assert partition.leader == 1
        assert partition.replicas == [1] and partition.isrs == [1]
    assert [b.id for b in metadata.brokers.values()] == [1]
    assert metadata.controller_id == 1


def test_create_with_configs_shows_them_as_dynamic_topic_configs(admin: AdminClient) -> None:
    name = unique("configured")
    new = NewTopic(name, num_partitions=1, replication_factor=1,
                   config={"retention.ms": "3600000", "cleanup.policy": "compact"})
    create(admin, new)[name].result(TIMEOUT)
    resource = ConfigResource(ResourceType.TOPIC, name)
    configs = admin.describe_configs([resource], request_timeout=TIMEOUT)[resource].result(
        TIMEOUT)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "compact"
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert not configs["segment.bytes"].is_read_only


def test_validate_only_creates_nothing(admin: AdminClient) -> None:
    name = unique("validated")
    assert create(admin, NewTopic(name, num_partitions=2, replication_factor=1),
                  validate_only=True)[name].result(TIMEOUT) is None
    assert name not in topic_names(admin)
    # and a validate-only request still reports errors
    bad = create(admin, NewTopic(name, num_partitions=2, replication_factor=3),
                 validate_only=True)[name]
    assert error_of(bad).code() == KafkaError.INVALID_REPLICATION_FACTOR


def test_validate_only_reports_an_existing_topic(admin: AdminClient) -> None:
    name = unique("exists-validate")
    create(admin, NewTopic(name, num_partitions=1, replication_factor=1))[name].result(TIMEOUT)
    again = create(admin, NewTopic(name, num_partitions=1, replication_factor=1),
                   validate_only=True)[name]
    assert error_of(again).code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_duplicate_create_is_topic_already_exists(admin: AdminClient) -> None:
    name = unique("dup")
    create(admin, NewTopic(name, num_partitions=1, replication_factor=1))[name].result(TIMEOUT)
    error = error_of(create(admin, NewTopic(name, num_partitions=4, replication_factor=1))[name])
    assert error.code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert len(admin.list_topics(name, timeout=TIMEOUT).topics[name].partitions) == 1


@pytest.mark.parametrize("name", ["bad name", "bad/name", "a" * 250, "..", "caf\u00e9"])
def test_invalid_topic_names_are_rejected(admin: AdminClient, name: str) -> None:
    error = error_of(create(admin, NewTopic(name, num_partitions=1, replication_factor=1))[name])
    assert error.code() == KafkaError.TOPIC_EXCEPTION  # INVALID_TOPIC_EXCEPTION (17)


def test_colliding_topic_name_is_rejected(admin: AdminClient) -> None:
    base = unique("collide")
    create(admin, NewTopic(f"{base}.x", num_partitions=1, replication_factor=1))[
        f"{base}.x"].result(TIMEOUT)
    error = error_of(create(admin, NewTopic(f"{base}_x", num_partitions=1,
                                            replication_factor=1))[f"{base}_x"])
    assert error.code() == KafkaError.TOPIC_EXCEPTION
    assert "collides" in error.str()


def test_replication_factor_three_is_invalid(admin: AdminClient) -> None:
    name = unique("rf3")
    error = error_of(create(admin, NewTopic(name, num_partitions=1, replication_factor=3))[name])
    assert error.code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert name not in topic_names(admin)


def test_unknown_topic_config_is_invalid_config(admin: AdminClient) -> None:
    name = unique("badcfg")
    new = NewTopic(name, num_partitions=1, replication_factor=1, config={"no.such.config": "1"})
    error = error_of(create(admin, new)[name])
    assert error.code() == KafkaError.INVALID_CONFIG
    assert name not in topic_names(admin)


def test_bad_topic_config_value_is_invalid_config(admin: AdminClient) -> None:
    name = unique("badvalue")
    new = NewTopic(name, num_partitions=1, replication_factor=1,
                   config={"min.insync.replicas": "0"})
    error = error_of(create(admin, new)[name])
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "Value must be at least 1" in error.str()


def test_default_partitions_and_replication(admin: AdminClient) -> None:
    name = unique("defaults")
    create(admin, NewTopic(name))[name].result(TIMEOUT)  # -1, -1: the broker's defaults
    assert len(admin.list_topics(name, timeout=TIMEOUT).topics[name].partitions) == 1


def test_manual_replica_assignment(admin: AdminClient) -> None:
    name = unique("assigned")
    # (librdkafka sends -1/-1 on the wire when an assignment is given)
    assigned = NewTopic(name, num_partitions=2, replica_assignment=[[1], [1]])
    create(admin, assigned)[name].result(TIMEOUT)
    assert len(admin.list_topics(name, timeout=TIMEOUT).topics[name].partitions) == 2
    other = unique("assigned-bad")
    unknown_broker = NewTopic(other, num_partitions=1, replica_assignment=[[2]])
    error = error_of(create(admin, unknown_broker)[other])
    assert error.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT


def test_create_several_topics_in_one_request(admin: AdminClient) -> None:
    good, bad = unique("batch-good"), unique("batch-bad")
    futures = create(admin, NewTopic(good, num_partitions=2, replication_factor=1),
                     NewTopic(bad, num_partitions=1, replication_factor=2))
    assert futures[good].result(TIMEOUT) is None
    assert error_of(futures[bad]).code() == KafkaError.INVALID_REPLICATION_FACTOR


# --- describe ---------------------------------------------------------------------------------
def test_describe_topics_has_stable_topic_ids(admin: AdminClient) -> None:
    from confluent_kafka import TopicCollection

    name = unique("described")
    create(admin, NewTopic(name, num_partitions=2, replication_factor=1))[name].result(TIMEOUT)

    def describe():
        futures = admin.describe_topics(TopicCollection([name]), request_timeout=TIMEOUT)
        return futures[name].result(TIMEOUT)

    first, second = describe(), describe()
    assert first.topic_id is not None and str(first.topic_id) != "AAAAAAAAAAAAAAAAAAAAAA"
    assert str(first.topic_id) == str(second.topic_id)
    assert [p.id for p in first.partitions] == [0, 1]
    assert all(p.leader.id == 1 and [r.id for r in p.replicas] == [1] for p in first.partitions)
    assert not first.is_internal


# --- delete -----------------------------------------------------------------------------------
def test_delete_topic_then_it_is_unknown(admin: AdminClient) -> None:
    name = unique("deleted")
    create(admin, NewTopic(name, num_partitions=1, replication_factor=1))[name].result(TIMEOUT)
    assert admin.delete_topics([name], operation_timeout=5)[name].result(TIMEOUT) is None
    assert name not in topic_names(admin)
    again = admin.delete_topics([name], operation_timeout=5)[name]
    assert error_of(again).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_recreated_topic_gets_a_new_id(admin: AdminClient) -> None:
    from confluent_kafka import TopicCollection

    name = unique("recreated")

    def topic_id():
        futures = admin.describe_topics(TopicCollection([name]), request_timeout=TIMEOUT)
        return str(futures[name].result(TIMEOUT).topic_id)

    create(admin, NewTopic(name, num_partitions=1, replication_factor=1))[name].result(TIMEOUT)
    first = topic_id()
    admin.delete_topics([name], operation_timeout=5)[name].result(TIMEOUT)
    create(admin, NewTopic(name, num_partitions=1, replication_factor=1))[name].result(TIMEOUT)
    assert topic_id() != first


# --- partitions -------------------------------------------------------------------------------
def test_add_partitions_then_metadata_shows_them(admin: AdminClient) -> None:
    name = unique("grown")
    create(admin, NewTopic(name, num_partitions=2, replication_factor=1))[name].result(TIMEOUT)
    assert admin.create_partitions([NewPartitions(name, 5)], request_timeout=TIMEOUT)[
        name].result(TIMEOUT) is None
    partitions = admin.list_topics(name, timeout=TIMEOUT).topics[name].partitions
    assert sorted(partitions) == [0, 1, 2, 3, 4]
    assert all(p.leader == 1 for p in partitions.values())


def test_lowering_or_keeping_partitions_is_invalid(admin: AdminClient) -> None:
    name = unique("shrink")
    create(admin, NewTopic(name, num_partitions=3, replication_factor=1))[name].result(TIMEOUT)
    for count in (2, 3):
        future = admin.create_partitions([NewPartitions(name, count)],
                                         request_timeout=TIMEOUT)[name]
        assert error_of(future).code() == KafkaError.INVALID_PARTITIONS
    assert len(admin.list_topics(name, timeout=TIMEOUT).topics[name].partitions) == 3


def test_add_partitions_validate_only_and_unknown_topic(admin: AdminClient) -> None:
    name = unique("grow-validate")
    create(admin, NewTopic(name, num_partitions=1, replication_factor=1))[name].result(TIMEOUT)
    admin.create_partitions([NewPartitions(name, 4)], validate_only=True,
                            request_timeout=TIMEOUT)[name].result(TIMEOUT)
    assert len(admin.list_topics(name, timeout=TIMEOUT).topics[name].partitions) == 1
    missing = unique("missing")
    future = admin.create_partitions([NewPartitions(missing, 4)], request_timeout=TIMEOUT)[missing]
    assert error_of(future).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


# --- cluster and configs ----------------------------------------------------------------------
def test_describe_cluster(admin: AdminClient, shared_server: ServerProcess) -> None:
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    assert cluster.controller.id == 1
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(1, "127.0.0.1",
                                                                shared_server.port)]
    started = shared_server.event("started")
    assert started is not None and cluster.cluster_id == started["cluster_id"]


@pytest.mark.slow
def test_cluster_id_is_kept_across_restarts(tmp_path: Path) -> None:
    ids = []
    for _ in range(2):
        server = ServerProcess(tmp_path / "data").start()
        try:
            admin = admin_for(server)
            ids.append(admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT).cluster_id)
        finally:
            assert server.stop() == 0
    assert ids[0] and ids[0] == ids[1]
    # and a new log directory gets a new one
    server = ServerProcess(tmp_path / "other").start()
    try:
        other_admin = admin_for(server)  # keep a reference: the futures need a live client
        fresh = other_admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
        assert fresh.cluster_id != ids[0]
    finally:
        server.stop()


def test_describe_broker_configs(admin: AdminClient) -> None:
    resource = ConfigResource(ResourceType.BROKER, "1")
    configs = admin.describe_configs([resource], request_timeout=TIMEOUT)[resource].result(
        TIMEOUT)
    assert configs["num.partitions"].value == "1"
    assert configs["num.partitions"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["group.consumer.heartbeat.interval.ms"].value == "5000"
    # overridden on the command line by the harness
    assert configs["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["auto.create.topics.enable"].value == "true"


def test_describe_configs_of_a_missing_topic_fails(admin: AdminClient) -> None:
    # (librdkafka sends a BROKER resource to that broker, so "another broker" is tested raw.)
    missing = ConfigResource(ResourceType.TOPIC, unique("nope"))
    error = error_of(admin.describe_configs([missing], request_timeout=TIMEOUT)[missing])
    assert error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.slow
def test_static_broker_override_and_auto_create_off(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {"auto.create.topics.enable": "false",
                                               "num.partitions": "4",
                                               "broker.rack": "rack-a"}).start()
    try:
        admin = admin_for(server)
        resource = ConfigResource(ResourceType.BROKER, "1")
        configs = admin.describe_configs([resource], request_timeout=TIMEOUT)[resource].result(
            TIMEOUT)
        for key, value in (("num.partitions", "4"), ("auto.create.topics.enable", "false"),
                           ("broker.rack", "rack-a")):
            assert configs[key].value == value
            assert configs[key].source == ConfigSource.STATIC_BROKER_CONFIG.value
        # the default number of partitions applies to -1
        name = unique("four")
        create(admin, NewTopic(name))[name].result(TIMEOUT)
        assert len(admin.list_topics(name, timeout=TIMEOUT).topics[name].partitions) == 4
        cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
        assert cluster.nodes[0].rack == "rack-a"
        # asking for an unknown topic does not create it
        missing = unique("not-auto")
        found = admin.list_topics(missing, timeout=TIMEOUT).topics[missing]
        assert found.error is not None and found.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        wait_until(lambda: missing not in topic_names(admin), timeout=2)
    finally:
        server.stop()
