"""Share groups (KIP-932) end to end: confluent-kafka ``ShareConsumer``s (explicit
acknowledgement, ``commit_sync``, each on its own thread or in a child process) and an acks=all
``Producer`` over TCP against a real server process; raw requests where the clients do not
reach (``share_clients``).

1. three consumers on one partition all get records, none is held by two at once, each is
   accepted exactly once;
2. RELEASE redelivers with delivery count + 1, REJECT archives, a record released
   ``group.share.delivery.count.limit`` times is archived;
3. a consumer killed with SIGKILL: its records go to another consumer when their acquisition
   lock expires, not before;
4. the server killed with SIGKILL mid-stream and restarted on its store: no acceptance the
   broker confirmed is undone, no confirmed release is forgotten;
5. seed 000: target assignments at least ``group.share.assignment.interval.ms`` apart while
   members join at once, computed in the background executor;
6. ListGroups, ShareGroupDescribe, DescribeGroups, DeleteGroups, OffsetCommit/OffsetFetch on a
   share group;
7. malformed or out-of-turn ShareFetch/ShareAcknowledge/ShareGroupHeartbeat requests get
   Kafka's errors and the server keeps serving.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from protocol import ErrorCode
from tests.harness import ServerProcess, free_port, wait_until
from tests.integration.conftest import WireClient
from tests.integration.metrics_scenario import present, scrape, total
from tests.integration.share_clients import (
    Delivery,
    FetchTopics,
    Ledger,
    ShareChild,
    ShareWorker,
    assigned_members,
    create_topic,
    describe_groups,
    list_groups,
    produce,
    set_group_configs,
    share_acknowledge,
    share_config,
    share_fetch,
    share_group_describe,
    share_heartbeat,
)
from tests.integration.test_offsets_durability import dump

TOPIC = "queue"
GROUP = "share-group"
ACCEPT = int(AcknowledgeType.ACCEPT)

OVERRIDES = {
    # members heartbeat every 500 ms (Kafka's minimum is 5000): joins and new targets land fast
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "100",
}


class Servers:
    """Servers on one log dir; whatever is still running is stopped at the end."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[ServerProcess] = []

    def start(self, overrides: dict[str, str] | None = None) -> ServerProcess:
        process = ServerProcess(self.log_dir, {**OVERRIDES, **(overrides or {})}).start()
        self.started.append(process)
        return process

    def close(self) -> None:
        for process in self.started:
            try:
                process.stop()
            finally:
                process.kill()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    servers = Servers(tmp_path / "data")
    try:
        yield servers
    finally:
        servers.close()


def members_assigned(bootstrap: str, group: str, count: int, topic: str = TOPIC) -> bool:
    """The group has ``count`` members, each with every partition of ``topic`` (one)."""
    members = assigned_members(bootstrap, group)
    return len(members) == count and all(a.get(topic) == (0,) for a in members.values())


def close_all(workers: list[ShareWorker]) -> None:
    for worker in workers:
        worker.close()


def settled_group(bootstrap: str, group: str, members: int, partitions: int) -> bool:
    """``members`` members, each at the group epoch with partitions, every partition owned."""
    described = share_group_describe(bootstrap, group)
    if described.error_code != 0 or len(described.members) != members:
        return False
    owned = {p for m in described.members for tp in m.assignment.topic_partitions
             for p in tp.partitions}
    return (described.assignment_epoch == described.group_epoch
            and all(m.member_epoch == described.group_epoch and m.assignment.topic_partitions
                    for m in described.members)
            and owned == set(range(partitions)))


def release_some(offset: int, delivery_count: int) -> AcknowledgeType:
    """Every 10th record is released on its first delivery (so it may move to another
    consumer), everything else accepted."""
    if offset % 10 == 0 and delivery_count == 1:
        return AcknowledgeType.RELEASE
    return AcknowledgeType.ACCEPT


def acquired(response: Any) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count)
            for t in response.responses for p in t.partitions for r in p.acquired_records]


def partition_errors(response: Any, field: str = "error_code") -> list[ErrorCode]:
    return [ErrorCode(getattr(p, field)) for t in response.responses for p in t.partitions]


# --------------------------------------------------------------------------- 1. sharing
@pytest.mark.slow
def test_three_consumers_share_one_partition(servers: Servers) -> None:
    server = servers.start()
    bootstrap = server.bootstrap
    create_topic(bootstrap, TOPIC)
    # IncrementalAlterConfigs on the GROUP resource, before the group exists
    set_group_configs(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
    ledger = Ledger()
    conf = share_config(bootstrap, GROUP, **{"max.poll.records": 50})
    workers = [ShareWorker(f"c{i}", conf, [TOPIC], ledger, release_some).start()
               for i in range(3)]
    total = 3000
    accept = int(AcknowledgeType.ACCEPT)
    try:
        wait_until(lambda: members_assigned(bootstrap, GROUP, 3), 30,
                   message="three members sharing the partition")
        produce(bootstrap, TOPIC, total, per_flush=20)
        wait_until(lambda: len(ledger.committed_offsets(accept)) == total, 60, interval=0.1,
                   message="every record accepted")
    finally:
        close_all(workers)

    deliveries, acks = ledger.deliveries(), ledger.acks()
    assert not ledger.errors, ledger.errors[:5]
    assert all(a.ok for a in acks)
    per_consumer = Counter(d.consumer for d in deliveries)
    assert set(per_consumer) == {"c0", "c1", "c2"}, per_consumer
    # every record accepted exactly once; the released ones were delivered a second time
    # (delivery count 2), the others once
    assert sorted(a.offset for a in acks if a.ack_type == accept) == list(range(total))
    counts: dict[int, list[int]] = defaultdict(list)
    for d in sorted(deliveries, key=lambda d: d.received):
        counts[d.offset].append(d.delivery_count)
    assert all(counts[o] == ([1, 2] if o % 10 == 0 else [1]) for o in range(total))
    # no record held by two consumers at once: per offset, from its delivery until its
    # acknowledgement was sent, a consumer holds it; these spans never overlap
    sent = {(a.consumer, a.offset, a.ack_type): a.sent for a in acks}
    spans: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for d in deliveries:
        ack_type = int(release_some(d.offset, d.delivery_count))
        spans[d.offset].append((d.received, sent[(d.consumer, d.offset, ack_type)], d.consumer))
    for offset, held in spans.items():
        for (_s1, e1, c1), (s2, _e2, c2) in itertools.pairwise(sorted(held)):
            assert e1 <= s2, f"offset {offset} held by {c1} and {c2} at once"
    moved = sum(1 for held in spans.values() if len({c for _s, _e, c in held}) > 1)
    print(f"per consumer: {dict(per_consumer)}; {moved} released records moved to another "
          "consumer")


# --------------------------------------------------------------------------- 2. ack types
DELIVERY_LIMIT = 3
STEERED = 30


def steer(offset: int, delivery_count: int) -> AcknowledgeType:
    """Offsets 0-4 are always released; then up to STEERED by offset % 3: released once then
    accepted, rejected, accepted; later ones accepted."""
    if offset >= STEERED:
        return AcknowledgeType.ACCEPT
    if offset < 5:
        return AcknowledgeType.RELEASE
    if offset % 3 == 0:
        return AcknowledgeType.RELEASE if delivery_count == 1 else AcknowledgeType.ACCEPT
    return AcknowledgeType.REJECT if offset % 3 == 1 else AcknowledgeType.ACCEPT


def expected_counts(offset: int) -> list[int]:
    """The delivery counts ``steer`` leads to: a record released at the limit is archived."""
    if offset < 5:
        return list(range(1, DELIVERY_LIMIT + 1))
    return [1, 2] if offset % 3 == 0 else [1]


@pytest.mark.slow
def test_release_reject_and_the_delivery_count_limit(servers: Servers) -> None:
    server = servers.start({"group.share.delivery.count.limit": str(DELIVERY_LIMIT)})
    bootstrap = server.bootstrap
    create_topic(bootstrap, TOPIC)
    set_group_configs(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
    ledger = Ledger()
    worker = ShareWorker("c0", share_config(bootstrap, GROUP), [TOPIC], ledger, steer).start()
    steered, sentinels = STEERED, 10
    try:
        produce(bootstrap, TOPIC, steered)
        wanted = sum(len(expected_counts(o)) for o in range(steered))
        wait_until(lambda: len([a for a in ledger.acks() if a.ok]) >= wanted, 30,
                   message="every planned acknowledgement")
        # records produced after them are delivered only once nothing before them is
        # available any more (a fetch takes the lowest available offsets first)
        produce(bootstrap, TOPIC, sentinels, start=steered)
        wait_until(lambda: set(range(steered, steered + sentinels))
                   <= ledger.committed_offsets(), 30, message="the later records")
    finally:
        worker.close()

    assert not ledger.errors, ledger.errors[:5]
    counts: dict[int, list[int]] = defaultdict(list)
    for d in ledger.deliveries():
        counts[d.offset].append(d.delivery_count)
    for offset in range(steered):
        assert counts[offset] == expected_counts(offset), (offset, counts[offset])
    for offset in range(steered, steered + sentinels):
        assert counts[offset] == [1]
    assert all(a.ok for a in ledger.acks())
    # released at the limit, rejected: archived, never acknowledged as accepted
    accepted = ledger.committed_offsets(int(AcknowledgeType.ACCEPT))
    assert accepted == {o for o in range(steered + sentinels)
                        if o >= steered or (o >= 5 and o % 3 != 1)}


# --------------------------------------------------------------------------- 3. consumer kill
LOCK_MS = 5000


@pytest.mark.slow
def test_a_killed_consumers_records_wait_for_their_acquisition_lock(servers: Servers) -> None:
    server = servers.start({"group.share.record.lock.duration.ms": str(LOCK_MS),
                            "group.share.min.record.lock.duration.ms": "1000"})
    bootstrap = server.bootstrap
    create_topic(bootstrap, TOPIC)
    set_group_configs(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
    produce(bootstrap, TOPIC, 50)  # before the child joins: its first fetch takes them all
    child = ShareChild(bootstrap, GROUP, TOPIC)
    ledger = Ledger()
    worker: ShareWorker | None = None
    try:
        wait_until(child.received, 30, interval=0.005, message="the child to receive records")
        killed = child.kill()
        held = {r["offset"] for r in child.received()}
        assert held and held <= set(range(50))
        assert {r["delivery_count"] for r in child.received()} == {1}
        received_at = max(r["t"] for r in child.received())

        worker = ShareWorker("survivor", share_config(bootstrap, GROUP), [TOPIC],
                             ledger).start()
        # the killed member stays in the group until its session times out (45 s): two
        wait_until(lambda: members_assigned(bootstrap, GROUP, 2), 10,
                   message="the second consumer to be assigned the partition")
        ready = time.monotonic()

        def redelivered() -> bool:
            return held <= {d.offset for d in ledger.deliveries() if d.delivery_count == 2}

        wait_until(redelivered, LOCK_MS / 1000 + 10, interval=0.01,
                   message="the killed consumer's records to be redelivered")
    finally:
        if child.proc.poll() is None:
            child.kill()
        if worker is not None:
            worker.close()

    assert not ledger.errors, ledger.errors[:5]
    lock_s = LOCK_MS / 1000
    # the survivor was fetching well before the locks expired: records released early (at the
    # kill, or when the connection dropped) would have reached it before the lock duration
    assert ready - killed < lock_s - 1.5, (ready - killed)
    second = [d for d in ledger.deliveries() if d.offset in held]
    first_redelivery = min(d.received for d in second)
    after_kill = first_redelivery - killed
    print(f"held {len(held)} records; killed {killed - received_at:.3f}s after receiving them;"
          f" survivor ready {ready - killed:.3f}s after the kill; first redelivery "
          f"{after_kill:.3f}s after the kill (lock {lock_s}s)")
    assert {d.delivery_count for d in second} == {2}
    # the locks were taken a moment before the child received the records, and it was killed
    # a moment after
    assert killed - received_at < 0.2, killed - received_at
    assert first_redelivery - received_at >= lock_s - 0.1, first_redelivery - received_at
    assert after_kill >= lock_s - 0.25, after_kill
    assert after_kill <= lock_s + 3, after_kill
    # the survivor acknowledged them all
    assert held <= ledger.committed_offsets()


# --------------------------------------------------------------------------- 4. server kill
@pytest.mark.slow
def test_acknowledged_records_are_never_redelivered_after_a_server_kill(
        servers: Servers) -> None:
    overrides = {
        # a fixed port, so that the clients find the restarted server where they left it
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
        # a ShareSnapshot every 10 ShareUpdates: the restart replays snapshots and updates
        "share.coordinator.snapshot.update.records.per.snapshot": "10",
    }
    server = servers.start(overrides)
    bootstrap = server.bootstrap
    create_topic(bootstrap, TOPIC)
    set_group_configs(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
    total, sentinels = 4000, 10
    accept, release = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE)
    produce(bootstrap, TOPIC, total, per_flush=20)
    ledger = Ledger()
    conf = share_config(bootstrap, GROUP, **{"max.poll.records": 20})
    workers = [ShareWorker(f"c{i}", conf, [TOPIC], ledger, release_some).start()
               for i in range(2)]

    def accepts_attempted() -> set[int]:
        return {a.offset for a in ledger.acks() if a.ack_type == accept}

    try:
        wait_until(lambda: len(ledger.committed_offsets(accept)) >= 600, 30, interval=0.005,
                   message="consumers acknowledging")
        # a third member (raw requests) takes records and releases them, confirmed, just
        # before the kill: wherever they are then, their delivery was counted
        with WireClient(bootstrap) as raw:
            topic_id = share_group_describe(bootstrap, GROUP).members[0].assignment \
                .topic_partitions[0].topic_id
            taken = acquired(share_fetch(raw, GROUP, "raw-member", 0, {topic_id: {0: []}},
                                         max_records=20))
            assert taken, "the raw member acquired nothing"
            parked = {o: count for first, last, count in taken for o in range(first, last + 1)}
            response = share_acknowledge(raw, GROUP, "raw-member", 1, {topic_id: {0: [
                (first, last, (release,)) for first, last, _c in taken]}})
            assert partition_errors(response) == [ErrorCode.none], response
            server.kill()
        killed = time.monotonic()
        at_kill = len(ledger.committed_offsets(accept))
        assert at_kill < total, "the consumers were done before the kill"
        state = Counter(r["type"] for r in dump(servers.log_dir)
                        if r["key"].get("GroupId") == GROUP and r["value"] is not None)

        server = servers.start(overrides)
        wait_until(lambda: accepts_attempted() >= set(range(total)), 60, interval=0.1,
                   message="every record accepted after the restart")
        # a record whose acknowledgement failed is delivered again before later records
        produce(bootstrap, TOPIC, sentinels, start=total)
        wait_until(lambda: ledger.committed_offsets(accept) >= set(range(total, total + sentinels)),
                   30, message="the records produced after the restart")
    finally:
        close_all(workers)

    # what the restart replayed: snapshots and the updates after them
    assert state["ShareSnapshot"] >= 3 and state["ShareUpdate"] >= 10, state
    deliveries, acks = ledger.deliveries(), ledger.acks()

    # the heart of it: once the broker confirmed an acceptance, the record never came back,
    # to either consumer, before or after the restart ...
    accepted: dict[int, float] = {}
    for a in acks:
        if a.ok and a.ack_type == accept:
            accepted[a.offset] = min(a.committed, accepted.get(a.offset, a.committed))
    again = [d for d in deliveries if d.offset in accepted and d.received > accepted[d.offset]]
    assert not again, again[:5]
    # ... and once it confirmed a release, the delivery it counted stayed counted: the next
    # delivery has a higher delivery count
    releases = [(a.offset, a.committed, a.delivery_count) for a in acks
                if a.ok and a.ack_type == release]
    releases += [(o, killed, count) for o, count in parked.items()]
    by_offset: dict[int, list[Delivery]] = defaultdict(list)
    for d in deliveries:
        by_offset[d.offset].append(d)
    recounted = [(d, count) for o, confirmed, count in releases for d in by_offset[o]
                 if d.received > confirmed and d.delivery_count <= count]
    assert not recounted, recounted[:5]
    # everything was accepted; an acceptance not confirmed had its commit cut by the kill (the
    # broker may have written it before dying: then it is rightly not delivered again)
    unconfirmed = set(range(total + sentinels)) - set(accepted)
    cut = {a.offset for a in acks if not a.ok and abs(a.committed - killed) < 20}
    assert unconfirmed <= cut, sorted(unconfirmed - cut)[:10]
    after = [d for d in deliveries if d.received > killed]
    assert after
    released_before = {o for o, t, _c in releases if t <= killed}
    print(f"{at_kill} accepted at the kill, {len(released_before)} released; "
          f"{len(after)} deliveries after it; {len(cut)} acknowledgements cut by the kill, "
          f"{len(unconfirmed)} never confirmed; delivery counts after the restart of records "
          "released before: "
          f"{dict(Counter(d.delivery_count for d in after if d.offset in released_before))}; "
          f"store at the kill {dict(state)}")


# --------------------------------------------------------------------------- 5. seed 000
@pytest.mark.slow
def test_share_targets_are_batched_and_computed_in_the_background(servers: Servers) -> None:
    port = free_port()
    server = servers.start({"group.share.assignment.interval.ms": "1000",
                            "group.share.assignor.offload.enable": "true",
                            "metrics.listener": f"http://127.0.0.1:{port}"})
    bootstrap = server.bootstrap
    create_topic(bootstrap, TOPIC, 4)
    ledger = Ledger()
    joined = 6
    workers = [ShareWorker(f"c{i}", share_config(bootstrap, GROUP), [TOPIC], ledger)
               for i in range(joined)]
    try:
        for worker in workers:  # in quick succession
            worker.start()
        wait_until(lambda: settled_group(bootstrap, GROUP, joined, 4), 30, interval=0.1,
                   message="six members sharing the four partitions")
        samples = scrape(f"http://127.0.0.1:{port}/metrics")
        rows = [r for r in dump(servers.log_dir) if r["key"].get("GroupId") == GROUP]
        written = {r["value"]["AssignmentEpoch"] for r in rows
                   if r["type"] == "ShareGroupTargetAssignmentMetadata" and r["value"]}
        # the server's log lines come through a pipe: wait for those of the targets written
        wait_until(lambda: written <= {e.get("assignment_epoch") for e in server.events_of(
                       "installed offloaded target assignment")}, 10,
                   message="the log lines of the targets written")
        events = [e for e in server.events_of() if e.get("group_id") == GROUP]
    finally:
        close_all(workers)

    joins = {r["key"]["MemberId"] for r in rows
             if r["type"] == "ShareGroupMemberMetadata" and r["value"]}
    targets = [r["value"] for r in rows
               if r["type"] == "ShareGroupTargetAssignmentMetadata" and r["value"]]
    epochs = [t["AssignmentEpoch"] for t in targets]
    stamps = [t["Timestamp"] for t in targets]
    print(f"{len(joins)} joins, {len(targets)} targets: epochs {epochs}, "
          f"gaps {[b - a for a, b in itertools.pairwise(stamps)]} ms")
    assert len(joins) == joined
    assert epochs == sorted(epochs) and len(set(epochs)) == len(epochs)
    assert all(b - a >= 1000 for a, b in itertools.pairwise(stamps)), stamps
    assert 1 <= len(targets) < joined, epochs  # the joins were batched
    # every target came from a run in the background executor
    runs = total(samples, "assignor_run_time_ms_count", group=GROUP, assignor="simple")
    assert runs == len(targets)
    assert total(samples, "background_processing_time_ms_count") >= runs
    assert present(samples, "background-processing-time-ms-max") > 0
    named = Counter(e["event"] for e in events)
    # (two heartbeats may find a run due before the first one's run is marked in flight:
    # the second one's is then not started)
    assert named["offloaded target assignment"] >= len(targets)
    installed = [e["assignment_epoch"] for e in events
                 if e["event"] == "installed offloaded target assignment"]
    assert installed == epochs
    assert named["computed target assignment"] == 0  # nothing ran inline


# --------------------------------------------------------------------------- 6. admin
def delete_group(bootstrap: str, group: str) -> KafkaError | None:
    """DeleteGroups through confluent-kafka's AdminClient: the group's error, or None."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.delete_consumer_groups([group], request_timeout=10)[group].result(15)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        return error
    return None


@pytest.mark.slow
def test_admin_apis_on_a_share_group(servers: Servers) -> None:
    server = servers.start()
    bootstrap = server.bootstrap
    create_topic(bootstrap, TOPIC)
    ledger = Ledger()
    workers = [ShareWorker(f"c{i}", share_config(bootstrap, GROUP, **{"client.id": f"cl-{i}"}),
                           [TOPIC], ledger).start() for i in range(2)]
    try:
        # both at the group epoch (the first member reaches the epoch the second's join made
        # with its next heartbeat)
        wait_until(lambda: settled_group(bootstrap, GROUP, 2, 1), 30, interval=0.1,
                   message="two members sharing the partition")
        listed = {g.group_id: g for g in list_groups(bootstrap, ("share",)).groups}
        assert set(listed) == {GROUP}
        assert (listed[GROUP].group_type, listed[GROUP].protocol_type,
                listed[GROUP].group_state) == ("share", "share", "Stable")
        assert [g.group_id for g in list_groups(bootstrap, ("SHARE",)).groups] == [GROUP]
        assert GROUP not in {g.group_id for g in list_groups(bootstrap, ("consumer",)).groups}
        assert GROUP in {g.group_id for g in list_groups(bootstrap).groups}

        described = share_group_describe(bootstrap, GROUP)
        assert (described.error_code, described.group_state, described.assignor_name) == (
            0, "Stable", "simple")
        assert described.assignment_epoch == described.group_epoch
        assert sorted(m.client_id for m in described.members) == ["cl-0", "cl-1"]
        for member in described.members:
            assert len(member.member_id) == 22  # librdkafka's base64 UUID
            assert member.member_epoch == described.group_epoch
            assert member.subscribed_topic_names == (TOPIC,)
            [assigned] = member.assignment.topic_partitions
            assert (assigned.topic_name, assigned.partitions) == (TOPIC, (0,))

        # the classic and consumer group APIs do not know it
        classic = describe_groups(bootstrap, GROUP)
        assert (classic.error_code, classic.group_state) == (ErrorCode.group_id_not_found,
                                                             "Dead")
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                             "enable.auto.commit": False, "log_level": 0})
        try:
            with pytest.raises(KafkaException) as commit:
                consumer.commit(offsets=[TopicPartition(TOPIC, 0, 5)], asynchronous=False)
            assert commit.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
            with pytest.raises(KafkaException) as fetch:
                consumer.committed([TopicPartition(TOPIC, 0)], timeout=10)
            assert fetch.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
        finally:
            consumer.close()

        refused = delete_group(bootstrap, GROUP)
        assert refused is not None and refused.code() == KafkaError.NON_EMPTY_GROUP
    finally:
        close_all(workers)

    [empty] = list_groups(bootstrap, ("share",)).groups
    assert (empty.group_id, empty.group_state) == (GROUP, "Empty")
    assert share_group_describe(bootstrap, GROUP).members == ()
    assert delete_group(bootstrap, GROUP) is None
    assert list_groups(bootstrap, ("share",)).groups == ()
    assert share_group_describe(bootstrap, GROUP).error_code == ErrorCode.group_id_not_found


# --------------------------------------------------------------------------- 7. bad input
def joined_raw(client: WireClient, group: str, member_id: str) -> uuid.UUID:
    """ShareGroupHeartbeat until the member has the partition; the topic's id."""
    response = share_heartbeat(client, group, member_id, 0, [TOPIC])
    assert response.error_code == 0, response

    def assigned() -> uuid.UUID | None:
        nonlocal response
        if response.assignment is not None and response.assignment.topic_partitions:
            [tp] = response.assignment.topic_partitions
            assert tuple(tp.partitions) == (0,)
            return tp.topic_id
        response = share_heartbeat(client, group, member_id, response.member_epoch, None)
        assert response.error_code == 0, response
        return None

    topic_id: uuid.UUID = wait_until(assigned, 10, interval=0.1,
                                     message=f"{member_id} to be assigned the partition")
    return topic_id


@pytest.mark.slow
def test_bad_share_requests_are_refused_and_the_server_keeps_serving(
        servers: Servers) -> None:
    server = servers.start()
    bootstrap = server.bootstrap
    create_topic(bootstrap, TOPIC)
    set_group_configs(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
    produce(bootstrap, TOPIC, 10)
    E = ErrorCode
    with WireClient(bootstrap) as one, WireClient(bootstrap) as two:
        topic_id = joined_raw(one, GROUP, "member-one")
        joined_raw(two, GROUP, "member-two")
        whole: FetchTopics = {topic_id: {0: []}}
        fetched = share_fetch(one, GROUP, "member-one", 0, whole)
        assert (fetched.error_code, acquired(fetched)) == (0, [(0, 9, 1)])
        other = share_fetch(two, GROUP, "member-two", 0, whole)
        assert other.error_code == 0 and acquired(other) == []  # all held by member-one

        # records acquired by another member: refused, on ShareAcknowledge and piggybacked
        ack: FetchTopics = {topic_id: {0: [(0, 4, (ACCEPT,))]}}
        refused = share_acknowledge(two, GROUP, "member-two", 1, ack)
        assert (refused.error_code, partition_errors(refused)) == (0, [E.invalid_record_state])
        refused = share_fetch(two, GROUP, "member-two", 2, ack)
        assert refused.error_code == 0
        assert partition_errors(refused, "acknowledge_error_code") == [E.invalid_record_state]

        # the session epoch: a wrong one, acknowledgements opening a session, ShareAcknowledge
        # at epoch 0
        assert share_fetch(one, GROUP, "member-one", 7, whole).error_code == \
            E.invalid_share_session_epoch
        assert share_acknowledge(one, GROUP, "member-one", 7, ack).error_code == \
            E.invalid_share_session_epoch
        assert share_fetch(one, GROUP, "member-one", 0, ack).error_code == E.invalid_request
        assert share_acknowledge(one, GROUP, "member-one", 0, ack).error_code == \
            E.invalid_share_session_epoch

        # a topic id the server does not know
        unknown: FetchTopics = {uuid.uuid4(): {0: []}}
        fetched = share_fetch(two, GROUP, "member-two", 3, unknown)
        assert (fetched.error_code, partition_errors(fetched)) == (0, [E.unknown_topic_id])
        [unknown_id] = unknown
        refused = share_acknowledge(two, GROUP, "member-two", 4,
                                    {unknown_id: {0: [(0, 4, (ACCEPT,))]}})
        assert (refused.error_code, partition_errors(refused)) == (0, [E.unknown_topic_id])

        # a member id longer than 36 characters
        long_id = "m" * 37
        assert share_fetch(one, GROUP, long_id, 0, whole).error_code == E.invalid_request
        assert share_acknowledge(one, GROUP, long_id, 1, ack).error_code == E.invalid_request
        assert share_heartbeat(one, GROUP, long_id, 0, [TOPIC]).error_code == E.invalid_request

        # nothing changed: member-one's records are still its own to acknowledge, on the same
        # connections, and new records are delivered
        ok = share_acknowledge(one, GROUP, "member-one", 1, {topic_id: {0: [(0, 9, (ACCEPT,))]}})
        assert (ok.error_code, partition_errors(ok)) == (0, [E.none])
        produce(bootstrap, TOPIC, 5, start=10)
        fetched = share_fetch(two, GROUP, "member-two", 5, whole, max_wait_ms=5000)
        assert (fetched.error_code, acquired(fetched)) == (0, [(10, 14, 1)])
    assert server.alive()
