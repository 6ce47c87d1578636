"""A 3-broker cluster as admin clients see it (issue 35): a topic replicated to 3 brokers is
created and described as Kafka describes one (a leader among its replicas, replicas and ISR of 3
distinct brokers, the ISR shrinking while a replica's broker is stopped and growing back when it
starts), a replication factor above the broker count gets INVALID_REPLICATION_FACTOR, and the
control routes refuse bad input with a clear 400 or 404; ``kafka_coordinator`` lists every
broker and a restart brings all of them back on their ports."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_coordinator import Coordinator
from kafka_coordinator.control import ControlError
from tests.integration.cluster_clients import STEP_TIMEOUT_S, wait_for

pytestmark = pytest.mark.kafka_coordinator(brokers=3)


def admin(server: Coordinator) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap_servers, "log_level": 0})


def partitions(client: AdminClient, topic: str) -> list[tuple[int, list[int], list[int]]]:
    """(leader, replicas, isr) of each partition, as DescribeTopics answers."""
    [description] = client.describe_topics(TopicCollection([topic])).values()
    return [(p.leader.id, [n.id for n in p.replicas], [n.id for n in p.isr])
            for p in description.result(10).partitions]


def test_a_topic_replicated_to_three_brokers(kafka_coordinator: Coordinator) -> None:
    server = kafka_coordinator
    client = admin(server)
    cluster = client.describe_cluster().result(10)
    assert sorted(node.id for node in cluster.nodes) == [1, 2, 3]
    assert cluster.controller is not None and cluster.controller.id in (1, 2, 3)
    assert sorted(f"{n.host}:{n.port}" for n in cluster.nodes) == \
        sorted(server.bootstrap_servers.split(","))

    client.create_topics([NewTopic("ledger", 6, 3)])["ledger"].result(15)
    described = partitions(client, "ledger")
    assert len(described) == 6
    for leader, replicas, isr in described:
        assert sorted(replicas) == [1, 2, 3] and sorted(isr) == [1, 2, 3]
        assert leader == replicas[0]  # the preferred replica leads
    assert len({leader for leader, _, _ in described}) == 3  # leadership spread over brokers

    metadata = client.list_topics("ledger", timeout=10).topics["ledger"]
    assert {p: sorted(m.replicas) for p, m in metadata.partitions.items()} == \
        {p: [1, 2, 3] for p in range(6)}

    server.brokers.stop(2)
    wait_for(lambda: all(2 not in isr and 2 in replicas and leader != 2
                         for leader, replicas, isr in partitions(client, "ledger")),
             STEP_TIMEOUT_S, "broker 2 to leave every ISR and lead nothing")
    server.brokers.start(2)
    wait_for(lambda: all(sorted(isr) == [1, 2, 3] for _, _, isr in partitions(client, "ledger")),
             STEP_TIMEOUT_S, "broker 2 back in every ISR")


@pytest.mark.slow
def test_a_replication_factor_above_the_broker_count_is_refused(
        kafka_coordinator: Coordinator) -> None:
    client = admin(kafka_coordinator)
    with pytest.raises(KafkaException) as refused:
        client.create_topics([NewTopic("too-many", 1, 4)])["too-many"].result(15)
    error: KafkaError = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_REPLICATION_FACTOR, error
    client.create_topics([NewTopic("two", 2, 2)])["two"].result(15)
    assert all(len(replicas) == len(isr) == 2 for _, replicas, isr in partitions(client, "two"))


@pytest.mark.slow
def test_the_control_routes_refuse_bad_input(kafka_coordinator: Coordinator) -> None:
    server = kafka_coordinator
    brokers = server.brokers
    client = admin(server)
    client.create_topics([NewTopic("orders", 1, 3)])["orders"].result(15)
    for call in (lambda: brokers.stop(9), lambda: brokers.start(9),
                 lambda: brokers.delay(9, 100, seconds=1), lambda: brokers.disconnect(9),
                 lambda: server.move_coordinator("g", 9),
                 lambda: server.move_leader("orders", 0, 9)):
        with pytest.raises(ControlError) as unknown:
            call()
        assert unknown.value.status in (400, 404) and "9" in unknown.value.message
    with pytest.raises(ControlError) as no_partition:
        server.move_leader("orders", 5, 2)
    assert no_partition.value.status in (400, 404)
    with pytest.raises(ControlError) as no_topic:
        server.move_leader("no-such-topic", 0, 2)
    assert no_topic.value.status in (400, 404)
    with pytest.raises(ControlError) as bad_delay:
        brokers.control.post("/brokers/2/delay", {"delay_ms": "soon"})
    assert bad_delay.value.status == 400

    assert server.move_coordinator("team/a b", 2)["group"] == "team/a b"  # any group name

    brokers.stop(2)
    brokers.stop(3)
    with pytest.raises(ControlError) as last:
        brokers.stop(1)
    assert last.value.status == 400 and "last" in last.value.message
    with pytest.raises(ControlError) as to_stopped:
        server.move_leader("orders", 0, 2)
    assert to_stopped.value.status == 400
    assert brokers.running() == [1]
    assert server.alive()  # none of it crashed the server
    brokers.start(2)
    brokers.start(3)
    assert brokers.running() == [1, 2, 3]


@pytest.mark.slow
def test_every_broker_is_listed_and_comes_back_after_a_restart(
        kafka_coordinator: Coordinator) -> None:
    server = kafka_coordinator
    listed = server.brokers.list()
    assert [entry["id"] for entry in listed] == [1, 2, 3]
    assert all(entry["state"] == "running" for entry in listed)
    ports = server.broker_ports
    assert sorted(ports) == [1, 2, 3] and len(set(ports.values())) == 3
    assert server.bootstrap_servers == ",".join(f"127.0.0.1:{ports[b]}" for b in (1, 2, 3))
    assert {entry["listener"] for entry in listed} >= set() and all(
        str(ports[entry["id"]]) in str(entry["listener"]) for entry in listed)

    server.brokers.stop(3)
    server.restart()  # kill -9: every broker comes back, on the port it had
    assert server.broker_ports == ports
    assert server.brokers.running() == [1, 2, 3]
    for node, port in ports.items():  # each broker answers on its own port
        one = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0})
        assert node in {n.id for n in one.describe_cluster().result(10).nodes}


@pytest.mark.slow
def test_a_delayed_broker_answers_late_and_only_it(kafka_coordinator: Coordinator) -> None:
    server = kafka_coordinator
    ports = server.broker_ports

    def metadata_s(node: int) -> float:
        """A first Metadata answer (after ApiVersions) through this broker alone."""
        one = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports[node]}", "log_level": 0})
        started = time.monotonic()
        one.list_topics(timeout=10)
        return time.monotonic() - started

    server.brokers.delay(2, 400, seconds=30)
    assert server.brokers.get(2)["delay_ms"] > 0 and server.brokers.get(3)["delay_ms"] == 0
    assert metadata_s(2) >= 0.4
    server.brokers.delay(2, 0)
    wait_for(lambda: server.brokers.get(2)["delay_ms"] == 0, STEP_TIMEOUT_S,
             "broker 2's delay to end")
