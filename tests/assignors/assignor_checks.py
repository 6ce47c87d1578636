"""Hypothesis strategies and invariant checks shared by the assignor tests."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Hashable
from typing import Any

from hypothesis import strategies as st

from assignors import AssignmentSpec, GroupAssignment, MemberSpec, TopicMetadata

RACKS = ("r0", "r1", "r2")
Owners = dict[tuple[Hashable, int], str]


def topic_id(i: int) -> uuid.UUID:
    return uuid.UUID(int=i + 1)


@st.composite
def topics_strategy(draw: st.DrawFn, max_topics: int = 5, max_partitions: int = 12) -> list:
    count = draw(st.integers(1, max_topics))
    racks = draw(st.booleans())
    topics = []
    for i in range(count):
        n = draw(st.integers(0, max_partitions))
        partition_racks = None
        if racks:
            partition_racks = [
                set(draw(st.lists(st.sampled_from(RACKS), min_size=1, max_size=2)))
                for _ in range(n)
            ]
        topics.append(TopicMetadata(topic_id(i), f"t{i}", n, partition_racks))
    return topics


@st.composite
def group_strategy(
    draw: st.DrawFn, homogeneous: bool | None = None, max_members: int = 7
) -> tuple[list[MemberSpec], list[TopicMetadata]]:
    """Members, topics, random subscriptions/racks and a random valid current assignment."""
    topics = draw(topics_strategy())
    ids = [t.topic_id for t in topics]
    count = draw(st.integers(1, max_members))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    shared = draw(st.sets(st.sampled_from(ids), min_size=1))
    racked = draw(st.booleans())
    members = []
    for i in range(count):
        subs = shared if same else draw(st.sets(st.sampled_from(ids)))
        rack = draw(st.sampled_from(RACKS)) if racked else None
        iid = f"i{count - i}" if draw(st.booleans()) and not same else None
        members.append(MemberSpec(f"m{i}", frozenset(subs), instance_id=iid, rack=rack))
    # random current assignment: any member (subscribed or not) or nobody owns a partition
    holdings: dict[str, dict[Hashable, list[int]]] = {m.member_id: {} for m in members}
    for t in topics:
        for p in range(t.partition_count):
            owner = draw(st.integers(-1, count - 1))
            if owner >= 0:
                holdings[f"m{owner}"].setdefault(t.topic_id, []).append(p)
    members = [
        MemberSpec(m.member_id, m.subscribed_topic_ids, m.instance_id, m.rack,
                   holdings[m.member_id])
        for m in members
    ]
    return members, topics


def build(members: list[MemberSpec], topics: list[TopicMetadata], **kw: Any) -> AssignmentSpec:
    spec = AssignmentSpec.build(members, topics, **kw)
    spec.validate()
    return spec


def owners(assignment: GroupAssignment) -> Owners:
    result: Owners = {}
    for mid, topics in assignment.members.items():
        for tid, parts in topics.items():
            assert list(parts) == sorted(set(parts)), "partitions must be ascending, unique"
            for p in parts:
                assert (tid, p) not in result, f"{tid}:{p} assigned twice"
                result[tid, p] = mid
    return result


def loads(assignment: GroupAssignment) -> dict[str, int]:
    return {m: sum(map(len, ts.values())) for m, ts in assignment.members.items()}


def subscribers(members: list[MemberSpec], topics: list[TopicMetadata]) -> dict[Hashable, set[str]]:
    known = {t.topic_id for t in topics}
    subs: dict[Hashable, set[str]] = {t.topic_id: set() for t in topics}
    for m in members:
        for t in m.subscribed_topic_ids:
            if t in known:
                subs[t].add(m.member_id)
    return subs


def check_valid(
    members: list[MemberSpec], topics: list[TopicMetadata], assignment: GroupAssignment
) -> Owners:
    """Every partition of a subscribed topic exactly once, only to a subscriber."""
    assert set(assignment.members) == {m.member_id for m in members}
    own = owners(assignment)
    subs = subscribers(members, topics)
    for t in topics:
        for p in range(t.partition_count):
            if subs[t.topic_id]:
                assert (t.topic_id, p) in own, f"{t.name}:{p} unassigned"
                assert own[t.topic_id, p] in subs[t.topic_id], f"{t.name}:{p} to non-subscriber"
            else:
                assert (t.topic_id, p) not in own
    assert len(own) == sum(t.partition_count for t in topics if subs[t.topic_id])
    return own


def check_uniform_balance(
    members: list[MemberSpec], topics: list[TopicMetadata], assignment: GroupAssignment
) -> None:
    """No holder of a topic is more than one partition above any subscriber of it."""
    load = loads(assignment)
    subs = subscribers(members, topics)
    for mid, held in assignment.members.items():
        for tid in held:
            floor = min(load[s] for s in subs[tid])
            assert load[mid] <= floor + 1, (mid, tid, load)
    if len({frozenset(m.subscribed_topic_ids) for m in members}) == 1:
        assert max(load.values()) - min(load.values()) <= 1


def per_topic_counts(
    members: list[MemberSpec], topics: list[TopicMetadata], assignment: GroupAssignment
) -> dict[Hashable, Counter[str]]:
    subs = subscribers(members, topics)
    result: dict[Hashable, Counter[str]] = {}
    for t in topics:
        c = Counter({s: 0 for s in subs[t.topic_id]})
        for s in subs[t.topic_id]:
            c[s] = len(assignment.members[s].get(t.topic_id, ()))
        result[t.topic_id] = c
    return result


def check_per_topic_balance(
    members: list[MemberSpec], topics: list[TopicMetadata], assignment: GroupAssignment
) -> None:
    """Per topic, subscribers' partition counts differ by at most one."""
    for counts in per_topic_counts(members, topics, assignment).values():
        if counts:
            assert max(counts.values()) - min(counts.values()) <= 1, counts


def with_current(members: list[MemberSpec], assignment: GroupAssignment) -> list[MemberSpec]:
    """The members with ``assignment`` as their current assignment."""
    return [
        MemberSpec(m.member_id, m.subscribed_topic_ids, m.instance_id, m.rack,
                   assignment.members[m.member_id])
        for m in members
    ]


def held_by(assignment: GroupAssignment) -> dict[str, set[tuple[Hashable, int]]]:
    return {
        m: {(t, p) for t, parts in ts.items() for p in parts}
        for m, ts in assignment.members.items()
    }


def balance_ok(load: dict[str, int], holds: dict[str, set[Hashable]],
               subs: dict[Hashable, set[str]]) -> bool:
    """The uniform balance bound: no holder of a topic above any subscriber of it plus one."""
    floor = {t: min((load[s] for s in ss), default=0) for t, ss in subs.items()}
    return all(load[m] <= floor[t] + 1 for m, ts in holds.items() for t in ts)


def check_moves_required(
    members: list[MemberSpec],
    topics: list[TopicMetadata],
    before: GroupAssignment,
    after: GroupAssignment,
) -> None:
    """Stickiness: no moved partition could go back to its previous owner (still present and
    subscribed) without breaking the balance bound."""
    subs = subscribers(members, topics)
    load = loads(after)
    holds = {m: {t for t, ps in ts.items() if ps} for m, ts in after.members.items()}
    new_owner = owners(after)
    for (tid, p), old in owners(before).items():
        now = new_owner.get((tid, p))
        if now is None or now == old or old not in load or old not in subs[tid]:
            continue
        trial = dict(load)
        trial[old] += 1
        trial[now] -= 1
        trial_holds = {m: set(ts) for m, ts in holds.items()}
        trial_holds[old].add(tid)
        if len(after.members[now][tid]) == 1:
            trial_holds[now].discard(tid)
        assert not balance_ok(trial, trial_holds, subs), f"{tid}:{p} moved {old}->{now} needlessly"
