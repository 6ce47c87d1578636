"""The homogeneous uniform assignment's fast paths (a group of one component: its members
taken as one slice, every topic, no component search) give what its general path gives (the
same component beside another, its members interleaved with the other's, some topics not
its own): member by member the same assignment, after a join, a leave, or none."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import MemberSpec, TopicMetadata, UniformAssignor
from assignors.uniform_homogeneous import _counts, _quotas

from .assignor_checks import build, group_strategy, with_current
from .test_assignor_uniform import change

ASSIGNOR = UniformAssignor()
PROPS = settings(max_examples=150, deadline=None)
OTHER = [TopicMetadata(uuid.UUID(int=10_000 + i), f"other{i}", 3) for i in range(2)]
"""The other component's topics (nobody holds them)."""


def beside_another(members: list[MemberSpec]) -> list[MemberSpec]:
    """``members`` renamed ``<id>/a``, each followed (in member-id order) by a member
    ``<id>/b`` of another component: subscribed to :data:`OTHER` only."""
    other = frozenset(t.topic_id for t in OTHER)
    out = []
    for m in members:
        out.append(MemberSpec(f"{m.member_id}/a", m.subscribed_topic_ids, m.instance_id,
                              m.rack, m.assignment))
        out.append(MemberSpec(f"{m.member_id}/b", other))
    return out


@pytest.mark.slow
@PROPS
@given(group_strategy(homogeneous=True), st.data())
def test_one_component_alone_or_beside_another_is_assigned_the_same(group, data) -> None:
    members, topics = group
    if data.draw(st.booleans(), label="incremental"):
        first = ASSIGNOR.assign(build(members, topics))
        members = change(data, with_current(members, first), topics, same=True)
    alone = ASSIGNOR.assign(build(members, topics))
    together = ASSIGNOR.assign(build(beside_another(members), topics + OTHER))
    for m in members:
        assert together.member(f"{m.member_id}/a") == alone.member(m.member_id), m.member_id


@given(st.lists(st.lists(st.integers(0, 4), max_size=4), max_size=12))
def test_counts_are_each_members_partitions(sizes: list[list[int]]) -> None:
    parts = [tuple(tuple(range(n)) for n in member) for member in sizes]
    assert _counts(parts) == [sum(member) for member in sizes]


@given(st.lists(st.integers(0, 9), min_size=1, max_size=12), st.data())
def test_quotas_give_the_extra_partitions_to_those_holding_more_first(cnt: list[int],
                                                                      data) -> None:
    q = data.draw(st.integers(0, 8), label="q")
    r = data.draw(st.integers(0, len(cnt) - 1), label="r")
    expected = [q] * len(cnt)
    extras = r
    for i in [i for i, c in enumerate(cnt) if c > q] + [i for i, c in enumerate(cnt) if c <= q]:
        if not extras:
            break
        expected[i] = q + 1
        extras -= 1
    assert _quotas(cnt, q, r) == expected
