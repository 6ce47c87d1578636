"""The per-group replay (pure Python, no Spark)."""

from __future__ import annotations

from typing import Any

from pipeline.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from pipeline.replay import moved, replay_group

_offset = 0


def rec(kind: str, ts: int, **fields: Any) -> dict[str, Any]:
    global _offset
    _offset += 1
    row = {"type": kind, "timestamp": ts, "offset": _offset, "partition": 0,
           "tombstone": False, "member_id": None, "epoch": None, "member_state": None,
           "assignment_timestamp": None, "partitions": None, "subscribed_topics": None,
           "protocol_type": None, "classic_members": None, "active_tasks": None,
           "standby_tasks": None}
    row.update(fields)
    return row


def tp(*parts: int) -> list[dict[str, Any]]:
    return [{"topic_id": "T", "partitions": list(parts)}]


def tasks(**by_subtopology: list[int]) -> list[dict[str, Any]]:
    """Streams tasks, ``tasks(s0=[0, 1])`` for subtopology "0" (as in a target record)."""
    return [{"subtopology_id": s.removeprefix("s"), "partitions": p, "assignment_epochs": None}
            for s, p in by_subtopology.items()]


def test_moved_counts_only_partitions_that_change_owner() -> None:
    before = {("t", 0): "a", ("t", 1): "a", ("t", 2): "b"}
    after = {("t", 0): "a", ("t", 1): "b", ("t", 3): "b"}  # 1 moved, 2 dropped, 3 new
    assert moved(before, after) == 1


def test_consumer_group_runs_rebalances_and_timeline() -> None:
    rows = [
        rec("ConsumerGroupMemberMetadata", 100, member_id="a", subscribed_topics=["t"]),
        rec("ConsumerGroupMetadata", 100, epoch=1),
        rec("ConsumerGroupTargetAssignmentMember", 110, member_id="a", partitions=tp(0, 1)),
        rec("ConsumerGroupTargetAssignmentMetadata", 110, epoch=1, assignment_timestamp=111),
        rec("ConsumerGroupCurrentMemberAssignment", 150, member_id="a", epoch=1,
            member_state=0, partitions=tp(0, 1)),
        rec("ConsumerGroupMemberMetadata", 1000, member_id="b", subscribed_topics=["t"]),
        rec("ConsumerGroupMetadata", 1000, epoch=2),
        rec("ConsumerGroupTargetAssignmentMember", 1500, member_id="a", partitions=tp(0)),
        rec("ConsumerGroupTargetAssignmentMember", 1500, member_id="b", partitions=tp(1)),
        rec("ConsumerGroupTargetAssignmentMetadata", 1500, epoch=2, assignment_timestamp=1501),
        rec("ConsumerGroupCurrentMemberAssignment", 1600, member_id="a", epoch=1,
            member_state=1, partitions=tp(0)),
        rec("ConsumerGroupCurrentMemberAssignment", 1700, member_id="a", epoch=2,
            member_state=0, partitions=tp(0)),
        # a third member joins before b reconciled: epoch 2's rebalance is superseded
        rec("ConsumerGroupMemberMetadata", 1800, member_id="c", subscribed_topics=["t"]),
        rec("ConsumerGroupMetadata", 1800, epoch=3),
        rec("ConsumerGroupCurrentMemberAssignment", 1900, member_id="b", epoch=2,
            member_state=0, partitions=tp(1)),
    ]
    out = replay_group("s", "g", rows)
    assert [(r["epoch"], r["members"], r["partitions"], r["partitions_moved"],
             r["timestamp"], r["since_previous_ms"]) for r in out.runs] == [
        (1, 1, 2, 0, 111, None), (2, 2, 2, 1, 1501, 1390)]
    assert [(r["epoch"], r["status"], r["duration_ms"]) for r in out.rebalances] == [
        (1, "completed", 50), (2, "superseded", None), (3, "incomplete", None)]
    events = [(r["member_id"], r["event"], r["epoch"]) for r in out.timeline]
    assert events == [("a", "joined", None), ("a", "epoch", 1), ("b", "joined", None),
                      ("a", "epoch", 2), ("c", "joined", None), ("b", "epoch", 2)]
    assert out.state[0]["state"] == "live" and out.state[0]["members"] == 3


def test_classic_group_generations() -> None:
    sub = encode_subscription(["t"])

    def member(mid: str, parts: list[int]) -> dict[str, Any]:
        return {"member_id": mid, "assignment": encode_assignment([("t", parts)]),
                "subscription": sub}

    rows = [
        rec("GroupMetadata", 10, epoch=1, protocol_type="consumer",
            classic_members=[member("a", [0, 1, 2])]),
        rec("GroupMetadata", 20, epoch=2, protocol_type="consumer",
            classic_members=[member("a", [0]), member("b", [1, 2])]),
        rec("GroupMetadata", 30, epoch=3, protocol_type="consumer", assignment_timestamp=30,
            classic_members=[]),
    ]
    out = replay_group("s", "cl", rows)
    assert [(r["epoch"], r["members"], r["partitions"], r["partitions_moved"])
            for r in out.runs] == [(1, 1, 3, 0), (2, 2, 3, 2), (3, 0, 0, 0)]
    assert [r["status"] for r in out.rebalances] == ["completed", "completed", "empty"]
    assert [(r["member_id"], r["event"]) for r in out.timeline if r["event"] != "epoch"] == [
        ("a", "joined"), ("b", "joined"), ("a", "left"), ("b", "left")]
    assert out.state[0]["state"] == "empty" and out.state[0]["state_timestamp"] == 30


def test_consumer_protocol_roundtrip_and_garbage() -> None:
    data = encode_assignment([("x", [3, 1]), ("y", [])])
    assert decode_assignment(data) == [("x", [3, 1]), ("y", [])]
    assert decode_subscription(encode_subscription(["a", "b"])) == ["a", "b"]
    assert decode_assignment(b"\x00\x00\xff\xff\xff\xff") is None
    assert decode_assignment(b"") is None
    assert decode_subscription(b"\x00") is None


def test_share_group_runs_rebalances_and_timeline() -> None:
    """A share group as the coordinator writes it: epoch 2 first, a joining member at epoch 1
    until a target exists, members taking their target at once (always Stable), a partition
    shared by two members, and the last leave writing an empty target with Timestamp 0."""

    def target(ts: int, epoch: int, at: int, **members: list[int] | None) -> list[dict[str, Any]]:
        rows = [rec("ShareGroupTargetAssignmentMember", ts, member_id=m, tombstone=p is None,
                    partitions=None if p is None else tp(*p)) for m, p in members.items()]
        return [*rows, rec("ShareGroupTargetAssignmentMetadata", ts, epoch=epoch,
                           assignment_timestamp=at)]

    def current(ts: int, member: str, epoch: int) -> dict[str, Any]:
        return rec("ShareGroupCurrentMemberAssignment", ts, member_id=member, epoch=epoch,
                   member_state=0)

    def join(ts: int, member: str, epoch: int) -> list[dict[str, Any]]:
        return [rec("ShareGroupMemberMetadata", ts, member_id=member, subscribed_topics=["t"]),
                rec("ShareGroupMetadata", ts, epoch=epoch)]

    def leave(ts: int, member: str, epoch: int) -> list[dict[str, Any]]:
        return [rec(kind, ts, member_id=member, tombstone=True)
                for kind in ("ShareGroupCurrentMemberAssignment",
                             "ShareGroupTargetAssignmentMember", "ShareGroupMemberMetadata")
                ] + [rec("ShareGroupMetadata", ts, epoch=epoch)]

    rows = [
        *join(100, "a", 2), current(100, "a", 1),
        *target(105, 2, 106, a=[0, 1]), current(300, "a", 2),
        *join(1000, "b", 3), *target(1000, 3, 1001, a=[0], b=[1]), current(1000, "b", 3),
        current(1300, "a", 3),
        # c shares partition 0 with a: partition 0's owners change, nothing is revoked
        *join(2000, "c", 4), *target(2000, 4, 2001, c=[0]), current(2000, "c", 4),
        current(2100, "a", 4), current(2200, "b", 4),
        # a and b leave before the target of epoch 5 is computed: 5 is superseded by 6
        *leave(3000, "a", 5), *leave(3100, "b", 6),
        *target(3200, 6, 3200, c=[0, 1]), current(3200, "c", 6),
        # the last member leaves: an empty target, no assignor run (Timestamp 0)
        *leave(4000, "c", 7), *target(4000, 7, 0),
    ]
    out = replay_group("s", "q", rows)
    assert {r["group_type"] for r in out.runs + out.timeline + out.rebalances + out.state} == {
        "share"}
    assert [(r["epoch"], r["members"], r["partitions"], r["partitions_moved"], r["timestamp"],
             r["record_timestamp"], r["since_previous_ms"], r["epoch_bump_ms"])
            for r in out.runs] == [
        (2, 1, 2, 0, 106, 105, None, 100),
        (3, 2, 2, 1, 1001, 1000, 895, 1000),  # partition 1: a -> b
        (4, 3, 2, 1, 2001, 2000, 1000, 2000),  # partition 0: {a} -> {a, c}
        (6, 1, 2, 2, 3200, 3200, 1199, 3100),  # {a, c} -> {c}, {b} -> {c}
        (7, 0, 0, 0, 4000, 4000, 800, 4000)]
    assert [(r["epoch"], r["status"], r["started_ms"], r["duration_ms"])
            for r in out.rebalances] == [
        (2, "completed", 100, 200), (3, "completed", 1000, 300), (4, "completed", 2000, 200),
        (5, "superseded", 3000, None), (6, "completed", 3100, 100), (7, "empty", 4000, None)]
    assert [(r["member_id"], r["event"], r["epoch"]) for r in out.timeline] == [
        ("a", "joined", None), ("a", "epoch", 1), ("a", "epoch", 2),
        ("b", "joined", None), ("b", "epoch", 3), ("a", "epoch", 3),
        ("c", "joined", None), ("c", "epoch", 4), ("a", "epoch", 4), ("b", "epoch", 4),
        ("a", "left", None), ("b", "left", None), ("c", "epoch", 6), ("c", "left", None)]
    (state,) = out.state
    assert (state["state"], state["epoch"], state["members"], state["protocol_type"]) == (
        "empty", 7, 0, "share")


def test_share_and_consumer_groups_of_one_id_stay_apart() -> None:
    """A group id deleted as one type and recreated as another: one state row per type."""
    rows = [
        rec("ConsumerGroupMemberMetadata", 10, member_id="a", subscribed_topics=["t"]),
        rec("ConsumerGroupMetadata", 10, epoch=1),
        rec("ConsumerGroupMemberMetadata", 20, member_id="a", tombstone=True),
        rec("ConsumerGroupMetadata", 20, tombstone=True),
        rec("ShareGroupMemberMetadata", 30, member_id="b", subscribed_topics=["t"]),
        rec("ShareGroupMetadata", 30, epoch=2),
    ]
    out = replay_group("s", "g", rows)
    assert [(r["group_type"], r["state"], r["members"]) for r in out.state] == [
        ("consumer", "dead", 0), ("share", "live", 1)]
    assert [(r["group_type"], r["member_id"], r["event"]) for r in out.timeline] == [
        ("consumer", "a", "joined"), ("consumer", "a", "left"), ("share", "b", "joined")]


def test_consumer_group_emptied_without_a_target() -> None:
    """The last member leaving a consumer group bumps the epoch and writes no target: that
    rebalance is ``empty`` (all members gone), not ``incomplete``."""
    rows = [
        rec("ConsumerGroupMemberMetadata", 100, member_id="a", subscribed_topics=["t"]),
        rec("ConsumerGroupMetadata", 100, epoch=1),
        rec("ConsumerGroupTargetAssignmentMember", 110, member_id="a", partitions=tp(0)),
        rec("ConsumerGroupTargetAssignmentMetadata", 110, epoch=1, assignment_timestamp=110),
        rec("ConsumerGroupCurrentMemberAssignment", 150, member_id="a", epoch=1,
            member_state=0, partitions=tp(0)),
        rec("ConsumerGroupCurrentMemberAssignment", 900, member_id="a", tombstone=True),
        rec("ConsumerGroupTargetAssignmentMember", 900, member_id="a", tombstone=True),
        rec("ConsumerGroupMemberMetadata", 900, member_id="a", tombstone=True),
        rec("ConsumerGroupMetadata", 900, epoch=2),
    ]
    out = replay_group("s", "g", rows)
    assert [(r["epoch"], r["status"], r["started_ms"], r["completed_ms"])
            for r in out.rebalances] == [(1, "completed", 100, 150), (2, "empty", 900, None)]
    assert [(r["standby_tasks"], r["standby_tasks_moved"]) for r in out.runs] == [(None, None)]
    (state,) = out.state
    assert (state["state"], state["epoch"], state["members"]) == ("empty", 2, 0)


def streams_join(ts: int, member: str, epoch: int, topology: bool = False
                 ) -> list[dict[str, Any]]:
    rows = [rec("StreamsGroupMemberMetadata", ts, member_id=member)]
    if topology:
        rows.append(rec("StreamsGroupTopology", ts, subscribed_topics=["clicks", "app-repart"]))
    return [*rows, rec("StreamsGroupMetadata", ts, epoch=epoch)]


def streams_target(ts: int, epoch: int, at: int, **members: tuple[Any, Any] | None
                   ) -> list[dict[str, Any]]:
    """Target records of the members whose target changed ((active, standby) or None: a
    tombstone), then the metadata."""
    rows = [rec("StreamsGroupTargetAssignmentMember", ts, member_id=m, tombstone=t is None,
                active_tasks=None if t is None else t[0],
                standby_tasks=None if t is None else t[1]) for m, t in members.items()]
    return [*rows, rec("StreamsGroupTargetAssignmentMetadata", ts, epoch=epoch,
                       assignment_timestamp=at)]


def streams_current(ts: int, member: str, epoch: int, state: int = 1) -> dict[str, Any]:
    """A current assignment record (streams MemberState: 1 Stable, 2 UnrevokedTasks,
    3 UnreleasedTasks)."""
    return rec("StreamsGroupCurrentMemberAssignment", ts, member_id=member, epoch=epoch,
               member_state=state)


def streams_leave(ts: int, member: str, epoch: int) -> list[dict[str, Any]]:
    return [rec(kind, ts, member_id=member, tombstone=True)
            for kind in ("StreamsGroupCurrentMemberAssignment",
                         "StreamsGroupTargetAssignmentMember", "StreamsGroupMemberMetadata")
            ] + [rec("StreamsGroupMetadata", ts, epoch=epoch)]


def test_streams_group_runs_rebalances_and_timeline() -> None:
    """A streams group as the coordinator writes it: tasks (subtopology, partition) moved
    counted on the active tasks' owners, standby tasks on their own; members Stable at state 1
    (2 and 3 are still reconciling); only members whose target changed get a target record; a
    topology change superseding a leave's epoch; the last members leaving with no target."""
    rows = [
        *streams_join(100, "a", 2, topology=True), streams_current(100, "a", 1),
        *streams_target(105, 2, 106, a=(tasks(s0=[0, 1], s1=[0, 1]), [])),
        streams_current(200, "a", 2),
        # b joins: a gives up (0, 1) and (1, 1); standbys appear
        *streams_join(1000, "b", 3),
        *streams_target(1000, 3, 1001, a=(tasks(s0=[0], s1=[0]), tasks(s1=[1])),
                        b=(tasks(s0=[1], s1=[1]), tasks(s1=[0]))),
        streams_current(1000, "b", 3, state=3),  # waits for a to release its tasks
        streams_current(1100, "a", 2, state=2),  # a has tasks to revoke, at its old epoch
        streams_current(1200, "a", 3), streams_current(1300, "b", 3),
        # c joins: takes (0, 0) active from a and a's standby (1, 1); b's target is unchanged
        *streams_join(2000, "c", 4),
        *streams_target(2000, 4, 2002, a=(tasks(s1=[0]), []),
                        c=(tasks(s0=[0]), tasks(s1=[1]))),
        streams_current(2000, "c", 4, state=3), streams_current(2100, "a", 4),
        streams_current(2200, "c", 4), streams_current(2300, "b", 4),
        # b leaves (epoch 5); the validated topology changes before a target (epoch 6)
        *streams_leave(3000, "b", 5), rec("StreamsGroupMetadata", 3050, epoch=6),
        *streams_target(3100, 6, 3100, a=(tasks(s0=[1], s1=[0]), tasks(s1=[1])),
                        c=(tasks(s0=[0], s1=[1]), tasks(s1=[0]))),
        streams_current(3150, "a", 6), streams_current(3200, "c", 6),
        # everyone leaves: epoch bumps, no target
        *streams_leave(4000, "a", 7), *streams_leave(4100, "c", 8),
    ]
    out = replay_group("s", "app", rows)
    assert {r["group_type"] for r in out.runs + out.timeline + out.rebalances + out.state} == {
        "streams"}
    assert [(r["epoch"], r["members"], r["partitions"], r["partitions_moved"],
             r["standby_tasks"], r["standby_tasks_moved"], r["timestamp"],
             r["record_timestamp"], r["since_previous_ms"], r["epoch_bump_ms"])
            for r in out.runs] == [
        (2, 1, 4, 0, 0, 0, 106, 105, None, 100),
        (3, 2, 4, 2, 2, 0, 1001, 1000, 895, 1000),  # (0,1), (1,1): a -> b; standbys new
        (4, 3, 4, 1, 2, 1, 2002, 2000, 1001, 2000),  # (0,0): a -> c; standby (1,1): a -> c
        (6, 2, 4, 2, 2, 2, 3100, 3100, 1098, 3050),  # b's tasks to a and c; both standbys
    ]
    assert [(r["epoch"], r["status"], r["started_ms"], r["target_ms"], r["duration_ms"])
            for r in out.rebalances] == [
        (2, "completed", 100, 106, 100), (3, "completed", 1000, 1001, 300),
        (4, "completed", 2000, 2002, 300), (5, "superseded", 3000, None, None),
        (6, "completed", 3050, 3100, 150), (7, "empty", 4000, None, None),
        (8, "empty", 4100, None, None)]
    assert [(r["member_id"], r["event"], r["epoch"], r["timestamp"]) for r in out.timeline] == [
        ("a", "joined", None, 100), ("a", "epoch", 1, 100), ("a", "epoch", 2, 200),
        ("b", "joined", None, 1000), ("b", "epoch", 3, 1000), ("a", "epoch", 3, 1200),
        ("c", "joined", None, 2000), ("c", "epoch", 4, 2000), ("a", "epoch", 4, 2100),
        ("b", "epoch", 4, 2300), ("b", "left", None, 3000), ("a", "epoch", 6, 3150),
        ("c", "epoch", 6, 3200), ("a", "left", None, 4000), ("c", "left", None, 4100)]
    (state,) = out.state
    assert (state["state"], state["state_timestamp"], state["epoch"], state["members"],
            state["subscribed_topics"], state["protocol_type"]) == (
        "empty", 4100, 8, 0, ["app-repart", "clicks"], "streams")


def test_streams_group_deleted_and_other_types_apart() -> None:
    """A streams group deleted (Kafka's tombstone order: current, target, target metadata,
    members, group metadata, topology) is dead with no topics; a consumer group of the same
    id before it keeps its own rows."""
    rows = [
        rec("ConsumerGroupMemberMetadata", 10, member_id="x", subscribed_topics=["t"]),
        rec("ConsumerGroupMetadata", 10, epoch=1),
        *streams_join(20, "a", 2, topology=True), streams_current(20, "a", 1),
        *streams_target(25, 2, 25, a=(tasks(s0=[0]), [])), streams_current(30, "a", 2),
        rec("StreamsGroupCurrentMemberAssignment", 40, member_id="a", tombstone=True),
        rec("StreamsGroupTargetAssignmentMember", 40, member_id="a", tombstone=True),
        rec("StreamsGroupTargetAssignmentMetadata", 40, tombstone=True),
        rec("StreamsGroupMemberMetadata", 40, member_id="a", tombstone=True),
        rec("StreamsGroupMetadata", 40, tombstone=True),
        rec("StreamsGroupTopology", 40, tombstone=True),
    ]
    out = replay_group("s", "g", rows)
    assert [(r["group_type"], r["state"], r["members"], r["subscribed_topics"])
            for r in out.state] == [("consumer", "live", 1, ["t"]), ("streams", "dead", 0, [])]
    assert [(r["group_type"], r["epoch"], r["status"]) for r in out.rebalances] == [
        ("streams", 2, "completed"), ("consumer", 1, "incomplete")]
    assert [(r["group_type"], r["member_id"], r["event"]) for r in out.timeline] == [
        ("consumer", "x", "joined"), ("streams", "a", "joined"), ("streams", "a", "epoch"),
        ("streams", "a", "epoch"), ("streams", "a", "left")]
