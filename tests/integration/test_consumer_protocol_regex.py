"""Regex subscriptions (KIP-848 ``SubscribedTopicRegex``) with confluent-kafka
``group.protocol=consumer`` consumers (librdkafka sends a subscription starting with ``^`` as
a regex), and over the raw wire."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

import protocol
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class
from tests.integration.test_consumer_protocol import OVERRIDES, Group, create_topic, settled


@pytest.fixture(scope="module")
def regex_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the module: each test has its own topics, groups and a regex no other
    test's topic matches, and none restarts the server or reads its log."""
    with ServerProcess(tmp_path_factory.mktemp("regex") / "data", OVERRIDES) as process:
        yield process


@pytest.mark.slow
def test_regex_subscription_picks_up_a_new_matching_topic(regex_server: ServerProcess) -> None:
    admin = create_topic(regex_server.bootstrap, "regex-topic-a", 2)
    create_topic(regex_server.bootstrap, "unrelated", 3)
    group = Group(regex_server.bootstrap, "regexers", ["^regex-topic-.*"])
    try:
        group.add()
        group.add()
        first = {("regex-topic-a", p) for p in range(2)}
        wait_until(lambda: settled(group, first, 2), 30, message="regex-topic-a shared by two")
        create_topic(regex_server.bootstrap, "regex-topic-b", 4)
        both = first | {("regex-topic-b", p) for p in range(4)}
        wait_until(lambda: settled(group, both, 2), 30,
                   message="the new matching topic assigned")
        group.check_never_doubled(regex_server.log_dir)
        described = admin.describe_consumer_groups(["regexers"])["regexers"].result(10)
        seen = sorted((tp.topic, tp.partition) for m in described.members
                      for tp in m.assignment.topic_partitions)
        assert seen == sorted(both)
    finally:
        group.stop_all()


def _heartbeat(wire: WireClient, group: str, member: str, epoch: int,
               regex: str | None = None) -> Any:
    request = kio_class("consumer_group_heartbeat", 1, "request", "ConsumerGroupHeartbeatRequest")
    return wire.request(protocol.make(
        request, group_id=group, member_id=member, member_epoch=epoch,
        rebalance_timeout=datetime.timedelta(milliseconds=30000 if epoch == 0 else -1),
        subscribed_topic_names=None, subscribed_topic_regex=regex,
        topic_partitions=() if epoch == 0 else None))


def test_regex_on_the_wire(regex_server: ServerProcess) -> None:
    create_topic(regex_server.bootstrap, "wire-regex-1", 3)
    create_topic(regex_server.bootstrap, "wire-other", 1)
    with WireClient(regex_server.bootstrap) as wire:
        wait_until(lambda: _heartbeat(wire, "wired", "probe", -1).error_code
                   != protocol.ErrorCode.coordinator_load_in_progress, 20,
                   message="the coordinator partition to load")
        bad = _heartbeat(wire, "wired", "m", 0, regex="(unclosed")
        assert bad.error_code == protocol.ErrorCode.invalid_regular_expression  # 128
        assert "not a valid regular expression" in bad.error_message
        joined = _heartbeat(wire, "wired", "m", 0, regex="wire-regex-.*")
        assert joined.error_code == 0 and joined.member_epoch == 2
        # resolved off the request path (issue 24): nothing matched in the answer to the join,
        # which asks the member back soon for what the resolution brings
        assert joined.assignment is not None and not joined.assignment.topic_partitions
        assert joined.heartbeat_interval < datetime.timedelta(milliseconds=500)
        got = wait_until(lambda: _heartbeat(wire, "wired", "m", 2).assignment, 20,
                         message="the matched topic's partitions")
        assert sorted(len(tp.partitions) for tp in got.topic_partitions) == [3]


def test_named_topics_are_assigned_before_the_regex_matches_as_kafka_does(
        regex_server: ServerProcess) -> None:
    """librdkafka's 0045-subscribe_update (do_test_resubscribe_with_regex) asserts this order
    against Kafka: the literal topic's partitions in one assignment, the regex's at a later
    heartbeat, the regex being resolved asynchronously."""
    from confluent_kafka import Consumer

    create_topic(regex_server.bootstrap, "topic_regex1", 4)
    create_topic(regex_server.bootstrap, "topic_regex2", 4)
    create_topic(regex_server.bootstrap, "topic_a", 2)
    assigned: list[set[tuple[str, int]]] = []
    consumer = Consumer({"bootstrap.servers": regex_server.bootstrap, "group.id": "literal-first",
                         "group.protocol": "consumer", "enable.auto.commit": False})
    try:
        consumer.subscribe(["^.*topic_regex.*", "topic_a"], on_assign=lambda _c, parts: (
            assigned.append({(p.topic, p.partition) for p in parts}) if parts else None))

        def everything() -> bool:
            consumer.poll(0.05)
            return len(set().union(*assigned)) == 10

        wait_until(everything, 30, interval=0.0, message="all ten partitions")
    finally:
        consumer.close()
    assert assigned[0] == {("topic_a", 0), ("topic_a", 1)}, assigned
    assert set().union(*assigned[1:]) == {(t, p) for t in ("topic_regex1", "topic_regex2")
                                          for p in range(4)}
