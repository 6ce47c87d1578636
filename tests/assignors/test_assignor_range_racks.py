"""The ``range`` assignor's rack matching against the rule stated directly: each partition
in order goes to the first member (in order) still needing one that is on one of its
replicas' racks; the partitions left go in order to the members left. The assignor computes
it from the members' side with streams per rack (``_match_by_rack``); these tests compare
that with a straightforward partition-by-partition reference, on the helper itself (any
free partitions, members taking several, members without a rack or on a rack without
replicas) and end to end on a topic assigned from scratch with more partitions than
members."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import MemberSpec, RangeAssignor, TopicMetadata
from assignors.range_assignor import RackSets, _match_by_rack
from assignors.spec import NO_RACK, AssignmentSpec, Partitions

from .assignor_checks import build, topic_id

PROPS = settings(max_examples=int(os.environ.get("ASSIGNOR_EXAMPLES", "150")), deadline=None)
RACKS = ("r0", "r1", "r2", "r3", "r4")
"""Five racks, replicas on up to three: racks that bite (with three racks and three
replicas every partition is everywhere)."""
REPLICAS = st.sets(st.sampled_from(RACKS), max_size=3)


def _greedy(takers: list[int], member_racks: tuple[int, ...], free: list[int],
            sets: list[tuple[int, ...]]) -> list[int]:
    """The rule, partition by partition: the partition each entry of ``takers`` gets."""
    got: list[int | None] = [None] * len(takers)
    left = []
    for p in free:
        taker = next((j for j, m in enumerate(takers)
                      if got[j] is None and member_racks[m] in sets[p]), None)
        if taker is None:
            left.append(p)
        else:
            got[taker] = p
    rest = iter(left)
    return [p if p is not None else next(rest) for p in got]


@st.composite
def _matching_input(draw: st.DrawFn) -> tuple[AssignmentSpec, list[int], list[int], RackSets]:
    n = draw(st.integers(1, 16), label="partitions")
    replicas = draw(st.lists(REPLICAS, min_size=n, max_size=n), label="replicas")
    size = draw(st.integers(1, 8), label="members")
    # a rack no partition has a replica on ("r9") and no rack at all, too
    racks = draw(st.lists(st.sampled_from((*RACKS, "r9", None)), min_size=size,
                          max_size=size), label="member racks")
    topic = TopicMetadata(topic_id(0), "t0", n, replicas)
    members = [MemberSpec(f"m{i}", frozenset({topic.topic_id}), rack=rack)
               for i, rack in enumerate(racks)]
    spec = build(members, [topic])
    prs = spec.partition_racks[0]
    assert prs is not None
    rack_sets = RackSets([tuple(sorted(spec.rack_sets[k])) for k in prs])
    free = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1), label="free"))
    # members in order, each once per partition it is to get, as many as free partitions
    takers = sorted(draw(st.lists(st.integers(0, size - 1), min_size=len(free),
                                  max_size=len(free)), label="takers"))
    return spec, takers, free, rack_sets


@pytest.mark.slow
@PROPS
@given(_matching_input(), st.booleans())
def test_match_by_rack_is_the_partition_order_rule(case, whole) -> None:
    spec, takers, free, racks = case
    n = len(racks.sets)
    singles: list[Partitions] = [(p,) for p in range(n)]
    if whole:  # every partition free, given as None
        free = list(range(n))
        takers = sorted((takers * n)[:n])
    expected = _greedy(takers, spec.member_racks, free, racks.sets)
    got = _match_by_rack(spec, takers, None if whole else free, racks, singles)
    assert got == [singles[p] for p in expected]
    assert all(part is singles[part[0]] for part in got)  # the shared tuples
    # the same again: nothing cached was changed
    assert _match_by_rack(spec, takers, None if whole else free, racks, singles) == got


def test_match_by_rack_leftovers_go_in_order() -> None:
    """Partition 0's only replica rack has no member, member 1 has no rack: the rack pass
    gives partition 1 to member 0, then partitions 0 and 2 go to members 1 and 2."""
    topic = TopicMetadata(topic_id(0), "t0", 3, [{"r2"}, {"r0"}, {"r0"}])
    members = [MemberSpec("a", frozenset({topic.topic_id}), rack="r0"),
               MemberSpec("b", frozenset({topic.topic_id})),
               MemberSpec("c", frozenset({topic.topic_id}), rack="r1")]
    spec = build(members, [topic])
    prs = spec.partition_racks[0]
    assert prs is not None
    racks = RackSets([tuple(sorted(spec.rack_sets[k])) for k in prs])
    assert spec.member_racks[1] == NO_RACK
    singles: list[Partitions] = [(0,), (1,), (2,)]
    assert _match_by_rack(spec, [0, 1, 2], None, racks, singles) == [(1,), (0,), (2,)]


def _dense_by_rack(members: list[MemberSpec], topic: TopicMetadata) -> dict[str, tuple]:
    """Range from scratch for one topic with at least as many partitions as members, with
    racks: the first ``n % k`` members (member id order) get one more; if some member's
    rack lacks a replica of some partition, each partition in order goes to the first
    member on one of its replicas' racks still short of its count, the partitions left
    go in ascending runs to the members still short, in order; else contiguous ranges."""
    order = sorted(members, key=lambda m: m.member_id)
    n, k = topic.partition_count, len(order)
    quota = [n // k + (i < n % k) for i in range(k)]
    assert topic.partition_racks is not None
    replicas = [set(topic.partition_racks[p]) for p in range(n)]
    if all(m.rack is None or m.rack in racks for m in order for racks in replicas):
        starts = [sum(quota[:i]) for i in range(k)]
        return {m.member_id: tuple(range(s, s + q))
                for m, s, q in zip(order, starts, quota, strict=True)}
    got: list[list[int]] = [[] for _ in order]
    left = []
    for p in range(n):
        i = next((i for i, m in enumerate(order)
                  if len(got[i]) < quota[i] and m.rack in replicas[p]), None)
        if i is None:
            left.append(p)
        else:
            got[i].append(p)
    rest = iter(left)
    for i in range(k):
        got[i] += [next(rest) for _ in range(quota[i] - len(got[i]))]
    return {m.member_id: tuple(sorted(g)) for m, g in zip(order, got, strict=True)}


@pytest.mark.slow
@PROPS
@given(st.data())
def test_range_rack_matching_of_dense_topics(data) -> None:
    """A topic with at least as many partitions as subscribers, assigned from scratch with
    racks (and in a second topic, fewer): exactly :func:`_dense_by_rack`."""
    size = data.draw(st.integers(1, 8), label="members")
    n = data.draw(st.integers(size, 3 * size + 2), label="partitions")
    topic = TopicMetadata(topic_id(0), "t0", n,
                          data.draw(st.lists(REPLICAS, min_size=n, max_size=n)))
    members = [MemberSpec(f"m{i:02d}", frozenset({topic.topic_id}),
                          rack=data.draw(st.sampled_from((*RACKS, None))))
               for i in range(size)]
    result = RangeAssignor().assign(build(members, [topic])).members
    expected = _dense_by_rack(members, topic)
    assert {m: ts[topic.topic_id] for m, ts in result.items() if ts} == {
        m: parts for m, parts in expected.items() if parts}
