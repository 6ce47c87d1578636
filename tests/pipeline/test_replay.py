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
