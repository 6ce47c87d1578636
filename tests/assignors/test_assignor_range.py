"""Property and golden tests of the ``range`` assignor."""

from __future__ import annotations

import pickle
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import MemberSpec, RangeAssignor, TopicMetadata

from .assignor_checks import (
    build,
    check_per_topic_balance,
    check_valid,
    group_strategy,
    held_by,
    owners,
    subscribers,
    topic_id,
    with_current,
)
from .test_assignor_uniform import change

ASSIGNOR = RangeAssignor()
PROPS = settings(max_examples=150, deadline=None)
T0, T1, T2 = topic_id(0), topic_id(1), topic_id(2)


def check_co_partitioned(members, topics, result) -> None:
    """Topics with equal partition counts and subscribers map partition numbers alike."""
    subs = subscribers(members, topics)
    own = owners(result)
    classes = defaultdict(list)
    for t in topics:
        if subs[t.topic_id]:
            classes[t.partition_count, frozenset(subs[t.topic_id])].append(t.topic_id)
    for (n, _), tids in classes.items():
        for p in range(n):
            assert len({own[tid, p] for tid in tids}) == 1, (tids, p)


@pytest.mark.slow
@PROPS
@given(group_strategy())
def test_valid_balanced_co_partitioned_deterministic(group) -> None:
    members, topics = group
    spec = build(members, topics)
    result = ASSIGNOR.assign(spec)
    check_valid(members, topics, result)
    check_per_topic_balance(members, topics, result)
    check_co_partitioned(members, topics, result)
    assert ASSIGNOR.assign(spec) == result
    assert ASSIGNOR.assign(pickle.loads(pickle.dumps(spec))) == result
    assert ASSIGNOR.assign(build(members[::-1], topics[::-1])) == result


@pytest.mark.slow
@PROPS
@given(group_strategy(), st.data())
def test_join_or_leave_is_sticky(group, data) -> None:
    members, topics = group
    same = len({m.subscribed_topic_ids for m in members}) == 1
    before = ASSIGNOR.assign(build(members, topics))
    after_members = change(data, with_current(members, before), topics, same=same)
    after = ASSIGNOR.assign(build(after_members, topics))
    check_valid(after_members, topics, after)
    check_per_topic_balance(after_members, topics, after)
    check_co_partitioned(after_members, topics, after)
    if not same:
        return
    # homogeneous: per member and topic, keep as many as the new count allows
    for m in after_members:
        if m.member_id not in before.members:
            continue
        for t in topics:
            old = set(before.members[m.member_id].get(t.topic_id, ()))
            new = set(after.members[m.member_id].get(t.topic_id, ()))
            assert len(old & new) == min(len(old), len(new)), (m.member_id, t.name)
    old_all, new_all = held_by(before), held_by(after)
    assert all(
        old_all[m] <= new_all[m] or new_all[m] <= old_all[m]
        for m in new_all if m in old_all
    )


def _members(*specs: tuple[str, set, str | None]) -> list[MemberSpec]:
    return [MemberSpec(mid, frozenset(subs), instance_id=iid) for mid, subs, iid in specs]


def test_kafka_javadoc_example() -> None:
    # RangeAssignor javadoc: C0, C1; t0, t1 with 3 partitions each
    topics = [TopicMetadata(T0, "t0", 3), TopicMetadata(T1, "t1", 3)]
    members = _members(("C0", {T0, T1}, None), ("C1", {T0, T1}, None))
    result = ASSIGNOR.assign(build(members, topics)).members
    assert result == {"C0": {T0: (0, 1), T1: (0, 1)}, "C1": {T0: (2,), T1: (2,)}}


def test_kafka_static_membership_example() -> None:
    # KIP-345 / RangeAssignor javadoc: with group.instance.id the order follows the instance
    # ids, so the assignment survives a restart that changes member ids
    topics = [TopicMetadata(T0, "t0", 3), TopicMetadata(T1, "t1", 3)]
    members = _members(("C0", {T0, T1}, "I1"), ("C1", {T0, T1}, "I0"))
    first = ASSIGNOR.assign(build(members, topics)).members
    assert first == {"C1": {T0: (0, 1), T1: (0, 1)}, "C0": {T0: (2,), T1: (2,)}}
    renamed = _members(("C2", {T0, T1}, "I1"), ("C3", {T0, T1}, "I0"))
    assert ASSIGNOR.assign(build(renamed, topics)).members == {
        "C3": {T0: (0, 1), T1: (0, 1)}, "C2": {T0: (2,), T1: (2,)},
    }


def test_kafka_server_side_heterogeneous_example() -> None:
    # Kafka RangeAssignorTest (three members, three topics, different subscriptions)
    topics = [TopicMetadata(T0, "t0", 3), TopicMetadata(T1, "t1", 3), TopicMetadata(T2, "t2", 2)]
    members = _members(("A", {T0, T1, T2}, None), ("B", {T1}, None), ("C", {T1, T2}, None))
    result = ASSIGNOR.assign(build(members, topics)).members
    assert result == {
        "A": {T0: (0, 1, 2), T1: (0,), T2: (0,)},
        "B": {T1: (1,)},
        "C": {T1: (2,), T2: (1,)},
    }


def test_more_members_than_partitions() -> None:
    topics = [TopicMetadata(T0, "t0", 2)]
    members = _members(("A", {T0}, None), ("B", {T0}, None), ("C", {T0}, None))
    assert ASSIGNOR.assign(build(members, topics)).members == {
        "A": {T0: (0,)}, "B": {T0: (1,)}, "C": {},
    }


def test_sticky_join_keeps_co_partitioning() -> None:
    topics = [TopicMetadata(T0, "t0", 6), TopicMetadata(T1, "t1", 6)]
    members = _members(("A", {T0, T1}, None), ("B", {T0, T1}, None))
    first = ASSIGNOR.assign(build(members, topics))
    joined = [*with_current(members, first), MemberSpec("C", frozenset({T0, T1}))]
    result = ASSIGNOR.assign(build(joined, topics)).members
    # A and B each keep their 2 lowest partitions, C gets the freed ones
    assert result == {
        "A": {T0: (0, 1), T1: (0, 1)},
        "B": {T0: (3, 4), T1: (3, 4)},
        "C": {T0: (2, 5), T1: (2, 5)},
    }


def test_rack_aware_prefers_local_replicas() -> None:
    racks = [{"r0"}, {"r1"}, {"r0"}, {"r1"}]
    topics = [TopicMetadata(T0, "t0", 4, racks), TopicMetadata(T1, "t1", 4, racks)]
    members = [
        MemberSpec("A", frozenset({T0, T1}), rack="r1"),
        MemberSpec("B", frozenset({T0, T1}), rack="r0"),
    ]
    result = ASSIGNOR.assign(build(members, topics)).members
    assert result == {"A": {T0: (1, 3), T1: (1, 3)}, "B": {T0: (0, 2), T1: (0, 2)}}
