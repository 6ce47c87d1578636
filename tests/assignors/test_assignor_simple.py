"""Golden and property tests of the ``simple`` share group assignor.

What the property tests assert, per run of the algorithm (a *pool*: the whole group if every
member subscribes to the same topics, else one topic and the members subscribed to it), with
``s = desired_sharing = ceil(M / P)`` and ``want`` the members' desired counts:

* the result equals a slow, literal model of Kafka's steps (``simple_reference``);
* every assignable partition has at least 1 and at most ``s`` members (``s <= M``, so
  ``min(s, subscribers) == s``); every member holds at least ``want - 1`` and at most
  ``want`` partitions of the pool. That is Kafka's tolerated imbalance: the walk over the
  unfilled members may give up on a partition none of them can take;
* when ``s == 1`` it is exact: one member per partition, every member at ``want``, except
  exactly one member one short when the float rounding of Kafka's formula makes the desired
  counts add up to ``P + 1``;
* from scratch (nobody holds anything) every partition has exactly ``s`` members;
* members get only partitions of topics they subscribe to, within the partition counts;
* stickiness: after a member joins (or leaves without changing ``s``), a member whose
  previous count is within its new desired count keeps all its partitions, and a member
  above it keeps exactly ``want`` of its previous partitions and gets nothing new;
* deterministic: the same answer for the same spec, a pickled spec, or the input records in
  another order.
"""

from __future__ import annotations

import pickle
import uuid
from collections import Counter
from collections.abc import Hashable
from functools import cache

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNORS,
    DEFAULT_SHARE_ASSIGNOR,
    SHARE_ASSIGNORS,
    AssignmentSpec,
    GroupAssignment,
    MemberSpec,
    SimpleAssignor,
    TopicMetadata,
    get_assignor,
)
from assignors.simple import desired_counts

from .assignor_checks import BOOLEANS, integers, sets_of, topic_id, with_current
from .simple_reference import pools, reference_assign, resolved_subscriptions

ASSIGNOR = SimpleAssignor()
PROPS = settings(max_examples=200, deadline=None)
T0, T1 = topic_id(0), topic_id(1)
GHOST = topic_id(99)
"""A topic id no spec knows."""

TopicPartition = tuple[Hashable, int]


def run(members: list[MemberSpec], topics: list[TopicMetadata]) -> GroupAssignment:
    spec = AssignmentSpec.build(members, topics, shared=True)
    spec.validate()
    return ASSIGNOR.assign(spec)


def holdings(result: GroupAssignment) -> dict[str, set[TopicPartition]]:
    return {
        m: {(t, p) for t, parts in ts.items() for p in parts}
        for m, ts in result.members.items()
    }


def one_topic(result: GroupAssignment, topic: Hashable = T0) -> dict[str, list[int]]:
    return {m: list(ts.get(topic, ())) for m, ts in result.members.items()}


@cache
def _held(partition_count: int) -> st.SearchStrategy[frozenset[int]]:
    return st.frozensets(integers(0, partition_count + 1))


@st.composite
def share_group(
    draw: st.DrawFn, homogeneous: bool | None = None, max_members: int = 8
) -> tuple[list[MemberSpec], list[TopicMetadata]]:
    """Members, topics, subscriptions and an arbitrary current target: any member may hold
    any partition, shared or not, subscribed or not, even beyond the partition count."""
    topics = [
        TopicMetadata(topic_id(i), f"t{i}", draw(integers(0, 8)))
        for i in range(draw(integers(1, 4)))
    ]
    ids = tuple(t.topic_id for t in topics)
    same = draw(BOOLEANS) if homogeneous is None else homogeneous
    common = draw(sets_of(ids, min_size=1))
    members = []
    for i in range(draw(integers(1, max_members))):
        subs = set(common) if same else draw(sets_of(ids))
        if draw(BOOLEANS):
            subs.add(GHOST)
        held: dict[Hashable, frozenset[int]] = {}
        for t in topics:
            if draw(BOOLEANS):
                held[t.topic_id] = draw(_held(t.partition_count))
        members.append(MemberSpec(f"m{i}", frozenset(subs), assignment=held))
    return members, topics


def check_bounds(
    members: list[MemberSpec], topics: list[TopicMetadata], result: GroupAssignment
) -> None:
    """The structural guarantees listed in the module docstring."""
    held = holdings(result)
    subs = resolved_subscriptions(members, topics)
    count = {t.topic_id: t.partition_count for t in topics}
    assert set(held) == set(subs)
    for m, tps in held.items():
        for t, p in tps:
            assert t in subs[m], f"{m} got {t}:{p} without subscribing"
            assert 0 <= p < count[t]
    for pool_members, partitions in pools(members, topics):
        sharing, want = desired_counts(len(pool_members), len(partitions))
        in_pool = set(partitions)
        owners = Counter(tp for m in pool_members for tp in held[m] & in_pool)
        for tp in partitions:
            assert 1 <= owners[tp] <= sharing, (tp, owners[tp], sharing)
        got = [len(held[m] & in_pool) for m in pool_members]
        for m, c, w in zip(pool_members, got, want, strict=True):
            assert w - 1 <= c <= w, (m, c, w)
        if sharing == 1:
            excess = sum(want) - len(partitions)
            assert excess in (0, 1)
            assert sum(w - c for c, w in zip(got, want, strict=True)) == excess


# --- Section 2's worked examples ------------------------------------------------------------


def test_worked_example_two_members_then_a_third_joins() -> None:
    topics = [TopicMetadata(T0, "T", 3)]
    first = run([MemberSpec("A", {T0}), MemberSpec("B", {T0})], topics)
    assert one_topic(first) == {"A": [0, 2], "B": [1]}
    members = [*with_current([MemberSpec("A", {T0}), MemberSpec("B", {T0})], first),
               MemberSpec("C", {T0})]
    spec = AssignmentSpec.build(members, topics, shared=True)
    second = ASSIGNOR.assign(spec)
    # A is overfilled and loses p0, B keeps p1, C takes the orphaned p0
    assert one_topic(second) == {"A": [2], "B": [1], "C": [0]}
    assert second.member_partitions[1] is spec.current_partitions[1]  # B's target is kept


def test_worked_example_two_partitions_three_members() -> None:
    members = [MemberSpec(m, {T0}) for m in "ABC"]
    result = run(members, [TopicMetadata(T0, "T", 2)])
    # desiredSharing 2, counts A=2, B=1, C=1: p0 to A and B, p1 to C, then A (wrap)
    assert one_topic(result) == {"A": [0, 1], "B": [0], "C": [1]}


def test_worked_example_one_partition_three_members() -> None:
    members = [MemberSpec(m, {T0}) for m in "ABC"]
    result = run(members, [TopicMetadata(T0, "T", 1)])
    assert one_topic(result) == {"A": [0], "B": [0], "C": [0]}


def test_desired_counts_follow_kafkas_formula() -> None:
    assert desired_counts(2, 3) == (1, [2, 1])
    assert desired_counts(3, 3) == (1, [1, 1, 1])
    assert desired_counts(3, 2) == (2, [2, 1, 1])
    assert desired_counts(3, 1) == (3, [1, 1, 1])
    assert desired_counts(10, 3) == (4, [2, 1, 1, 1, 1, 2, 1, 1, 1, 1])
    assert desired_counts(4, 0) == (0, [0, 0, 0, 0])
    # 29 / 7 * 7 rounds to 29.000000000000004 in doubles (in Java too): one extra slot
    sharing, want = desired_counts(7, 29)
    assert sharing == 1 and sum(want) == 30


def test_float_rounding_leaves_one_member_one_short() -> None:
    members = [MemberSpec(f"m{i}", {T0}) for i in range(7)]
    result = run(members, [TopicMetadata(T0, "T", 29)])
    _, want = desired_counts(7, 29)
    got = [len(p) for p in one_topic(result).values()]
    assert sum(got) == 29
    assert [w - c for c, w in zip(got, want, strict=True)].count(1) == 1


def test_shared_partitions_move_when_partitions_are_added() -> None:
    topics = [TopicMetadata(T0, "T", 1)]
    members = [MemberSpec(m, {T0}) for m in "ABC"]
    before = run(members, topics)
    assert one_topic(before) == {"A": [0], "B": [0], "C": [0]}
    # p1, p2 get initialized: desiredSharing drops to 1, p0 is overshared and A and B
    # (its first holders) give it up, then take the new partitions
    after = run(with_current(members, before), [TopicMetadata(T0, "T", 3)])
    assert one_topic(after) == {"A": [1], "B": [2], "C": [0]}


def test_only_offered_partitions_are_assigned() -> None:
    members = [MemberSpec("A", {T0}, assignment={T0: [0, 5, 7]}), MemberSpec("B", {T0})]
    result = run(members, [TopicMetadata(T0, "T", 4)])
    # A keeps p0 (p5, p7 are not offered); then the iterator deals p1 to A, p2 to B, and
    # (A being full) p3 to B
    assert one_topic(result) == {"A": [0, 1], "B": [2, 3]}


def test_unsubscribed_topics_are_revoked() -> None:
    topics = [TopicMetadata(T0, "a", 2), TopicMetadata(T1, "b", 2)]
    members = [
        MemberSpec("A", {T0}, assignment={T0: [0], T1: [0, 1]}),
        MemberSpec("B", {T0, T1}, assignment={T0: [1]}),
    ]
    result = run(members, topics)
    assert result.members == {"A": {T0: (0,)}, "B": {T0: (1,), T1: (0, 1)}}


def test_kafka_heterogeneous_with_non_assignable_topic() -> None:
    """Kafka's testAssignWithThreeMembersThreeTopicsHeterogeneousWithNonAssignableTopic (the
    uninitialized topic3 offers no partitions)."""
    t1, t2, t3 = topic_id(1), topic_id(2), topic_id(3)
    topics = [TopicMetadata(t1, "topic1", 3), TopicMetadata(t2, "topic2", 3),
              TopicMetadata(t3, "topic3", 0)]
    members = [MemberSpec("A", {t1, t2}), MemberSpec("B", {t3}), MemberSpec("C", {t2, t3})]
    assert run(members, topics).members == {
        "A": {t1: (0, 1, 2), t2: (0, 2)},
        "B": {},
        "C": {t2: (1,)},
    }


def test_kafka_heterogeneous_member_without_topics() -> None:
    """Kafka's testAssignWithOneMemberNoAssignedTopicHeterogeneous."""
    t1, t2 = topic_id(1), topic_id(2)
    topics = [TopicMetadata(t1, "topic1", 3), TopicMetadata(t2, "topic2", 2)]
    members = [MemberSpec("A", {t1, t2}), MemberSpec("B", set())]
    assert run(members, topics).members == {"A": {t1: (0, 1, 2), t2: (0, 1)}, "B": {}}


def test_kafka_incremental_members_up_then_down() -> None:
    """Kafka's testIncrementalAssignment{Increasing,Decreasing}MembersHomogeneous: 24
    partitions, members M0..M100 join one at a time, then leave one at a time; every
    partition stays assigned (checked here with all the bounds)."""
    topics = [TopicMetadata(T0, "topic1", 24)]
    members: list[MemberSpec] = []
    for i in range(101):
        members = [*members, MemberSpec(f"M{i}", {T0})]
        members = with_current(members, result := run(members, topics))
        check_bounds(members, topics, result)
    for i in range(100, 0, -1):
        members = [m for m in members if m.member_id != f"M{i}"]
        members = with_current(members, result := run(members, topics))
        check_bounds(members, topics, result)
    assert one_topic(result) == {"M0": list(range(24))}


def seven_members(current: dict[str, list[int]]) -> dict[str, list[int]]:
    """Seven members m0..m6 on one topic of 3 partitions: desiredSharing 3, desired counts
    m0=2, m1=1, m2=1, m3=2, m4=1, m5=1, m6=1."""
    assert desired_counts(7, 3) == (3, [2, 1, 1, 2, 1, 1, 1])
    members = [MemberSpec(f"m{i}", {T0}, assignment={T0: current.get(f"m{i}", [])})
               for i in range(7)]
    return one_topic(run(members, [TopicMetadata(T0, "T", 3)]))


def test_kafka_quirk_a_member_taking_a_partition_twice() -> None:
    # unfilled m0 and m3; p0 wants 3 members: m0, m3, then the iterator wraps to m0, who
    # took p0 a moment ago. Kafka only skips the holders from before the walk, so m0 "takes"
    # p0 again: nothing changes for m0, but p0's need is met (2 members), and the walk goes
    # on: p2 wants one more and the iterator gives it m3
    result = seven_members({"m1": [1], "m2": [2], "m4": [1], "m5": [2], "m6": [1]})
    assert result == {"m0": [0], "m1": [1], "m2": [2], "m3": [0, 2], "m4": [1], "m5": [2],
                      "m6": [1]}


def test_kafka_quirk_a_fruitless_pass_ends_the_walk() -> None:
    # m1 is overfilled and gives up p0. Unfilled m0 and m3 both hold p0, which wants one
    # more: a whole pass assigns nothing and Kafka stops there, so p2 (held by m5, m6) stays
    # one member short although m0 and m3 could take it
    result = seven_members({"m0": [0], "m1": [0, 1], "m2": [1], "m3": [0], "m4": [1],
                            "m5": [2], "m6": [2]})
    assert result == {"m0": [0], "m1": [1], "m2": [1], "m3": [0], "m4": [1], "m5": [2],
                      "m6": [2]}


# --- registry and trivial groups ------------------------------------------------------------


def test_registry() -> None:
    assert isinstance(get_assignor("simple"), SimpleAssignor)
    assert SHARE_ASSIGNORS == {"simple": SimpleAssignor}
    assert DEFAULT_SHARE_ASSIGNOR == "simple"
    # not a consumer group assignor: group.consumer.assignors takes ASSIGNORS' names
    assert "simple" not in ASSIGNORS
    assert DEFAULT_ASSIGNORS == ("uniform", "range")
    assert isinstance(pickle.loads(pickle.dumps(ASSIGNOR)), SimpleAssignor)


def test_empty_group() -> None:
    spec = AssignmentSpec.build([], [TopicMetadata(T0, "a", 3)], shared=True)
    assert ASSIGNOR.assign(spec).members == {}


@pytest.mark.parametrize("subscriptions", [({T0}, {T0}), ({T0}, {T1}), ({GHOST}, set())])
def test_nothing_to_assign(subscriptions: tuple[set[uuid.UUID], set[uuid.UUID]]) -> None:
    topics = [TopicMetadata(T0, "a", 0), TopicMetadata(T1, "b", 0)]
    members = [
        MemberSpec("A", subscriptions[0], assignment={T0: [0], T1: [1]}),
        MemberSpec("B", subscriptions[1]),
    ]
    assert run(members, topics).members == {"A": {}, "B": {}}


def test_fresh_pools_are_exact() -> None:
    """From scratch every partition gets exactly desiredSharing members (M, P <= 30)."""
    for m in range(1, 31):
        members = [MemberSpec(f"m{i:02d}", {T0}) for i in range(m)]
        for p in range(1, 31):
            result = one_topic(run(members, [TopicMetadata(T0, "T", p)]))
            sharing, want = desired_counts(m, p)
            owners = Counter(q for parts in result.values() for q in parts)
            assert all(owners[q] == sharing for q in range(p)), (m, p)
            got = [len(parts) for parts in result.values()]
            assert sum(got) == sharing * p
            if sum(want) == sharing * p:
                assert got == want, (m, p)
            else:
                assert sum(want) == sharing * p + 1


# --- properties -----------------------------------------------------------------------------


@pytest.mark.slow
@PROPS
@given(share_group())
def test_matches_the_reference_model(group: tuple[list[MemberSpec], list[TopicMetadata]]
                                     ) -> None:
    members, topics = group
    assert run(members, topics).members == reference_assign(members, topics)


@pytest.mark.slow
@PROPS
@given(share_group())
def test_bounds_and_subscriptions(group: tuple[list[MemberSpec], list[TopicMetadata]]) -> None:
    members, topics = group
    check_bounds(members, topics, run(members, topics))


@pytest.mark.slow
@PROPS
@given(share_group())
def test_from_scratch_every_partition_is_fully_shared(
    group: tuple[list[MemberSpec], list[TopicMetadata]]
) -> None:
    members, topics = group
    members = [MemberSpec(m.member_id, m.subscribed_topic_ids) for m in members]
    held = holdings(run(members, topics))
    for pool_members, partitions in pools(members, topics):
        sharing, _ = desired_counts(len(pool_members), len(partitions))
        owners = Counter(tp for m in pool_members for tp in held[m])
        assert all(owners[tp] == sharing for tp in partitions)


@pytest.mark.slow
@PROPS
@given(share_group())
def test_deterministic(group: tuple[list[MemberSpec], list[TopicMetadata]]) -> None:
    members, topics = group
    spec = AssignmentSpec.build(members, topics, shared=True)
    result = ASSIGNOR.assign(spec)
    assert ASSIGNOR.assign(spec) == result
    assert ASSIGNOR.assign(pickle.loads(pickle.dumps(spec))) == result
    assert pickle.loads(pickle.dumps(result)) == result
    reordered = [
        MemberSpec(m.member_id, m.subscribed_topic_ids,
                   assignment=dict(reversed(list(m.assignment.items()))))
        for m in reversed(members)
    ]
    assert run(reordered, topics[::-1]) == result


@pytest.mark.slow
@PROPS
@given(share_group(homogeneous=False))
def test_heterogeneous_is_the_same_algorithm_per_topic(
    group: tuple[list[MemberSpec], list[TopicMetadata]]
) -> None:
    members, topics = group
    subs = resolved_subscriptions(members, topics)
    assume(len(set(subs.values())) > 1)
    result = run(members, topics).members
    for topic in topics:
        t = topic.topic_id
        alone = [
            MemberSpec(m.member_id, {t}, assignment={t: m.assignment.get(t, ())})
            for m in members if t in subs[m.member_id]
        ]
        expected = run(alone, [topic]).members
        for m in alone:
            assert result[m.member_id].get(t, ()) == expected[m.member_id].get(t, ())


@pytest.mark.slow
@PROPS
@given(share_group())
def test_rerun_on_its_own_target_only_adds(
    group: tuple[list[MemberSpec], list[TopicMetadata]]
) -> None:
    members, topics = group
    before = run(members, topics)
    again_members = with_current(members, before)
    spec = AssignmentSpec.build(again_members, topics, shared=True)
    after = ASSIGNOR.assign(spec)
    old, new = holdings(before), holdings(after)
    for m in old:
        assert old[m] <= new[m], m
    for index, m in enumerate(spec.member_ids):
        if new[m] == old[m]:  # unchanged members keep their target's tuples
            assert after.member_partitions[index] is spec.current_partitions[index]


def change(
    data: st.DataObject, members: list[MemberSpec], topics: list[TopicMetadata], same: bool
) -> list[MemberSpec]:
    """The group after one member leaves or one joins (same subscription if ``same``)."""
    if len(members) > 1 and data.draw(BOOLEANS, label="leave"):
        gone = data.draw(integers(0, len(members) - 1), label="who")
        return members[:gone] + members[gone + 1:]
    subs = members[0].subscribed_topic_ids
    if not same:
        ids = tuple(t.topic_id for t in topics)
        subs = frozenset(data.draw(sets_of(ids), label="subs"))
    return [*members, MemberSpec("new", subs)]


@pytest.mark.slow
@PROPS
@given(st.booleans().flatmap(lambda same: st.tuples(st.just(same), share_group(same))),
       st.data())
def test_join_or_leave_is_sticky(
    case: tuple[bool, tuple[list[MemberSpec], list[TopicMetadata]]], data: st.DataObject
) -> None:
    same, (members, topics) = case
    before = run(members, topics)
    after_members = change(data, with_current(members, before), topics, same)
    after = run(after_members, topics)
    check_bounds(after_members, topics, after)
    old, new = holdings(before), holdings(after)
    old_pools = {frozenset(t for t, _ in ps): (ms, ps) for ms, ps in pools(members, topics)}
    for pool_members, partitions in pools(after_members, topics):
        previous = old_pools.get(frozenset(t for t, _ in partitions))
        if previous is None:
            continue
        sharing, want = desired_counts(len(pool_members), len(partitions))
        old_sharing, _ = desired_counts(len(previous[0]), len(previous[1]))
        if sharing < old_sharing:
            continue  # a leave lowered desiredSharing: overshared partitions move
        in_pool = set(partitions)
        for m, w in zip(pool_members, want, strict=True):
            if m not in old or m not in previous[0]:
                continue
            was, now = old[m] & in_pool, new[m] & in_pool
            if len(was) <= w:
                assert was <= now, (m, was, now)
            else:
                assert now <= was and len(now) == w, (m, was, now)


def test_large_group_join() -> None:
    topics = [TopicMetadata(topic_id(i), f"t{i:03d}", 20) for i in range(100)]
    ids = [t.topic_id for t in topics]
    members = [MemberSpec(f"m{i:04d}", ids) for i in range(299)]
    before = run(members, topics)
    check_bounds(members, topics, before)
    joined = [*with_current(members, before), MemberSpec("m9999", ids)]
    after = run(joined, topics)
    check_bounds(joined, topics, after)
    old, new = holdings(before), holdings(after)
    _, want = desired_counts(300, 2000)
    for m, w in zip(sorted(new), want, strict=True):
        if m in old:
            assert (old[m] <= new[m]) if len(old[m]) <= w else (new[m] <= old[m])
    assert len(new["m9999"]) == want[-1]
