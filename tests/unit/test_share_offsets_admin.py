"""DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets as pure
handlers (``coordinator.groups.share.offsets_admin``) in virtual time, on share groups made by
the share heartbeat and consumed through ShareFetch/ShareAcknowledge: start offsets, leader
epochs and lag; alter's group epoch and fresh share state; delete's tombstones, and the next
heartbeat initializing a deleted topic again."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from coordinator.groups.share.env import ShareGroupEnv, ShareGroupSettings
from coordinator.groups.share.fetch import FetchRequest, FetchResult, PartitionRequest
from coordinator.groups.share.fetch import acknowledge as share_acknowledge
from coordinator.groups.share.fetch import fetch as share_fetch
from coordinator.groups.share.heartbeat import HeartbeatRequest, HeartbeatResponse, heartbeat
from coordinator.groups.share.model import GroupState, ShareGroup
from coordinator.groups.share.offsets_admin import (
    NO_OFFSETS_TO_DELETE_MESSAGE,
    UNKNOWN_TOPIC_OR_PARTITION_MESSAGE,
    ZERO_TOPIC_ID,
    AlteredPartition,
    AlteredTopic,
    DeletedTopic,
    DescribedPartition,
    DescribedTopic,
    alter_offsets,
    delete_offsets,
    describe_offsets,
)
from coordinator.groups.share.partition import SharePartition
from coordinator.runtime import CoordinatorError, Result
from coordinator.testing import ShardContext
from protocol import ErrorCode
from storage.records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    ShareSnapshotKey,
)

G = "workers"
ACCEPT = 1


# ------------------------------------------------------------------------------ fakes
@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int


class Topics:
    """A ``TopicLookup``: the topics of a small metadata image."""

    def __init__(self) -> None:
        self.by_name: dict[str, Topic] = {}

    def topic(self, name: str) -> Topic | None:
        return self.by_name.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.by_name.values() if t.topic_id == topic_id), None)


class Logs:
    """A ``ShareLogs``: each partition's log is a list of (base, last) record batches."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], list[tuple[int, int]]] = {}

    def produce(self, topic: str, partition: int, count: int) -> None:
        batches = self.logs.setdefault((topic, partition), [])
        base = batches[-1][1] + 1 if batches else 0
        batches.append((base, base + count - 1))

    def offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        batches = self.logs.get((topic, partition))
        if batches is None:
            return None
        return 0, batches[-1][1] + 1 if batches else 0

    def batches(self, topic: str, partition: int, offset: int, max_records: int,
                max_bytes: int) -> list[tuple[int, int]]:
        out = []
        for base, last in self.logs.get((topic, partition), []):
            if last < offset:
                continue
            out.append((base, last))
            if last >= offset + max_records - 1:
                break
        return out

    def read(self, topic: str, partition: int, first: int, last: int) -> bytes:
        return b""


class Share:
    """A coordinator partition (``ShardContext``) with a share group environment and the
    calls the tests make."""

    def __init__(self) -> None:
        self.ctx = ShardContext(now_ms=1_000_000)
        self.topics = Topics()
        self.logs = Logs()
        self.env = ShareGroupEnv(ShareGroupSettings(assignment_interval_ms=0,
                                                    assignor_offload=False),
                                 self.topics, self.logs)
        self.epochs: dict[str, int] = {}

    def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        topic_id = uuid.UUID(int=len(self.topics.by_name) + 1)
        self.topics.by_name[name] = Topic(name, topic_id, partitions)
        for p in range(partitions):
            self.logs.logs.setdefault((name, p), [])
        return topic_id

    def tid(self, name: str) -> uuid.UUID:
        return self.topics.by_name[name].topic_id

    # --- share group requests ------------------------------------------------------------
    def join(self, member: str, topics: Sequence[str]) -> HeartbeatResponse:
        request = HeartbeatRequest(G, member, 0, subscribed_topic_names=topics)
        response: HeartbeatResponse = self.ctx.run(
            lambda shard, now: heartbeat(shard, now, self.env, request))
        return response

    def leave(self, member: str) -> None:
        request = HeartbeatRequest(G, member, -1)
        self.ctx.run(lambda shard, now: heartbeat(shard, now, self.env, request))

    def fetch(self, member: str, topic: str, partition: int = 0) -> list[tuple[int, int, int]]:
        epoch = self.epochs.get(member, 0)
        parts = (PartitionRequest(self.tid(topic), partition),) if epoch == 0 else ()
        request = FetchRequest(G, member, epoch, partitions=parts)
        result: FetchResult = self.ctx.run(
            lambda shard, now: share_fetch(shard, now, self.env, request))
        self.epochs[member] = epoch + 1
        return [(r.first_offset, r.last_offset, r.delivery_count)
                for p in result.partitions for r in p.acquired]

    def accept(self, member: str, topic: str, first: int, last: int) -> None:
        request = FetchRequest(G, member, self.epochs[member], partitions=(
            PartitionRequest(self.tid(topic), 0, ((first, last, (ACCEPT,)),)),))
        result: FetchResult = self.ctx.run(
            lambda shard, now: share_acknowledge(shard, now, self.env, request))
        assert [p.ack_error for p in result.partitions] == [ErrorCode.none]
        self.epochs[member] += 1

    # --- the admin handlers --------------------------------------------------------------
    def describe(self, requested: Sequence[tuple[str, Sequence[int]]] | None = None,
                 group_id: str = G) -> tuple[DescribedTopic, ...]:
        found: tuple[DescribedTopic, ...] = self.ctx.read(
            lambda shard, now: describe_offsets(shard, now, self.topics, self.logs, group_id,
                                                requested))
        return found

    def alter(self, requested: Sequence[tuple[str, Sequence[tuple[int, int]]]],
              group_id: str = G) -> tuple[AlteredTopic, ...]:
        answered: tuple[AlteredTopic, ...] = self.ctx.run(
            lambda shard, now: alter_offsets(shard, now, self.topics, group_id, requested))
        return answered

    def delete(self, names: Sequence[str], group_id: str = G) -> tuple[DeletedTopic, ...]:
        answered: tuple[DeletedTopic, ...] = self.ctx.run(
            lambda shard, now: delete_offsets(shard, now, self.topics, group_id, names))
        return answered

    # --- state ---------------------------------------------------------------------------
    def group(self) -> ShareGroup:
        group = self.ctx.shard.groups[G]
        assert isinstance(group, ShareGroup)
        return group

    def sp(self, topic: str, partition: int) -> SharePartition:
        found: SharePartition = self.ctx.shard.share_partitions[G][(self.tid(topic), partition)]
        return found


@pytest.fixture
def share() -> Share:
    context = Share()
    context.create_topic("jobs", 2)
    return context


def refused(call: Any) -> CoordinatorError:
    with pytest.raises(CoordinatorError) as raised:
        call()
    return raised.value


def snapshots(share: Share, since: int = 0) -> dict[int, Any]:
    """Partition -> the value of its last ShareSnapshot written from offset ``since`` on."""
    out: dict[int, Any] = {}
    for record in share.ctx.records(ShareSnapshotKey, since=since):
        assert record.value is not None
        out[record.key.partition] = record.value
    return out


def starts(described: tuple[DescribedTopic, ...]) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, leader epoch, lag)."""
    return {(t.topic_name, p.partition_index): (p.start_offset, p.leader_epoch, p.lag)
            for t in described for p in t.partitions}


# ------------------------------------------------------------------------------ describe
def test_a_new_share_groups_partitions_describe_as_uninitialized(share: Share) -> None:
    share.join("m1", ["jobs"])
    described = share.describe()  # topics null: every initialized partition
    assert [(t.topic_name, t.topic_id) for t in described] == [("jobs", share.tid("jobs"))]
    assert starts(described) == {("jobs", 0): (-1, -1, -1), ("jobs", 1): (-1, -1, -1)}
    assert all(p.error is ErrorCode.none for t in described for p in t.partitions)


def test_start_offset_and_lag_follow_consumption(share: Share) -> None:
    share.join("m1", ["jobs"])
    share.fetch("m1", "jobs")  # resolves the start offset: the log end ("latest"), 0
    share.logs.produce("jobs", 0, 10)
    assert share.fetch("m1", "jobs") == [(0, 9, 1)]
    # 10 records in the log, start 0, none acknowledged yet: lag 10, leader epoch 0 (written)
    assert starts(share.describe([("jobs", [0])])) == {("jobs", 0): (0, 0, 10)}
    share.accept("m1", "jobs", 5, 9)  # acknowledged beyond the start offset
    assert share.sp("jobs", 0).delivery_complete_count() == 5
    assert starts(share.describe([("jobs", [0])])) == {("jobs", 0): (0, 0, 5)}
    share.accept("m1", "jobs", 0, 4)  # the start offset moves past every record
    assert starts(share.describe([("jobs", [0])])) == {("jobs", 0): (10, 0, 0)}
    share.logs.produce("jobs", 0, 3)
    assert starts(share.describe([("jobs", [0])])) == {("jobs", 0): (10, 0, 3)}


def test_unknown_topics_and_partitions_are_absence_of_data_not_errors(share: Share) -> None:
    share.join("m1", ["jobs"])
    described = share.describe([("nope", [0, 1]), ("jobs", [0, 7, -1])])
    # Kafka lists the topics the metadata knows first, then the unknown ones (zero topic id)
    assert described == (
        DescribedTopic("jobs", share.tid("jobs"), (
            DescribedPartition(0, -1, -1, -1), DescribedPartition(7, -1, 0, -1),
            DescribedPartition(-1, -1, 0, -1))),
        DescribedTopic("nope", ZERO_TOPIC_ID, (DescribedPartition(0), DescribedPartition(1))),
    )


def test_describe_checks_neither_the_groups_existence_nor_its_type(share: Share) -> None:
    assert share.describe(group_id="absent") == ()
    assert starts(share.describe([("jobs", [0])], group_id="absent")) == {
        ("jobs", 0): (-1, 0, -1)}
    share.ctx.run(lambda shard, now: Result([(ConsumerGroupMetadataKey(group_id="cg"),
                                              ConsumerGroupMetadataValue(epoch=3))]))
    assert share.describe(group_id="cg") == ()


def test_describe_all_skips_topics_the_metadata_no_longer_has(share: Share) -> None:
    share.create_topic("other", 1)
    share.join("m1", ["jobs", "other"])
    assert [t.topic_name for t in share.describe()] == ["jobs", "other"]
    del share.topics.by_name["other"]
    assert [t.topic_name for t in share.describe()] == ["jobs"]


# ------------------------------------------------------------------------------ alter
def test_alter_creates_an_absent_group_with_share_state_at_the_given_offsets(
        share: Share) -> None:
    answered = share.alter([("jobs", [(0, 42), (1, 7)])])
    assert answered == (AlteredTopic("jobs", share.tid("jobs"), (
        AlteredPartition(0), AlteredPartition(1))),)
    group = share.group()
    assert group.state is GroupState.EMPTY and group.group_epoch == 2  # seed 000's first
    assert share.ctx.last_value(ShareGroupMetadataKey).epoch == 2
    assert {p: (v.start_offset, v.state_epoch, v.snapshot_epoch, v.leader_epoch,
                v.delivery_complete_count, v.state_batches)
            for p, v in snapshots(share).items()} == {0: (42, 2, 0, -1, 0, ()),
                                               1: (7, 2, 0, -1, 0, ())}
    state = share.ctx.last_value(ShareGroupStatePartitionMetadataKey)
    assert [(t.topic_id, t.topic_name, t.partitions) for t in state.initialized_topics] == [
        (share.tid("jobs"), "jobs", (0, 1))]
    assert starts(share.describe()) == {("jobs", 0): (42, -1, -42), ("jobs", 1): (7, -1, -7)}


def test_alter_answers_unknown_topics_and_partitions_per_partition(share: Share) -> None:
    answered = share.alter([("jobs", [(0, 5), (2, 5)]), ("nope", [(0, 1)])])
    unknown = (ErrorCode.unknown_topic_or_partition, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)
    assert answered == (
        AlteredTopic("nope", ZERO_TOPIC_ID, (AlteredPartition(0, *unknown),)),
        AlteredTopic("jobs", share.tid("jobs"), (AlteredPartition(0),
                                                 AlteredPartition(2, *unknown))),
    )
    assert sorted(r.key.partition for r in share.ctx.records(ShareSnapshotKey)) == [0]
    assert share.group().initialized == {share.tid("jobs"): ("jobs", frozenset({0}))}


def test_alter_with_nothing_valid_still_bumps_the_epoch(share: Share) -> None:
    share.alter([("nope", [(0, 1)])])
    assert share.group().group_epoch == 2
    assert share.ctx.records(ShareSnapshotKey) == []
    assert share.ctx.records(ShareGroupStatePartitionMetadataKey) == []


def test_alter_needs_an_empty_share_group(share: Share) -> None:
    share.join("m1", ["jobs"])
    mark = share.ctx.mark()
    error = refused(lambda: share.alter([("jobs", [(0, 0)])]))
    assert (error.code, error.message) == (ErrorCode.non_empty_group, "The group is not empty.")
    share.ctx.run(lambda shard, now: Result([(ConsumerGroupMetadataKey(group_id="cg"),
                                              ConsumerGroupMetadataValue(epoch=3))]))
    error = refused(lambda: share.alter([("jobs", [(0, 0)])], group_id="cg"))
    assert (error.code, error.message) == (ErrorCode.group_id_not_found,
                                           "Group cg is not a share group.")
    assert share.ctx.records(since=mark + 1) == []


def test_alter_clears_the_in_flight_state_and_a_member_receives_from_there(
        share: Share) -> None:
    share.join("m1", ["jobs"])
    share.fetch("m1", "jobs")
    share.logs.produce("jobs", 0, 20)
    assert share.fetch("m1", "jobs") == [(0, 19, 1)]
    share.accept("m1", "jobs", 0, 4)
    old = share.sp("jobs", 0)
    assert (old.start_offset, old.acquired_count()) == (5, 15)
    share.leave("m1")
    share.epochs.clear()
    epoch = share.group().group_epoch
    old_state_epoch, old_snapshot_epoch = old.state_epoch, old.snapshot_epoch

    share.alter([("jobs", [(0, 12)])])
    assert share.group().group_epoch == epoch + 1
    sp = share.sp("jobs", 0)
    assert (sp.start_offset, sp.state_epoch, sp.snapshot_epoch) == (
        12, epoch + 1, old_snapshot_epoch + 1)
    assert epoch + 1 > old_state_epoch
    assert (sp.in_flight_count(), sp.acquired_count(), sp.delivery_complete_count()) == (0, 0, 0)
    assert share.sp("jobs", 1).state_epoch == old_state_epoch  # not altered: untouched
    assert starts(share.describe([("jobs", [0])])) == {("jobs", 0): (12, -1, 8)}

    response = share.join("m2", ["jobs"])
    assert response.member_epoch == epoch + 2
    assert share.fetch("m2", "jobs") == [(12, 19, 1)]  # from the altered start offset


def test_alter_then_join_initializes_the_other_partitions_at_zero(share: Share) -> None:
    share.logs.produce("jobs", 1, 4)
    share.alter([("jobs", [(0, 0)])])
    mark = share.ctx.mark()
    share.join("m1", ["jobs"])
    # partition 1 is new to a topic the group knows: it starts at 0 (Kafka 4.3)
    assert {p: (v.start_offset, v.state_epoch) for p, v in snapshots(share, mark).items()} == {
        1: (0, 3)}
    assert share.group().group_epoch == 3
    assert share.group().initialized == {share.tid("jobs"): ("jobs", frozenset({0, 1}))}
    assert share.fetch("m1", "jobs", 1) == [(0, 3, 1)]


def test_alter_to_minus_one_lets_the_auto_offset_reset_apply_again(share: Share) -> None:
    share.logs.produce("jobs", 0, 6)
    share.alter([("jobs", [(0, -1)])])
    assert share.ctx.last_value(ShareSnapshotKey).delivery_complete_count == -1
    assert starts(share.describe([("jobs", [0])])) == {("jobs", 0): (-1, -1, -1)}
    share.join("m1", ["jobs"])
    assert share.fetch("m1", "jobs") == []  # "latest": the log end
    assert share.sp("jobs", 0).start_offset == 6


# ------------------------------------------------------------------------------ delete
def test_delete_needs_an_existing_empty_share_group(share: Share) -> None:
    error = refused(lambda: share.delete(["jobs"]))
    assert (error.code, error.message) == (ErrorCode.group_id_not_found,
                                           "Group workers not found.")
    share.join("m1", ["jobs"])
    error = refused(lambda: share.delete(["jobs"]))
    assert error.code is ErrorCode.non_empty_group


def test_delete_removes_the_share_state_of_initialized_topics(share: Share) -> None:
    share.create_topic("other", 1)
    share.create_topic("never", 1)
    share.join("m1", ["jobs", "other"])
    share.leave("m1")
    epoch = share.group().group_epoch
    mark = share.ctx.mark()
    answered = share.delete(["nope", "jobs", "never"])
    assert answered == (
        DeletedTopic("jobs", share.tid("jobs")),
        DeletedTopic("nope", ZERO_TOPIC_ID, ErrorCode.unknown_topic_or_partition,
                     UNKNOWN_TOPIC_OR_PARTITION_MESSAGE),
        DeletedTopic("never", ZERO_TOPIC_ID, ErrorCode.unknown_topic_or_partition,
                     NO_OFFSETS_TO_DELETE_MESSAGE),
    )
    tombstones = share.ctx.tombstones(ShareSnapshotKey, since=mark)
    assert sorted((r.key.topic_id, r.key.partition) for r in tombstones) == [
        (share.tid("jobs"), 0), (share.tid("jobs"), 1)]
    state = share.ctx.last_value(ShareGroupStatePartitionMetadataKey)
    assert [t.topic_name for t in state.initialized_topics] == ["other"]
    assert set(share.ctx.shard.share_partitions[G]) == {(share.tid("other"), 0)}
    assert share.group().group_epoch == epoch  # not bumped, as in Kafka
    assert starts(share.describe()) == {("other", 0): (-1, -1, -1)}
    assert starts(share.describe([("jobs", [0])])) == {("jobs", 0): (-1, 0, -1)}
    # deleted again: nothing left to delete
    assert share.delete(["jobs"]) == (DeletedTopic(
        "jobs", ZERO_TOPIC_ID, ErrorCode.unknown_topic_or_partition,
        NO_OFFSETS_TO_DELETE_MESSAGE),)


def test_the_next_heartbeat_initializes_a_deleted_topic_again(share: Share) -> None:
    share.join("m1", ["jobs"])
    share.fetch("m1", "jobs")
    share.logs.produce("jobs", 0, 5)
    share.fetch("m1", "jobs")
    share.accept("m1", "jobs", 0, 4)
    old_state_epoch = share.sp("jobs", 0).state_epoch
    share.leave("m1")
    share.epochs.clear()
    share.delete(["jobs"])
    assert G not in share.ctx.shard.share_partitions
    share.logs.produce("jobs", 0, 5)

    mark = share.ctx.mark()
    response = share.join("m2", ["jobs"])
    assert response.assignment == {share.tid("jobs"): frozenset({0, 1})}
    # a topic new to the group again: -1, the group's share.auto.offset.reset applies
    epoch = share.group().group_epoch
    assert {p: (v.start_offset, v.state_epoch) for p, v in snapshots(share, mark).items()} == {
        0: (-1, epoch), 1: (-1, epoch)}
    assert share.group().group_epoch > old_state_epoch
    share.fetch("m2", "jobs")
    assert share.sp("jobs", 0).start_offset == 10  # "latest", not the deleted state's 5


def test_alter_and_delete_survive_a_restart(share: Share) -> None:
    share.create_topic("other", 1)
    share.alter([("jobs", [(0, 3), (1, 4)]), ("other", [(0, 9)])])
    share.delete(["other"])
    before = share.describe()
    share.ctx = share.ctx.restarted()
    assert share.describe() == before
    assert starts(before) == {("jobs", 0): (3, -1, -3), ("jobs", 1): (4, -1, -4)}
    assert share.group().group_epoch == 2
    assert set(share.ctx.shard.share_partitions[G]) == {(share.tid("jobs"), 0),
                                                        (share.tid("jobs"), 1)}
