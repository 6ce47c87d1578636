"""A group's consumers and an idempotent producer through a cluster's failovers (issue 35's
done-when): with 3 brokers and a topic replicated to all of them, real clients (confluent-kafka
in a classic and in a consumer-protocol group, kafka-python, aiokafka) keep consuming and
committing while the test

(a) moves their group's coordinator to another broker, then drops every connection of that
    broker,
(b) moves every partition's leader to one broker (not the coordinator) and stops that broker,
(c) stops the broker that is then their coordinator (one broker is left running),
(d) starts both brokers again, and makes them leaders and the group's coordinator again;

after each step the producer has more records acknowledged and each of the group's two members
has read more and had a commit acknowledged. At the end nothing acknowledged is lost, the
producer stored nothing twice and left no gap, and no member read a record again from below a
commit acknowledged for its partition (by either member); the group's timeline shows each
coordinator move and the metrics count every move.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kafka_coordinator import Coordinator
from tests.integration.cluster_clients import (
    CONSUMERS,
    STEP_TIMEOUT_S,
    Faults,
    Journal,
    SequenceProducer,
    check_log,
    check_reads,
    moves_counted,
    progressed,
    read_topic,
    wait_for,
)

TOPIC = "orders"
PARTITIONS = 3
MEMBERS = 2
CONSUMER_GROUP_TIMINGS = {
    # The consumer-protocol group's (KIP-848; a classic group's are its clients'): Kafka's
    # defaults, not the test profile's 500 ms and 6 s. librdkafka (2.16) times a
    # ConsumerGroupHeartbeat out after one heartbeat interval (the one the coordinator last
    # answered with; it checks once a second), and the heartbeat it sends after a timed-out one
    # is not a full request (no owned partitions, no subscription: it sends one only after a
    # coordinator error). When the lost answer was the one telling a member to revoke a
    # partition for a member that just joined, the coordinator, as Kafka's does, repeats the
    # assignment only on a full request or a change: the member never revokes it, the new one
    # waits for it and reads nothing until the member's rebalance timeout
    # (max.poll.interval.ms, 300 s). On a machine made 3-4x slower, heartbeat answers took up
    # to 1.7 s (a tenth of them over 0.4 s); one lost that way left a member on its first epoch
    # through the whole 60 s wait for the group to form. A 5 s interval outlasts them and costs
    # at most one interval, once: the first member hears of the second at its next heartbeat.
    # The session stays well above the interval, as Kafka requires and defaults to.
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.session.timeout.ms": "45000",
}


def create_topic(bootstrap: str, topic: str, partitions: int, replicas: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replicas)])[topic].result(15)


def failovers(server: Coordinator, faults: Faults,
              step: Callable[[str, float], None]) -> list[tuple[int, int]]:
    """(a)-(d); ``step(name, at)`` after each waits for the clients to carry on. The group's
    coordinator moves, (from, to)."""
    moves = []
    coordinator = faults.coordinator()
    target = next(b for b in server.brokers.running() if b != coordinator)
    server.move_coordinator(faults.group, target)
    wait_for(lambda: faults.coordinator() == target, STEP_TIMEOUT_S, "the coordinator to move")
    moves.append((coordinator, target))
    step("coordinator moved", time.monotonic())

    server.brokers.disconnect(target)  # every connection of the coordinator's broker drops
    step("coordinator's connections dropped", time.monotonic())

    coordinator = faults.coordinator()
    leader = next(b for b in server.brokers.running() if b != coordinator)
    for partition in range(PARTITIONS):
        server.move_leader(faults.topic, partition, leader)
    faults.wait_for_leaders(lambda leaders: set(leaders.values()) == {leader},
                            f"broker {leader} to lead every partition")
    server.brokers.stop(leader)
    faults.wait_for_leaders(lambda leaders: leader not in leaders.values(),
                            f"the partitions to move off broker {leader}")
    step("partitions' leader stopped", time.monotonic())

    coordinator = faults.coordinator()
    assert coordinator != leader
    server.brokers.stop(coordinator)
    assert len(server.brokers.running()) == 1
    moves.append((coordinator, wait_for(
        lambda: (found if (found := faults.coordinator()) != coordinator else None),
        STEP_TIMEOUT_S, "the coordinator to move off the stopped broker")))
    step("coordinator stopped", time.monotonic())

    server.brokers.start(leader)
    server.brokers.start(coordinator)
    assert server.brokers.running() == [1, 2, 3]
    # they lead nothing until moves make them leaders again (as after a preferred leader
    # election): the clients go back to them
    last = faults.coordinator()
    server.move_leader(faults.topic, 0, leader)
    server.move_leader(faults.topic, 1, coordinator)
    server.move_coordinator(faults.group, leader)
    moves.append((last, leader))
    faults.wait_for_leaders(lambda leaders: leaders[0] == leader and leaders[1] == coordinator,
                            "the started brokers to lead again")
    step("brokers started", time.monotonic())
    return moves


@pytest.mark.slow
@pytest.mark.kafka_coordinator(brokers=3, config=CONSUMER_GROUP_TIMINGS)
@pytest.mark.parametrize("client", list(CONSUMERS))
def test_a_group_consumes_and_commits_through_the_failovers(
        kafka_coordinator: Coordinator, client: str) -> None:
    server = kafka_coordinator
    bootstrap = server.bootstrap_servers
    assert len(bootstrap.split(",")) == 3
    create_topic(bootstrap, TOPIC, PARTITIONS, 3)
    group = f"billing-{client}"
    producer = SequenceProducer(bootstrap, TOPIC, PARTITIONS)
    journal = Journal()  # the group's: what its members read and had committed, in order
    members = [CONSUMERS[client](bootstrap, TOPIC, group, journal) for _ in range(MEMBERS)]
    producer.start()
    for member in members:
        member.start()
    try:
        progressed(members, producer, since=time.monotonic())  # the group formed
        faults = Faults(server, TOPIC, group)
        steps: list[str] = []

        def step(name: str, at: float) -> None:
            progressed(members, producer, since=at)
            steps.append(name)

        moves = failovers(server, faults, step)
        assert len(steps) == 5
        producer.stop()
        acked = set(producer.acked)
        wait_for(lambda: journal.distinct_values() >= acked, STEP_TIMEOUT_S,
                 "the group to read every acknowledged record")
        settled = time.monotonic()
        wait_for(lambda: all(m.last_commit_at > settled for m in members), STEP_TIMEOUT_S,
                 "a last commit of each member")
    finally:
        producer.stopping.set()
        for member in members:
            member.stop()
    check_reads(journal)
    check_log(read_topic(bootstrap, TOPIC, PARTITIONS), acked, PARTITIONS)
    # the group's timeline shows each move of its coordinator
    shown = [(event["from"], event["to"])
             for event in server.timeline(group).of_kind("coordinator-moved")]
    assert shown == moves, shown
    counted = moves_counted(server)  # and the metrics count every move
    assert counted[("coordinator", "moved")] >= 1
    assert counted[("coordinator", "broker-stopped")] >= 1
    assert counted[("partition-leader", "moved")] >= 1
    assert counted[("partition-leader", "broker-stopped")] >= PARTITIONS
    assert counted[("broker-stopped", "stopped")] == counted[("broker-started", "started")] == 2
