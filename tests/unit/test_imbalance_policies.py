"""Seed 004's deferred (Design II) and incremental (Design III) resolution of imbalance as pure
functions (``coordinator/groups/modern/deferred.py``, ``incremental.py``): examples and
Hypothesis properties."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.groups.modern.deferred import Hold, new_hold, next_deadline, resolve
from coordinator.groups.modern.incremental import imbalance, limit_moves, moves

Items = frozenset[int]


def every(member_id: str, item: int) -> bool:
    return True


def spread(items: range, members: list[str]) -> dict[str, Items]:
    return {m: frozenset(i for i in items if i % len(members) == n)
            for n, m in enumerate(members)}


def assigned_once(assignment: Mapping[str, Items]) -> bool:
    seen: list[int] = [i for items in assignment.values() for i in items]
    return len(seen) == len(set(seen))


# ------------------------------------------------------------------------------ deferred
def test_no_hold_without_a_delay_or_partitions() -> None:
    assert new_hold("c", {1}, 0, 0, "left") is None
    assert new_hold("c", (), 0, 10_000, "left") is None
    assert new_hold("c", {1, 2}, 5, 10_000, "left") == Hold("c", frozenset({1, 2}), 10_005,
                                                             "left")


def test_held_partitions_stay_unassigned_and_nobody_else_moves() -> None:
    previous = {"a": frozenset({0, 3}), "b": frozenset({1, 4})}  # c had 2 and 5
    proposal = {"a": frozenset({0, 2, 3}), "b": frozenset({1, 4, 5})}  # the assignor spreads
    hold = Hold("c", frozenset({2, 5}), 10_000, "left")
    out = resolve(previous, proposal, [hold], 9_999, every)
    assert out.assignment == previous
    assert out.holds == (hold,) and out.holding and out.claimed == {}


def test_a_member_joining_meanwhile_gets_the_held_partitions_first() -> None:
    previous = {"a": frozenset({0, 3}), "b": frozenset({1, 4})}
    proposal = {"a": frozenset({0}), "b": frozenset({1, 4}), "d": frozenset({2, 3, 5})}
    hold = Hold("c", frozenset({2, 5}), 10_000, "left")
    out = resolve(previous, proposal, [hold], 5_000, every)
    assert out.assignment == {"a": {0, 3}, "b": {1, 4}, "d": {2, 5}}
    assert out.holds == () and out.claimed == {"d": {2, 5}}


def test_a_joining_member_takes_at_most_a_fair_share() -> None:
    # a and b had 2 each, c and e left with 2 each: d (back first) takes one member's share.
    previous = {"a": frozenset({0, 1}), "b": frozenset({2, 3})}
    proposal = {"a": frozenset({0, 1}), "b": frozenset({2, 3}), "d": frozenset({4, 5, 6, 7})}
    holds = [Hold("c", frozenset({4, 5}), 10_000, "left"),
             Hold("e", frozenset({6, 7}), 11_000, "session-expired")]
    out = resolve(previous, proposal, holds, 0, every)
    assert out.assignment["d"] == {4, 5, 6}  # ceil(8 / 3) = 3, the earliest hold first
    assert out.holds == (Hold("e", frozenset({7}), 11_000, "session-expired"),)
    assert next_deadline(out.holds) == 11_000


def test_new_partitions_are_assigned_at_once_during_a_hold() -> None:
    previous = {"a": frozenset({0})}
    proposal = {"a": frozenset({0, 1, 9})}  # 9: a partition added meanwhile
    out = resolve(previous, proposal, [Hold("c", frozenset({1}), 100, "left")], 0, every)
    assert out.assignment == {"a": {0, 9}}


def test_once_the_delay_ends_the_proposal_is_the_target() -> None:
    previous = {"a": frozenset({0})}
    proposal = {"a": frozenset({0, 1})}
    out = resolve(previous, proposal, [Hold("c", frozenset({1}), 100, "left")], 100, every)
    assert out.assignment == proposal and out.holds == ()


def test_held_partitions_go_only_to_members_that_may_have_them() -> None:
    previous = {"a": frozenset({0})}
    proposal = {"a": frozenset({0}), "d": frozenset()}
    out = resolve(previous, proposal, [Hold("c", frozenset({1}), 100, "left")], 0,
                  lambda member, item: member != "d")
    assert out.assignment == {"a": {0}, "d": frozenset()} and out.holds[0].items == {1}


members_st = st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=6, unique=True)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, Items], dict[str, Items], list[Hold], int]:
    """(previous, proposal, holds, now): a previous target of some members, holds of others'
    partitions, and an assignor's proposal over the members now there."""
    count = draw(st.integers(1, 24))
    items = list(range(count))
    before = draw(members_st)
    owner = {i: draw(st.sampled_from(before)) for i in items}
    gone = draw(st.lists(st.sampled_from(before), unique=True))
    now = draw(st.lists(st.sampled_from("abcdefghijkl"), min_size=1, max_size=8, unique=True))
    previous = {m: frozenset(i for i in items if owner[i] == m) for m in before if m not in gone}
    holds = [Hold(m, frozenset(i for i in items if owner[i] == m),
                  draw(st.integers(0, 20)), "left") for m in gone]
    proposal: dict[str, Items] = {m: frozenset() for m in now}
    for i in items:
        m = draw(st.sampled_from(now))
        proposal[m] = proposal[m] | {i}
    return previous, proposal, holds, draw(st.integers(0, 20))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_deferred_never_assigns_a_partition_twice_and_never_gives_held_ones_to_old_members(
        case: tuple[dict[str, Items], dict[str, Items], list[Hold], int]) -> None:
    previous, proposal, holds, now = case
    out = resolve(previous, proposal, holds, now, every)
    assert set(out.assignment) == set(proposal)
    assert assigned_once(out.assignment)
    held = {i for h in holds if h.active(now) for i in h.items}
    still = {i for h in out.holds for i in h.items}
    assigned = {i for items in out.assignment.values() for i in items}
    assert not still & assigned  # what is held is unassigned
    assert {i for items in proposal.values() for i in items} <= assigned | still
    for member, items in out.assignment.items():
        if previous.get(member):  # an old member only keeps what it had (and new items)
            assert not (items - previous[member]) & held
    if not any(h.active(now) for h in holds):
        assert out.assignment == proposal  # once the delay passed, every partition assigned


# ------------------------------------------------------------------------------ incremental
def test_moves_within_the_budget_are_all_made() -> None:
    previous = {"a": frozenset({0, 1, 2, 3}), "b": frozenset()}
    proposal = {"a": frozenset({0, 1}), "b": frozenset({2, 3})}
    out = limit_moves(previous, proposal, 2)
    assert (out.assignment, out.moved, out.deferred) == (proposal, 2, 0)
    assert limit_moves(previous, proposal, 0).assignment == proposal  # 0: unbounded


def test_a_round_takes_the_moves_that_reduce_the_imbalance_most() -> None:
    previous = {"a": frozenset(range(6)), "b": frozenset({6, 7, 8}), "c": frozenset()}
    proposal = {"a": frozenset({0, 1, 2}), "b": frozenset({6, 7, 8}),
                "c": frozenset({3, 4, 5})}
    out = limit_moves(previous, proposal, 2)
    assert out.moved == 2 and out.deferred == 1
    assert out.assignment["c"] == {3, 4} and out.assignment["a"] == {0, 1, 2, 5}


def test_items_nobody_had_are_not_moves() -> None:
    previous = {"a": frozenset({0})}
    proposal = {"a": frozenset({0}), "b": frozenset({1, 2, 3})}  # held or new partitions
    assert moves(previous, proposal) == []
    assert limit_moves(previous, proposal, 1).assignment == proposal


def sticky_uniform(previous: Mapping[str, Items], members: list[str], items: range
                   ) -> dict[str, Items]:
    """A sticky balanced assignor: each member keeps up to its quota, the rest go to the
    members with the fewest."""
    base, extra = divmod(len(items), len(members))
    quota = {m: base + (1 if n < extra else 0)
             for n, m in enumerate(sorted(members, key=lambda m: -len(previous.get(m, ()))))}
    out = {m: set(sorted(previous.get(m, frozenset()))[:quota[m]]) for m in members}
    free = sorted(set(items) - {i for s in out.values() for i in s})
    for item in free:
        m = min(members, key=lambda m: (len(out[m]) - quota[m], m))
        out[m].add(item)
    return {m: frozenset(s) for m, s in out.items()}


def test_a_scale_up_from_4_to_8_over_64_partitions_takes_4_rounds_of_8() -> None:
    items = range(64)
    members = ["m1", "m2", "m3", "m4"]
    target = spread(items, members)
    members += ["m5", "m6", "m7", "m8"]
    rounds = []
    for _ in range(10):
        proposal = sticky_uniform(target, members, items)
        out = limit_moves({m: target.get(m, frozenset()) for m in members}, proposal, 8)
        if out.moved == 0:
            break
        rounds.append(out.moved)
        assert assigned_once(out.assignment)
        assert imbalance(out.assignment) < imbalance({m: target.get(m, frozenset())
                                                      for m in members})
        target = out.assignment
    assert rounds == [8, 8, 8, 8]
    assert {len(s) for s in target.values()} == {8}


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_moves_per_round_stay_within_the_budget_and_rounds_converge(data: st.DataObject
                                                                    ) -> None:
    count = data.draw(st.integers(1, 40))
    items = range(count)
    before = data.draw(members_st)
    after = data.draw(st.lists(st.sampled_from("abcdefghijkl"), min_size=1, max_size=10,
                               unique=True))
    budget = data.draw(st.integers(1, 10))
    target: dict[str, Items] = spread(items, before)
    for _ in range(count + 2):
        current = {m: target.get(m, frozenset()) for m in after}
        proposal = sticky_uniform(current, after, items)
        out = limit_moves(current, proposal, budget)
        assert len(moves(current, out.assignment)) <= budget
        assert assigned_once(out.assignment)
        assert {i for s in out.assignment.values() for i in s} == set(items)
        target = out.assignment
        if out.deferred == 0:
            break
    else:
        raise AssertionError("did not converge")
    assert target == sticky_uniform(target, after, items)
