"""The rebalance timeline: records (built with ``storage.records``) to events, the annotations
the handlers note, the per-group rings, ``http_timeline``, ``log timeline`` and the user-facing
assertion helpers of ``kafka_coordinator.timeline``."""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from kio.schema.consumer_protocol_subscription.v1.data import (
    ConsumerProtocolSubscription,
    TopicName,
    TopicPartition,
)
from kio.serial import entity_writer
from kio.static.primitive import i32

from coordinator import cli
from coordinator.groups import timeline_records
from coordinator.groups.classic.consumer_protocol import encode_assignment
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.timeline_records import GROUP_OF, derive, start
from coordinator.observability import timeline
from coordinator.observability.timeline import Entry, TimelineStore, http_timeline
from coordinator.telemetry.events import ASSIGNED_KIND, REBALANCED_KIND
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from kafka_coordinator import timeline as user_timeline
from kafka_coordinator.timeline import (
    CLIENT_REPORTED,
    Timeline,
    TimelineError,
    assert_no_partition_owned_twice,
)
from storage.log import PartitionLog
from storage.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    TopicMetadata,
    TopicMetadataKey,
    TopicMetadataValue,
    TopicPartitions,
    encode_record,
)
from storage.records.streams import TaskIdsWithEpochs

G = "g"
ORDERS = uuid.UUID(int=7)


# ------------------------------------------------------------------------------ record builders
class Log:
    """Records of one group in log order, with timestamps."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.now = 1_000

    def add(self, key: Any, value: Any, *, at: int | None = None) -> Log:
        if at is not None:
            self.now = at
        self.entries.append((self.now, len(self.entries), key, value))
        return self

    def note(self, name: str, **fields: Any) -> Log:
        self.entries.append((self.now, -1, name, fields))
        return self

    def events(self, **kwargs: Any) -> list[dict[str, Any]]:
        return derive((), self.entries, group=G, **kwargs)


def tps(**partitions: Sequence[int]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(topic_id=ORDERS, partitions=tuple(ps))
                 for _, ps in partitions.items())


def consumer_member(log: Log, member: str, topics: Sequence[str] = ("orders",)) -> None:
    log.add(ConsumerGroupMemberMetadataKey(group_id=G, member_id=member),
            ConsumerGroupMemberMetadataValue(client_id="c", client_host="/h",
                                             subscribed_topic_names=tuple(topics)))


def current(log: Log, member: str, epoch: int, assigned: Sequence[int],
            pending: Sequence[int] = (), state: int = 0) -> None:
    log.add(ConsumerGroupCurrentMemberAssignmentKey(group_id=G, member_id=member),
            ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=epoch, previous_member_epoch=epoch - 1, state=state,
                assigned_partitions=tps(orders=assigned) if assigned else (),
                partitions_pending_revocation=tps(orders=pending) if pending else ()))


def target(log: Log, epoch: int, **members: Sequence[int]) -> None:
    for member, partitions in members.items():
        log.add(ConsumerGroupTargetAssignmentMemberKey(group_id=G, member_id=member),
                ConsumerGroupTargetAssignmentMemberValue(topic_partitions=tps(orders=partitions)))
    log.add(ConsumerGroupTargetAssignmentMetadataKey(group_id=G),
            ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, timestamp=log.now))


def epoch(log: Log, value: int) -> None:
    log.add(ConsumerGroupMetadataKey(group_id=G), ConsumerGroupMetadataValue(epoch=value))


def leave(log: Log, member: str) -> None:
    log.add(ConsumerGroupCurrentMemberAssignmentKey(group_id=G, member_id=member), None)
    log.add(ConsumerGroupTargetAssignmentMemberKey(group_id=G, member_id=member), None)
    log.add(ConsumerGroupMemberMetadataKey(group_id=G, member_id=member), None)


def kip848_group() -> Log:
    """m1 alone with 4 partitions, m2 joins (m1 revokes 2 and 3 before m2 gets them), m1
    leaves (m2 takes everything)."""
    log = Log()
    log.add(ConsumerGroupPartitionMetadataKey(group_id=G), ConsumerGroupPartitionMetadataValue(
        topics=(TopicMetadata(topic_id=ORDERS, topic_name="orders", num_partitions=4),)))
    consumer_member(log, "m1")
    epoch(log, 2)
    target(log, 2, m1=[0, 1, 2, 3])
    current(log, "m1", 2, [0, 1, 2, 3])
    log.now = 2_000
    consumer_member(log, "m2")
    epoch(log, 3)
    target(log, 3, m1=[0, 1], m2=[2, 3])
    current(log, "m2", 3, [], state=2)  # unreleased: m1 still holds 2 and 3
    current(log, "m1", 2, [0, 1], pending=[2, 3], state=1)
    log.now = 2_500
    current(log, "m1", 3, [0, 1])  # its heartbeat no longer owns 2 and 3
    log.now = 2_600
    current(log, "m2", 3, [2, 3])
    log.now = 3_000
    leave(log, "m1")
    epoch(log, 4)
    target(log, 4, m2=[0, 1, 2, 3])
    current(log, "m2", 4, [0, 1, 2, 3])
    return log


def kinds(events: Sequence[dict[str, Any]], *, member: str | None = None) -> list[str]:
    return [e["kind"] for e in events if member is None or e.get("member") == member]


# ------------------------------------------------------------------------------ KIP-848
def test_a_consumer_group_revokes_before_it_assigns_and_says_when() -> None:
    events = kip848_group().events()
    changes = [(e["timestamp"], e["kind"], e["member"], e["partitions"]) for e in events
               if e["kind"] in ("assigned", "revoked", "revocation-requested")]
    assert changes == [
        (1_000, "assigned", "m1", {"orders": [0, 1, 2, 3]}),
        (2_000, "revocation-requested", "m1", {"orders": [2, 3]}),
        (2_500, "revoked", "m1", {"orders": [2, 3]}),
        (2_600, "assigned", "m2", {"orders": [2, 3]}),
        (3_000, "revoked", "m1", {"orders": [0, 1]}),
        (3_000, "assigned", "m2", {"orders": [0, 1]}),
    ]
    assert [e for e in events if e["kind"] == "revoked"][-1]["removed"] is True
    assert [(e["epoch"], e["members"], e["moved"]) for e in events
            if e["kind"] == "target-computed"] == [(2, 1, 4), (3, 2, 2), (4, 1, 2)]
    assert [e["epoch"] for e in events if e["kind"] == "epoch-bumped"] == [2, 3, 4]
    assert [(e["epoch"], e["members"], e["timestamp"]) for e in events
            if e["kind"] == "group-stable"] == [(2, 1, 1_000), (3, 2, 2_600), (4, 1, 3_000)]
    assert [(e["member"], e["epoch"], e["state"]) for e in events if e["kind"] == "member-epoch"
            and e["member"] == "m1"] == [("m1", 2, "stable"), ("m1", 2, "unrevoked-partitions"),
                                          ("m1", 3, "stable")]
    joined = next(e for e in events if e["kind"] == "member-joined")
    assert joined["subscribed_topics"] == ["orders"] and joined["classic"] is False
    assert all(e["group"] == G and e["group_type"] == "consumer" for e in events)
    assert [e["offset"] for e in events] == sorted(e["offset"] for e in events)
    assert_no_partition_owned_twice(events)


def test_unknown_topics_are_named_by_the_resolver_or_their_id() -> None:
    log = Log()
    consumer_member(log, "m1")
    current(log, "m1", 2, [0])
    assert log.events()[-2]["partitions"] == {str(ORDERS): [0]}
    named = log.events(topic_name={ORDERS: "from-metadata"}.get)
    assert named[-2]["partitions"] == {"from-metadata": [0]}


def test_annotations_say_what_the_records_cannot() -> None:
    log = Log()
    consumer_member(log, "m1")
    epoch(log, 2)
    log.note(timeline.TARGET, assignor="uniform", duration_ms=1.5, offloaded=False)
    target(log, 2, m1=[0])
    log.note(timeline.TARGET, assignor="range", duration_ms=9.0, offloaded=True, epoch=9)
    log.note(timeline.FENCED, member="m1", received_epoch=7, known_epoch=2)
    epoch(log, 3)
    target(log, 3, m1=[0, 1])  # not the offloaded run's epoch: that annotation waits
    log.note(timeline.REMOVED, member="m1", reason=timeline.SESSION_EXPIRED)
    leave(log, "m1")
    events = log.events()
    computed = [e for e in events if e["kind"] == "target-computed"]
    assert computed[0]["assignor"] == "uniform" and computed[0]["duration_ms"] == 1.5
    assert computed[0]["offloaded"] is False
    assert "assignor" not in computed[1]
    fenced = next(e for e in events if e["kind"] == "member-fenced")
    assert "offset" not in fenced
    assert (fenced["received_epoch"], fenced["known_epoch"], fenced["reason"]) == (7, 2, "epoch")
    left = next(e for e in events if e["kind"] == "member-left")
    assert left["reason"] == "session-expired" and left["fenced"] is True
    # the store's view: no annotation-only event, no annotation field
    records_only = derive((), [e for e in log.entries if e[1] >= 0], group=G)
    assert timeline.record_view(events) == records_only
    assert user_timeline.record_view(events) == records_only
    assert user_timeline.ANNOTATION_FIELDS == timeline.ANNOTATION_FIELDS


# ------------------------------------------------------------------------------ classic
def subscription(topics: Sequence[str], owned: Sequence[int] = ()) -> bytes:
    held = (TopicPartition(topic=TopicName("orders"), partitions=tuple(i32(p) for p in owned)),)
    value = ConsumerProtocolSubscription(topics=tuple(topics), user_data=None,
                                         owned_partitions=held if owned else ())
    buffer = io.BytesIO()
    buffer.write((1).to_bytes(2, "big"))
    entity_writer(ConsumerProtocolSubscription)(buffer, value)
    return buffer.getvalue()


def generation(log: Log, gen: int, members: dict[str, tuple[Sequence[int], Sequence[int]]],
               at: int) -> None:
    """A GroupMetadata record: member -> (owned at its JoinGroup, assignment)."""
    log.add(GroupMetadataKey(group=G), GroupMetadataValue(
        protocol_type="consumer", generation=gen, protocol="cooperative-sticky",
        leader=next(iter(members), None), current_state_timestamp=at,
        members=tuple(MemberMetadata(
            member_id=m, client_id="c", client_host="/h", session_timeout=10000,
            subscription=subscription(["orders"], owned),
            assignment=encode_assignment([("orders", given)] if given else []))
            for m, (owned, given) in members.items())), at=at)


def test_a_cooperative_classic_group_revokes_through_its_next_join() -> None:
    log = Log()
    generation(log, 1, {"a": ((), (0, 1, 2, 3))}, 1_000)
    generation(log, 2, {"a": ((0, 1, 2, 3), (0, 1)), "b": ((), ())}, 2_000)
    generation(log, 3, {"a": ((0, 1), (0, 1)), "b": ((), (2, 3))}, 2_100)
    generation(log, 4, {"b": ((2, 3), (0, 1, 2, 3))}, 3_000)
    log.add(GroupMetadataKey(group=G), None, at=4_000)
    events = log.events()
    assert all(e["group_type"] == "classic" for e in events)
    changes = [(e["timestamp"], e["kind"], e["member"], e["partitions"]["orders"])
               for e in events if e["kind"] in ("assigned", "revoked", "revocation-requested")]
    assert changes == [
        (1_000, "assigned", "a", [0, 1, 2, 3]),
        (2_000, "revocation-requested", "a", [2, 3]),
        (2_100, "revoked", "a", [2, 3]),  # a's JoinGroup of generation 3 no longer owns them
        (2_100, "assigned", "b", [2, 3]),
        (3_000, "revoked", "a", [0, 1]),
        (3_000, "assigned", "b", [0, 1]),
    ]
    # generation 2 is not stable: a has yet to give 2 and 3 up
    assert [(e["epoch"], e["members"]) for e in events if e["kind"] == "group-stable"] == [
        (1, 1), (3, 2), (4, 1)]
    assert [(e["epoch"], e["moved"], e["protocol"]) for e in events
            if e["kind"] == "target-computed"] == [
        (1, 4, "cooperative-sticky"), (2, 0, "cooperative-sticky"), (3, 2, "cooperative-sticky"),
        (4, 2, "cooperative-sticky")]
    assert kinds(events, member="a")[-1] == "member-left"
    assert events[-1]["kind"] == "group-deleted"
    assert_no_partition_owned_twice(events)


def test_an_eager_member_revokes_everything_when_it_rejoins() -> None:
    log = Log()
    generation(log, 1, {"a": ((), (0, 1))}, 1_000)
    generation(log, 2, {"a": ((), (0,)), "b": ((), (1,))}, 2_000)
    events = log.events()
    assert [(e["kind"], e["member"], e["partitions"]["orders"]) for e in events
            if e["kind"] in ("assigned", "revoked")] == [
        ("assigned", "a", [0, 1]), ("revoked", "a", [0, 1]), ("assigned", "a", [0]),
        ("assigned", "b", [1])]


def test_a_classic_rebalance_start_is_an_annotation_only_event() -> None:
    log = Log().note(timeline.REBALANCE, generation=0, reason="member a joined")
    generation(log, 1, {"a": ((), (0,))}, 1_000)
    events = log.events()
    assert events[0]["kind"] == "rebalance-started" and events[0]["group_type"] == "classic"
    assert events[0]["reason"] == "member a joined" and "offset" not in events[0]
    assert not Timeline(events[:1]).is_stable()
    assert Timeline(events).is_stable(members=1)
    # a rebalance starting after a stable generation makes the group unstable again
    log.note(timeline.REBALANCE, generation=1, reason="member b joined")
    assert not Timeline(log.events()).is_stable()


# ------------------------------------------------------------------------------ share, streams
def test_a_share_group_takes_its_target_at_once() -> None:
    log = Log()
    log.add(ShareGroupMemberMetadataKey(group_id=G, member_id="s1"),
            ShareGroupMemberMetadataValue(client_id="c", client_host="/h",
                                          subscribed_topic_names=("orders",)))
    log.add(ShareGroupMetadataKey(group_id=G), ShareGroupMetadataValue(epoch=2))
    log.add(ShareGroupCurrentMemberAssignmentKey(group_id=G, member_id="s1"),
            ShareGroupCurrentMemberAssignmentValue(member_epoch=2, previous_member_epoch=1,
                                                   state=0, assigned_partitions=tps(o=[0, 1])))
    events = log.events(topic_name={ORDERS: "orders"}.get)
    assert kinds(events) == ["member-joined", "epoch-bumped", "assigned", "member-epoch"]
    assert events[2]["partitions"] == {"orders": [0, 1]}
    assert {e["group_type"] for e in events} == {"share"}


def streams_current(log: Log, member: str, epoch: int, active: dict[str, list[int]],
                    pending: dict[str, list[int]] | None = None, state: int = 1) -> None:
    def tasks(by_sub: dict[str, list[int]]) -> tuple[TaskIdsWithEpochs, ...]:
        return tuple(TaskIdsWithEpochs(subtopology_id=s, partitions=tuple(ps),
                                       assignment_epochs=tuple(epoch for _ in ps))
                     for s, ps in by_sub.items())

    log.add(StreamsGroupCurrentMemberAssignmentKey(group_id=G, member_id=member),
            StreamsGroupCurrentMemberAssignmentValue(
                member_epoch=epoch, previous_member_epoch=epoch - 1, state=state,
                active_tasks=tasks(active), active_tasks_pending_revocation=tasks(pending or {})))


def test_a_streams_group_moves_tasks() -> None:
    log = Log()
    for member in ("x", "y"):
        log.add(StreamsGroupMemberMetadataKey(group_id=G, member_id=member),
                StreamsGroupMemberMetadataValue(client_id="c", client_host="/h",
                                                topology_epoch=0, process_id=f"p-{member}"))
    log.add(StreamsGroupMetadataKey(group_id=G), StreamsGroupMetadataValue(epoch=2))
    streams_current(log, "x", 1, {"0": [0, 1]})
    streams_current(log, "x", 1, {"0": [0]}, pending={"0": [1]}, state=2)
    streams_current(log, "x", 2, {"0": [0]})
    streams_current(log, "y", 2, {"0": [1]})
    events = log.events()
    changes = [(e["kind"], e["member"], e["tasks"]) for e in events
               if e["kind"] in ("assigned", "revoked", "revocation-requested")]
    assert changes == [("assigned", "x", {"active": {"0": [0, 1]}}),
                       ("revocation-requested", "x", {"active": {"0": [1]}}),
                       ("revoked", "x", {"active": {"0": [1]}}),
                       ("assigned", "y", {"active": {"0": [1]}})]
    assert next(e for e in events if e["kind"] == "member-joined")["process_id"] == "p-x"
    assert_no_partition_owned_twice(events)


# ------------------------------------------------------------------------------ the rings
def store(max_entries: int = 10000) -> TimelineStore:
    return TimelineStore(start, GROUP_OF, max_entries=max_entries)


def feed(target_store: TimelineStore, log: Log, partition: int = 3) -> None:
    for ts, offset, key, value in log.entries:
        if offset < 0:
            target_store.annotate(G, key, value, ts)
        else:
            target_store.on_record(partition, offset, ts, key, value)


def test_a_full_ring_keeps_what_members_hold() -> None:
    log = kip848_group()
    full = log.events()
    small = store(max_entries=5)
    feed(small, log)
    entries = small.entries(G)
    assert entries is not None and len(entries[1]) == 5 and entries[0]
    kept = entries[1][0][1]
    # the events of the records still in the ring are exactly what the whole log gives them
    assert small.events(G) == [e for e in full if e["offset"] >= kept]
    assert small.events(G, since=3_000) == [e for e in full if e["offset"] >= kept
                                            and e["timestamp"] >= 3_000]


def test_reads_between_appends_give_what_a_fresh_derivation_gives() -> None:
    """The store keeps each ring's deriver between reads: polling while records come answers
    the events of the entries the ring holds as the whole log so far gives them, and when
    more entries went by unread than the ring holds, what deriving the ring afresh gives."""
    log = kip848_group()

    def trimmed(n: int, held: int) -> list[dict[str, Any]]:
        """The first ``n`` entries' events, less those of all but the last ``held``."""
        deriver = start((), group=G)
        given = []
        for entry in log.entries[:n]:
            before = len(deriver.events)
            deriver.apply(entry)
            given.append(len(deriver.events) - before)
        return deriver.events[sum(given[:n - held]):]

    for capacity, every in ((10000, 1), (10000, 3), (5, 1), (5, 2), (3, 7)):
        polled = store(max_entries=capacity)
        last_read = 0
        for n, (ts, offset, key, value) in enumerate(log.entries, 1):
            if offset < 0:
                polled.annotate(G, key, value, ts)
            else:
                polled.on_record(3, offset, ts, key, value)
            if n % every:
                continue
            found = polled.entries(G)
            assert found is not None
            held = len(found[1])
            if last_read and n - held <= last_read - 1:  # the ring's oldest entry was read
                expected = trimmed(n, held)
            else:
                expected = derive(*found, group=G)
            assert polled.events(G) == expected, (capacity, every, n)
            last_read = n
        assert last_read


def test_the_ring_keeps_only_group_records_and_forgets_a_reloaded_partition() -> None:
    s = store()
    s.on_record(3, 0, 1, OffsetCommitKey(group="g", topic="t", partition=0),
                OffsetCommitValue(offset=1, commit_timestamp=1))
    assert s.events(G) is None and s.groups() == []
    feed(s, kip848_group())
    before = s.events(G)
    assert before
    feed(s, kip848_group())  # the partition loads again: offsets start over
    assert s.events(G) == before
    disabled = store(max_entries=0)
    feed(disabled, kip848_group())
    assert disabled.events(G) is None


class FakeApp:
    def __init__(self, timeline_store: TimelineStore | None) -> None:
        self.timeline = timeline_store


def test_http_timeline_answers_with_the_groups_events() -> None:
    s = store()
    feed(s, kip848_group())
    status, body = http_timeline(FakeApp(s), {"group": [G]})
    assert status == 200 and body["group"] == G and body["events"] == s.events(G)
    json.dumps(body)  # JSON as it is
    status, body = http_timeline(FakeApp(s), {"group": [G], "since": ["3000"]})
    assert status == 200 and {e["timestamp"] for e in body["events"]} == {3_000}
    assert http_timeline(FakeApp(s), {"group": ["nope"]})[0] == 404
    status, body = http_timeline(FakeApp(s), {})
    assert status == 400 and body["groups"] == [G]
    assert http_timeline(FakeApp(s), {"group": [G], "since": ["soon"]})[0] == 400
    assert http_timeline(FakeApp(None), {"group": [G]})[0] == 404


# ------------------------------------------------------------------------------ from the handlers
@pytest.fixture
def attached() -> Iterator[TimelineStore]:
    s = store()
    timeline.attach(s)
    yield s
    timeline.detach(s)


def fed_context(s: TimelineStore, **kwargs: Any) -> ConsumerGroupContext:
    """A handler context whose replayed records also go to the timeline store, as the
    runtime's record listener sends them."""
    ctx = ConsumerGroupContext(**kwargs)
    replay = ctx.shard.replay

    def replay_and_feed(offset: int, key: Any, value: Any) -> None:
        replay(offset, key, value)
        s.on_record(0, offset, ctx.now, key, value)

    ctx.shard.replay = replay_and_feed  # type: ignore[method-assign]
    ctx.create_topic("orders", 4)
    return ctx


def test_handlers_note_assignors_fences_and_why_members_go(attached: TimelineStore) -> None:
    settings = ConsumerGroupSettings(assignment_interval_ms=0, assignor_offload=False,
                                     session_timeout_ms=1000)
    ctx = fed_context(attached, settings=settings)
    first = ctx.heartbeat(member_id="m1", topics=["orders"])
    ctx.heartbeat(member_id="m2", topics=["orders"])
    with pytest.raises(Exception, match="member epoch"):
        ctx.heartbeat(member_id="m1", member_epoch=first.member_epoch + 5, owned={})
    ctx.heartbeat(member_id="m2", member_epoch=-1)  # leaves
    ctx.advance(1500)  # m1 stopped heartbeating
    events = attached.events(G)
    assert events is not None
    computed = [e for e in events if e["kind"] == "target-computed"]
    assert computed and all(e["assignor"] == "uniform" and e["offloaded"] is False
                            for e in computed)
    assert all(e["duration_ms"] >= 0 for e in computed)
    fenced = next(e for e in events if e["kind"] == "member-fenced")
    assert fenced["member"] == "m1" and fenced["received_epoch"] == first.member_epoch + 5
    left = {e["member"]: (e["reason"], e["fenced"]) for e in events if e["kind"] == "member-left"}
    assert left == {"m2": ("left", False), "m1": ("session-expired", True)}
    assert events[-1]["kind"] == "epoch-bumped"


def test_an_offloaded_target_says_so(attached: TimelineStore) -> None:
    settings = ConsumerGroupSettings(assignment_interval_ms=0, assignor_offload=True)
    ctx = fed_context(attached, settings=settings, offload=True)
    ctx.heartbeat(member_id="m1", topics=["orders"])
    ctx.advance(settings.first_target_window_ms)  # the new group's first run starts
    assert ctx.finish_runs() == 1
    events = attached.events(G)
    assert events is not None
    computed = [e for e in events if e["kind"] == "target-computed"]
    assert [(e["epoch"], e["offloaded"], e["assignor"], e["moved"]) for e in computed] == [
        (2, True, "uniform", 4)]


# ------------------------------------------------------------------------------ log timeline
def test_log_timeline_reads_a_store(tmp_path: Path) -> None:
    log = kip848_group()
    plog = PartitionLog.open(tmp_path, 3, 1 << 20)
    for ts, _, key, value in log.entries:
        plog.append_batch([encode_record(key, value)], ts)
    plog.append_batch([encode_record(OffsetCommitKey(group="g", topic="t", partition=0),
                                     OffsetCommitValue(offset=1, commit_timestamp=1))], 5_000)
    plog.flush()
    plog.close()
    meta = PartitionLog.open(tmp_path, 0, 1 << 20, topic="__cluster_metadata")
    meta.append_batch([encode_record(TopicMetadataKey(name="orders-topic"),
                                     TopicMetadataValue(topic_id=ORDERS, num_partitions=4))], 1)
    meta.flush()
    meta.close()
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["log", "timeline", str(tmp_path), "--group", G]) == 0
    printed = [json.loads(line) for line in out.getvalue().splitlines()]
    assert printed == log.events()
    assert list(timeline_records.store_timeline(tmp_path, "other")) == []
    assert timeline_records.topic_names(tmp_path) == {ORDERS: "orders-topic"}
    assert Timeline.from_store(tmp_path, G).events == printed
    with redirect_stdout(io.StringIO()):
        assert cli.main(["log", "timeline", str(tmp_path / "missing")]) == 2


# ------------------------------------------------------------------------------ the user's helpers
def test_assignment_history_and_rebalances() -> None:
    tl = Timeline(kip848_group().events())
    assert tl.group == G and tl.members() == {"m2"}
    history = tl.assignment_history("m1")
    assert [(c.kind, sorted(c.partitions), sorted(c.owned), c.removed) for c in history] == [
        ("assigned", [("orders", 0), ("orders", 1), ("orders", 2), ("orders", 3)],
         [("orders", 0), ("orders", 1), ("orders", 2), ("orders", 3)], False),
        ("revoked", [("orders", 2), ("orders", 3)], [("orders", 0), ("orders", 1)], False),
        ("revoked", [("orders", 0), ("orders", 1)], [], True)]
    assert tl.rebalance_count() == 3
    assert tl.is_stable(members=1) and not tl.is_stable(members=2)
    assert tl.owners() == {("orders", p): {"m2"} for p in range(4)}
    assert not Timeline(tl.events[:-1]).is_stable()
    with pytest.raises(TimelineError, match="not stable"):
        Timeline(tl.events[:-1]).wait_until_stable(members=1, timeout=0.1)


def test_a_clients_telemetry_after_the_group_settled_leaves_it_stable() -> None:
    """A member's client pushes its metrics on its own schedule: on a loaded machine its
    ``client-*`` events land after ``group-stable``, and the group is still stable; a group
    event after them is not."""
    events = kip848_group().events()
    assert {ASSIGNED_KIND, REBALANCED_KIND} == CLIENT_REPORTED
    pushed = [{"timestamp": events[-1]["timestamp"] + 1, "kind": kind, "group": G,
               "member": "m2", "client_instance_id": "x"}
              for kind in (ASSIGNED_KIND, REBALANCED_KIND)]
    assert Timeline(events + pushed).is_stable(members=1)
    assert not Timeline(events + pushed).is_stable(members=2)
    assert not Timeline(events[:-1] + pushed).is_stable()
    left = {"timestamp": pushed[-1]["timestamp"] + 1, "kind": "member-left", "group": G,
            "member": "m2"}
    assert not Timeline(events + pushed + [left]).is_stable()
    assert not Timeline(pushed).is_stable()


def test_a_partition_owned_twice_is_caught() -> None:
    log = Log()
    consumer_member(log, "m1")
    consumer_member(log, "m2")
    current(log, "m1", 2, [0, 1])
    current(log, "m2", 2, [1])
    with pytest.raises(TimelineError, match=r"orders-1 .* assigned to m2 .* m1 still held it"):
        assert_no_partition_owned_twice(log.events(topic_name={ORDERS: "orders"}.get))
    # once m1 left, m2 may take it
    log2 = Log()
    consumer_member(log2, "m1")
    current(log2, "m1", 2, [1])
    leave(log2, "m1")
    consumer_member(log2, "m2")
    current(log2, "m2", 3, [1])
    assert_no_partition_owned_twice(log2.events())


class _Serve(BaseHTTPRequestHandler):
    """The control endpoint's /timeline, served from a TimelineStore."""

    store: TimelineStore

    def do_GET(self) -> None:
        url = urlparse(self.path)
        status, body = http_timeline(FakeApp(self.store), parse_qs(url.query))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def test_timeline_fetches_and_waits_over_http() -> None:
    s = store()
    handler = type("Handler", (_Serve,), {"store": s})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert Timeline.fetch(url, G).events == []  # not seen yet: 404 is no events
        log = kip848_group()
        cut = next(i for i, e in enumerate(log.entries) if e[0] >= 3_000)
        for ts, offset, key, value in log.entries[:cut]:
            s.on_record(3, offset, ts, key, value)
        first = Timeline.fetch(url, G)
        assert first.is_stable(members=2)
        with pytest.raises(TimelineError, match="not stable with 1 members"):
            user_timeline.wait_until_stable(url, G, members=1, timeout=0.3)

        def later() -> None:
            for ts, offset, key, value in log.entries[cut:]:
                s.on_record(3, offset, ts, key, value)

        threading.Timer(0.2, later).start()
        stable = first.wait_until_stable(members=1, timeout=10)
        assert stable.events == log.events()
        assert Timeline.fetch(url, G, since=3_000).events == stable.since(3_000).events

        class Client:
            base_url = url

        assert Timeline.fetch(Client(), G).events == stable.events
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------------ mixed groups
def test_a_classic_group_upgraded_to_a_mixed_consumer_group() -> None:
    from coordinator.groups.consumer import env as consumer_env
    from tests.unit import test_mixed_groups as mixed_groups

    saved = consumer_env._installed
    try:
        m = mixed_groups.mixed()
        a, b, _ = mixed_groups.classic_group(m)
        first = m.heartbeat("c")  # a consumer-protocol member upgrades the group
        for member in (a, b):
            gen, _ = mixed_groups.rejoin(m, member)
            if m.beat(member, gen) is not mixed_groups.ErrorCode.none:
                mixed_groups.rejoin(m, member)
        m.heartbeat("c", first.member_epoch, owned={"t": []})
        owned = {member: m.owned(member) for member in (a, b, "c")}
    finally:
        consumer_env._installed = saved
    entries = [(w.timestamp_ms, w.offset, w.key, w.value) for w in m.ctx.written]
    events = derive((), entries, group=G, topic_name={uuid.UUID(int=1): "t"}.get)
    types = [e["group_type"] for e in events]
    deleted = kinds(events).index("group-deleted")
    assert set(types[:deleted + 1]) == {"classic"} and set(types[deleted + 1:]) == {"consumer"}
    joined = {e["member"]: e["classic"] for e in events[deleted:] if e["kind"] == "member-joined"}
    assert joined == {a: True, b: True, "c": False}
    assert_no_partition_owned_twice(events)
    tl = Timeline(events)
    assert {member: sorted(p for _, p in tl.assignment_history(member)[-1].owned)
            for member in (a, b, "c")} == owned
    assert sorted(p for ps in owned.values() for p in ps) == [0, 1, 2, 3]


# ------------------------------------------------------------------------- the runtime feeds it
async def test_the_runtime_feeds_written_and_loaded_records(tmp_path: Path) -> None:
    from coordinator.groups.replay import new_shard
    from coordinator.runtime import CoordinatorRuntime, Result
    from coordinator.runtime.clock import ManualClock

    log = kip848_group()
    clock = ManualClock(1_000)

    async def started(target_store: TimelineStore) -> CoordinatorRuntime:
        runtime = CoordinatorRuntime(tmp_path, 2, new_shard, clock)
        runtime.record_listener = target_store.on_record
        await runtime.start(drive_timers=False)
        await runtime.wait_loaded()
        return runtime

    live = store()
    runtime = await started(live)
    try:
        def writing(key: Any, value: Any) -> Callable[[Any, int], Result]:
            return lambda shard, now: Result([(key, value)])

        for ts, _, key, value in log.entries:
            clock.advance(ts - clock.now_ms())
            await runtime.write(1, writing(key, value), group_id=G)
        assert live.events(G) == log.events()
        # a partition that loads again from its log gives the same timeline, not twice
        await runtime._reload(runtime.partitions[1], "test")
        assert live.events(G) == log.events()
    finally:
        await runtime.stop()
    restarted = store()
    runtime = await started(restarted)  # the records come back as the partition loads
    try:
        assert restarted.events(G) == log.events()
    finally:
        await runtime.stop()
