"""Property tests of the ``uniform`` assignor."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import MemberSpec, UniformAssignor

from .assignor_checks import (
    BOOLEANS,
    build,
    check_moves_required,
    check_uniform_balance,
    check_valid,
    group_strategy,
    held_by,
    integers,
    sampled,
    sets_of,
    with_current,
)

ASSIGNOR = UniformAssignor()
PROPS = settings(max_examples=120, deadline=None)


@PROPS
@given(group_strategy())
def test_valid_balanced_deterministic(group) -> None:
    members, topics = group
    spec = build(members, topics)
    result = ASSIGNOR.assign(spec)
    check_valid(members, topics, result)
    check_uniform_balance(members, topics, result)
    assert ASSIGNOR.assign(spec) == result
    assert ASSIGNOR.assign(pickle.loads(pickle.dumps(spec))) == result
    assert ASSIGNOR.assign(build(members[::-1], topics[::-1])) == result


@PROPS
@given(group_strategy(homogeneous=True))
def test_stable_assignment_is_kept(group) -> None:
    members, topics = group
    first = ASSIGNOR.assign(build(members, topics))
    again = ASSIGNOR.assign(build(with_current(members, first), topics))
    assert again == first


def change(
    data: st.DataObject, members: list[MemberSpec], topics: list, same: bool
) -> list[MemberSpec]:
    """The group after one member leaves or one joins (same subscription if ``same``)."""
    if len(members) > 1 and data.draw(BOOLEANS, label="leave"):
        gone = data.draw(integers(0, len(members) - 1), label="who")
        return members[:gone] + members[gone + 1:]
    subs = members[0].subscribed_topic_ids
    if not same:
        ids = tuple(t.topic_id for t in topics)
        subs = frozenset(data.draw(sets_of(ids), label="subs"))
    rack = data.draw(sampled((None, "r0", "r1", "r2")), label="rack")
    return [*members, MemberSpec("new", subs, rack=rack)]


@PROPS
@given(group_strategy(homogeneous=True), st.data())
def test_homogeneous_join_or_leave_moves_the_minimum(group, data) -> None:
    members, topics = group
    before = ASSIGNOR.assign(build(members, topics))
    after_members = change(data, with_current(members, before), topics, same=True)
    after = ASSIGNOR.assign(build(after_members, topics))
    check_valid(after_members, topics, after)
    check_uniform_balance(after_members, topics, after)
    old, new = held_by(before), held_by(after)
    survivors = [m.member_id for m in after_members if m.member_id in old]
    for m in survivors:
        assert len(old[m] & new[m]) == min(len(old[m]), len(new[m])), m
    # the partition counts themselves move as few partitions as any balanced assignment
    total = sum(len(v) for v in new.values())
    q, r = divmod(total, len(after_members))
    over = [len(old[m]) for m in survivors if len(old[m]) > q]
    minimum = sum(c - q for c in over) - min(r, len(over))
    moved = sum(len(old[m] - new[m]) for m in survivors)
    assert moved == minimum
    check_moves_required(after_members, topics, before, after)


@pytest.mark.slow
@PROPS
@given(group_strategy(homogeneous=False), st.data())
def test_heterogeneous_join_or_leave_is_sticky(group, data) -> None:
    members, topics = group
    before = ASSIGNOR.assign(build(members, topics))
    after_members = change(data, with_current(members, before), topics, same=False)
    after = ASSIGNOR.assign(build(after_members, topics))
    check_valid(after_members, topics, after)
    check_uniform_balance(after_members, topics, after)
    check_moves_required(after_members, topics, before, after)
