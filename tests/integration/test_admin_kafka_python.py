"""kafka-python 3.0.12's KafkaAdminClient: topics, cluster, configs and coordinators.

kafka-python infers a broker version from the ApiVersions table; with no Produce/Fetch/ListOffsets
advertised it guesses 1.0, so its admin client insists on explicit partition and replication
counts (it refuses -1 client-side). Requests still go out at the negotiated versions (v7 etc.).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import kafka.errors as Errors
import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions

import protocol
from protocol import ErrorCode
from tests.harness import ServerProcess
from tests.integration.conftest import WireClient, kio_class


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def spec(partitions: int = 1, replication: int = 1, **extra: object) -> dict:
    return {"num_partitions": partitions, "replication_factor": replication, **extra}


@pytest.fixture(scope="module")
def admin(shared_server: ServerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=shared_server.bootstrap,
                              request_timeout_ms=10000, client_id="kp-admin-test")
    try:
        yield client
    finally:
        client.close()


def result_for(response: dict, name: str) -> dict:
    return next(t for t in response["topics"] if t["name"] == name)


# --- create -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_create_list_describe(admin: KafkaAdminClient) -> None:
    name = unique("kp-created")
    response = admin.create_topics({name: spec(3)})
    created = result_for(response, name)
    assert created["error_code"] == 0
    assert created["num_partitions"] == 3 and created["replication_factor"] == 1
    assert name in admin.list_topics()
    [described] = admin.describe_topics([name])
    assert described["error_code"] == 0 and not described["is_internal"]
    assert [p["partition_index"] for p in described["partitions"]] == [0, 1, 2]
    for partition in described["partitions"]:
        assert partition["leader_id"] == 1
        assert partition["replica_nodes"] == [1] and partition["isr_nodes"] == [1]
    # the id CreateTopics returned is the one Metadata shows, every time
    assert described["topic_id"] == created["topic_id"]
    assert admin.describe_topics([name])[0]["topic_id"] == created["topic_id"]


def test_create_with_configs_returns_them(admin: KafkaAdminClient) -> None:
    name = unique("kp-configured")
    response = admin.create_topics({name: spec(1, configs={"retention.ms": "1000",
                                                           "max.message.bytes": "2048"})})
    configs = result_for(response, name)["configs"]
    assert configs["retention.ms"]["value"] == "1000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["max.message.bytes"]["value"] == "2048"
    assert configs["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)],
                                       config_filter="all")["topic"][name]
    assert described["retention.ms"]["value"] == "1000"
    assert described["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert described["segment.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert described["retention.ms"]["config_type"] == "LONG"


def test_validate_only(admin: KafkaAdminClient) -> None:
    name = unique("kp-validate")
    response = admin.create_topics({name: spec(2)}, validate_only=True)
    assert result_for(response, name)["error_code"] == 0
    assert result_for(response, name)["num_partitions"] == 2
    assert name not in admin.list_topics()


def test_duplicate_create(admin: KafkaAdminClient) -> None:
    name = unique("kp-dup")
    admin.create_topics({name: spec()})
    with pytest.raises(Errors.TopicAlreadyExistsError):
        admin.create_topics({name: spec()})


def test_errors_per_topic_in_one_request(admin: KafkaAdminClient) -> None:
    good, bad_name, rf3, bad_config = (unique("kp-ok"), "kp bad name", unique("kp-rf3"),
                                       unique("kp-cfg"))
    response = admin.create_topics({
        good: spec(), bad_name: spec(), rf3: spec(1, 3),
        bad_config: spec(1, configs={"no.such.config": "x"}),
    }, raise_errors=False)
    assert result_for(response, good)["error_code"] == 0
    assert result_for(response, bad_name)["error_code"] == Errors.InvalidTopicError.errno
    assert result_for(response, rf3)["error_code"] == Errors.InvalidReplicationFactorError.errno
    assert result_for(response, bad_config)["error_code"] == Errors.InvalidConfigurationError.errno
    assert set(admin.list_topics()) >= {good}
    assert not {bad_name, rf3, bad_config} & set(admin.list_topics())


def test_invalid_name_raises(admin: KafkaAdminClient) -> None:
    with pytest.raises(Errors.InvalidTopicError):
        admin.create_topics({"x" * 250: spec()})


def test_zero_partitions_is_invalid(admin: KafkaAdminClient) -> None:
    with pytest.raises(Errors.InvalidPartitionsError):
        admin.create_topics({unique("kp-zero"): spec(0)})


# --- delete and partitions --------------------------------------------------------------------
def test_delete_then_unknown(admin: KafkaAdminClient) -> None:
    name = unique("kp-deleted")
    admin.create_topics({name: spec()})
    response = admin.delete_topics([name])
    assert response["topics"][0]["error_code"] == 0
    assert name not in admin.list_topics()
    with pytest.raises(Errors.UnknownTopicOrPartitionError):
        admin.delete_topics([name])


def test_add_partitions(admin: KafkaAdminClient) -> None:
    name = unique("kp-grow")
    admin.create_topics({name: spec(1)})
    admin.create_partitions({name: NewPartitions(6)})
    [described] = admin.describe_topics([name])
    assert len(described["partitions"]) == 6
    with pytest.raises(Errors.InvalidPartitionsError):
        admin.create_partitions({name: NewPartitions(2)})
    with pytest.raises(Errors.InvalidPartitionsError):
        admin.create_partitions({name: NewPartitions(6)})
    admin.create_partitions({name: NewPartitions(8)}, validate_only=True)
    assert len(admin.describe_topics([name])[0]["partitions"]) == 6


def test_add_partitions_with_assignments(admin: KafkaAdminClient) -> None:
    name = unique("kp-assign")
    admin.create_topics({name: spec(1)})
    admin.create_partitions({name: NewPartitions(3, [[1], [1]])})
    assert len(admin.describe_topics([name])[0]["partitions"]) == 3
    with pytest.raises(Errors.InvalidReplicationAssignmentError):
        admin.create_partitions({name: NewPartitions(5, [[1]])})  # one assignment for two
    with pytest.raises(Errors.InvalidReplicationAssignmentError):
        admin.create_partitions({name: NewPartitions(4, [[2]])})  # no broker 2


# --- cluster, configs and coordinators --------------------------------------------------------
def test_describe_cluster(admin: KafkaAdminClient, shared_server: ServerProcess) -> None:
    cluster = admin.describe_cluster()
    assert cluster["controller_id"] == 1
    started = shared_server.event("started")
    assert started is not None and cluster["cluster_id"] == started["cluster_id"]
    assert cluster["brokers"] == [{"broker_id": 1, "host": "127.0.0.1",
                                   "port": shared_server.port, "rack": None,
                                   "is_fenced": False}]


def test_describe_broker_configs(admin: KafkaAdminClient) -> None:
    broker = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")],
                                    config_filter="all")["broker"]["1"]
    assert broker["node.id"]["value"] == "1"
    assert broker["node.id"]["config_source"] == "DEFAULT_CONFIG"
    assert broker["log.dirs"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert broker["group.consumer.session.timeout.ms"]["value"] == "45000"
    assert broker["socket.request.max.bytes"]["value"] == "104857600"
    assert broker["socket.request.max.bytes"]["read_only"] is True
    # only the named keys when some are asked for: describing reads only the keys, and
    # kafka-python names a key alone with a None value (its stubs allow only str values)
    keys = {"num.partitions": None}
    named = ConfigResource(ConfigResourceType.BROKER, "1", keys)  # type: ignore[arg-type]  # keys only
    some = admin.describe_configs([named], config_filter="all")["broker"]["1"]
    assert set(some) == {"num.partitions"}


def test_describe_configs_of_missing_topic_is_empty(admin: KafkaAdminClient) -> None:
    # kafka-python drops per-resource errors here; the raw tests below check the error code.
    missing = unique("kp-none")
    assert admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, missing)],
                                  config_filter="all") == {"topic": {missing: {}}}


def test_find_coordinator_batched(admin: KafkaAdminClient) -> None:
    # FindCoordinator v4+ with several keys in one request: every group lives on node 1.
    groups = [unique("group") for _ in range(5)]
    # private API: the admin client has no public batched FindCoordinator
    manager = admin._manager  # type: ignore[attr-defined]  # private: not in the stubs
    find = admin._find_coordinator_ids  # type: ignore[attr-defined]  # private: not in the stubs
    assert manager.run(find, groups) == dict.fromkeys(groups, 1)


def test_list_groups_answers(admin: KafkaAdminClient) -> None:
    assert isinstance(admin.list_groups(), list)


# --- raw requests: the versions and cases the clients above do not send -----------------------
def find_request(version: int, **fields: object):
    return protocol.make(kio_class("find_coordinator", version, "request",
                                   "FindCoordinatorRequest"), **fields)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_raw_find_coordinator_single_key(wire: WireClient, shared_server: ServerProcess,
                                         version: int) -> None:
    response = wire.request(find_request(version, key="my-group", key_type=0))
    assert response.error_code == ErrorCode.none
    assert (response.node_id, response.host, response.port) == (1, "127.0.0.1",
                                                                shared_server.port)


@pytest.mark.parametrize("version", [1, 3])
def test_raw_find_coordinator_transaction_key_is_this_node(wire: WireClient,
                                                           shared_server: ServerProcess,
                                                           version: int) -> None:
    response = wire.request(find_request(version, key="txn", key_type=1))
    assert response.error_code == ErrorCode.none
    assert (response.node_id, response.port) == (1, shared_server.port)


@pytest.mark.parametrize("version", [4, 5, 6])
def test_raw_find_coordinator_batched(wire: WireClient, shared_server: ServerProcess,
                                      version: int) -> None:
    keys = ("g-a", "g-b", "", "g-c")
    response = wire.request(find_request(version, key_type=0, coordinator_keys=keys))
    assert [c.key for c in response.coordinators] == list(keys)
    for coordinator in response.coordinators:
        assert coordinator.error_code == ErrorCode.none
        assert (coordinator.node_id, coordinator.host, coordinator.port) == (
            1, "127.0.0.1", shared_server.port)


def test_raw_find_coordinator_v6_share_keys(wire: WireClient) -> None:
    keys = ("group:AAAAAAAAAAAAAAAAAAAAAA:0", "not-a-share-key")
    response = wire.request(find_request(6, key_type=2, coordinator_keys=keys))
    good, bad = response.coordinators
    assert good.error_code == ErrorCode.none and good.node_id == 1
    assert bad.error_code == ErrorCode.invalid_request and bad.node_id == -1


def test_raw_find_coordinator_v4_empty_batch(wire: WireClient) -> None:
    assert wire.request(find_request(4, key_type=0, coordinator_keys=())).coordinators == ()


def describe_configs_request(version: int, *resources: tuple[int, str, tuple[str, ...] | None]):
    resource = kio_class("describe_configs", version, "request", "DescribeConfigsResource")
    request = kio_class("describe_configs", version, "request", "DescribeConfigsRequest")
    return protocol.make(request, include_synonyms=True, include_documentation=True,
                         resources=tuple(protocol.make(resource, resource_type=t, resource_name=n,
                                                       configuration_keys=k)
                                         for t, n, k in resources))


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_raw_describe_configs_errors_per_resource(wire: WireClient, version: int) -> None:
    missing = unique("raw-missing")
    response = wire.request(describe_configs_request(
        version, (4, "7", None), (2, missing, None), (2, "bad name", None), (3, "x", None),
        (4, "1", ("num.partitions", "no.such.key")), (4, "", None)))
    other, topic, bad, unsupported, broker, default = response.results
    assert other.error_code == ErrorCode.invalid_request
    assert topic.error_code == ErrorCode.unknown_topic_or_partition
    assert bad.error_code == ErrorCode.invalid_topic_exception
    assert unsupported.error_code == ErrorCode.invalid_request
    assert broker.error_code == ErrorCode.none
    assert [(c.name, c.value) for c in broker.configs] == [("num.partitions", "1")]
    assert default.error_code == ErrorCode.none and default.configs == ()
    if version >= 1:
        assert broker.configs[0].synonyms[0].name == "num.partitions"
    if version >= 3:
        assert broker.configs[0].documentation


def test_raw_describe_cluster_rejects_controller_endpoint(wire: WireClient) -> None:
    request = kio_class("describe_cluster", 2, "request", "DescribeClusterRequest")
    response = wire.request(protocol.make(request, endpoint_type=2))
    assert response.error_code == ErrorCode.unsupported_endpoint_type
