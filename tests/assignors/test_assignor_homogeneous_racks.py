"""The uniform assignor's first assignment of a homogeneous group with racks: balanced, and
as many partitions as any assignment with the same per-member counts could give go to a
member on one of their replicas' racks (checked against an independent bipartite matching);
when every topic has one rack layout, the same as cutting the class streams piece by piece."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import (
    AssignmentSpec,
    GroupAssignment,
    MemberSpec,
    TopicMetadata,
    UniformAssignor,
    uniform_homogeneous,
)

from .assignor_checks import (
    BOOLEANS,
    RACKS,
    build,
    check_uniform_balance,
    check_valid,
    integers,
    lists_of,
    racked_topics,
    sampled,
    topic_id,
    with_current,
)

UNIFORM = UniformAssignor()
PROPS = settings(max_examples=int(os.environ.get("ASSIGNOR_EXAMPLES", "150")), deadline=None)


@st.composite
def fresh_homogeneous(draw: st.DrawFn) -> tuple[list[MemberSpec], list[TopicMetadata]]:
    count = draw(integers(1, 6))
    topics = draw(racked_topics(count, draw(sampled(("single", "multi")))))
    if draw(BOOLEANS):  # a topic without rack data beside racked ones
        topics.append(TopicMetadata(topic_id(count), f"t{count}", draw(integers(0, 6))))
    subs = frozenset(t.topic_id for t in topics)
    size = draw(integers(1, 9))
    members = [MemberSpec(f"m{i}", subs, rack=draw(sampled((*RACKS, None))))
               for i in range(size)]
    return members, topics


def max_matched(members: list[MemberSpec], topics: list[TopicMetadata],
                loads: dict[str, int]) -> int:
    """Kuhn's augmenting paths: partitions on one side, member slots (its load) on the other."""
    racks = {m.member_id: m.rack for m in members}
    slots = [mid for mid, n in loads.items() for _ in range(n)]
    owner_of_slot: list[int] = [-1] * len(slots)
    partitions = [(t, p) for t in topics if t.partition_racks is not None
                  for p in range(t.partition_count)]

    def edges(i: int) -> list[int]:
        t, p = partitions[i]
        assert t.partition_racks is not None
        replicas = t.partition_racks[p]
        return [s for s, mid in enumerate(slots) if racks[mid] in replicas]

    adjacency = [edges(i) for i in range(len(partitions))]

    def augment(i: int, seen: set[int]) -> bool:
        for s in adjacency[i]:
            if s in seen:
                continue
            seen.add(s)
            if owner_of_slot[s] < 0 or augment(owner_of_slot[s], seen):
                owner_of_slot[s] = i
                return True
        return False

    return sum(augment(i, set()) for i in range(len(partitions)))


def matched(members: list[MemberSpec], topics: list[TopicMetadata],
            result: GroupAssignment) -> int:
    racks = {m.member_id: m.rack for m in members}
    by_id = {t.topic_id: t for t in topics}
    total = 0
    for mid, ts in result.members.items():
        for tid, parts in ts.items():
            prs = by_id[tid].partition_racks
            if prs is not None:
                total += sum(1 for p in parts if racks[mid] in prs[p])
    return total


def first_assignment_checked(members: list[MemberSpec], topics: list[TopicMetadata]
                             ) -> tuple[AssignmentSpec, GroupAssignment]:
    """The spec of a fresh group and the uniform assignor's first assignment of it, checked:
    valid, balanced, and with the most rack matches wherever racks matter."""
    spec = build(members, topics)
    result = UNIFORM.assign(spec)
    check_valid(members, topics, result)
    check_uniform_balance(members, topics, result)
    loads = {mid: sum(map(len, ts.values())) for mid, ts in result.members.items()}
    if racks_matter(members, topics):
        assert matched(members, topics, result) == max_matched(members, topics, loads)
    return spec, result


def racks_matter(members: list[MemberSpec], topics: list[TopicMetadata]) -> bool:
    """Some member's rack lacks a replica of some partition (otherwise every placement is as
    good as any other, and the assignor ignores racks)."""
    racks = {m.rack for m in members if m.rack is not None}
    return any(not racks <= set(t.partition_racks[p]) for t in topics
               if t.partition_racks is not None for p in range(t.partition_count))


@PROPS
@given(fresh_homogeneous())
def test_first_assignment_matches_the_most_racks(group) -> None:
    members, topics = group
    _spec, result = first_assignment_checked(members, topics)
    assert UNIFORM.assign(build(members[::-1], topics[::-1])) == result
    # and it is a fixed point: assigning again from it changes nothing
    assert UNIFORM.assign(build(with_current(members, result), topics)) == result


@st.composite
def fresh_one_layout(draw: st.DrawFn) -> tuple[list[MemberSpec], list[TopicMetadata]]:
    """Every topic with the same partition count and replica racks (what real topics and
    the bench usually are): the first assignment cuts the classes' streams by arithmetic."""
    n = draw(integers(1, 12))
    layout = [set(draw(lists_of(sampled(RACKS), min_size=1, max_size=2)))
              for _ in range(n)]
    topics = [TopicMetadata(topic_id(i), f"t{i}", n, layout)
              for i in range(draw(integers(1, 6)))]
    subs = frozenset(t.topic_id for t in topics)
    members = [MemberSpec(f"m{i}", subs, rack=draw(sampled((*RACKS, None))))
               for i in range(draw(integers(1, 12)))]
    return members, topics


@PROPS
@given(fresh_one_layout())
def test_one_layout_cut_by_arithmetic_as_by_pieces(group) -> None:
    """The arithmetic cut of one layout's streams gives what cutting the streams piece by
    piece gives, and the most rack matches."""
    members, topics = group
    spec, result = first_assignment_checked(members, topics)

    def by_pieces(ts: tuple[int, ...], layout: tuple[int, ...]) -> object:
        return uniform_homogeneous._PieceStreams(spec.partition_counts, {id(layout): list(ts)},
                                                 {id(layout): layout})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(uniform_homogeneous, "_LayoutStreams", by_pieces)
        assert UNIFORM.assign(spec) == result
