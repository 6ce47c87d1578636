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
           "protocol_type": None, "classic_members": None}
    row.update(fields)
    return row


def tp(*parts: int) -> list[dict[str, Any]]:
    return [{"topic_id": "T", "partitions": list(parts)}]


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
