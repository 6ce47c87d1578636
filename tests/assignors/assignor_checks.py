"""Hypothesis strategies and invariant checks shared by the assignor tests."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Hashable
from functools import cache
from typing import Any

from hypothesis import strategies as st

from assignors import AssignmentSpec, GroupAssignment, MemberSpec, TopicMetadata

RACKS = ("r0", "r1", "r2")
Owners = dict[tuple[Hashable, int], str]


def topic_id(i: int) -> uuid.UUID:
    return uuid.UUID(int=i + 1)


# The strategies the composites below draw from, each built once for its arguments: one built
# afresh inside a draw is validated again by Hypothesis on its first draw, which costs more than
# the draw itself (and one over a list is not cached by Hypothesis at all). Same strategies,
# same values: only the building is shared.
BOOLEANS = st.booleans()


@cache
def integers(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@cache
def sampled(values: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


@cache
def sets_of(values: tuple[Any, ...], min_size: int = 0,
            max_size: int | None = None) -> st.SearchStrategy[set[Any]]:
    """``st.sets(st.sampled_from(values), ...)``."""
    return st.sets(sampled(values), min_size=min_size, max_size=max_size)


@cache
def lists_of(elements: st.SearchStrategy[Any], min_size: int = 0, max_size: int | None = None,
             unique: bool = False) -> st.SearchStrategy[list[Any]]:
    """``st.lists(elements, ...)`` for an ``elements`` strategy that is itself built once."""
    return st.lists(elements, min_size=min_size, max_size=max_size, unique=unique)


@st.composite
def topics_strategy(draw: st.DrawFn, max_topics: int = 5, max_partitions: int = 12) -> list:
    count = draw(integers(1, max_topics))
    racks = draw(BOOLEANS)
    topics = []
    for i in range(count):
        n = draw(integers(0, max_partitions))
        partition_racks = None
        if racks:
            partition_racks = [
                set(draw(lists_of(sampled(RACKS), min_size=1, max_size=2)))
                for _ in range(n)
            ]
        topics.append(TopicMetadata(topic_id(i), f"t{i}", n, partition_racks))
    return topics


TOPICS = topics_strategy()


@st.composite
def group_strategy(
    draw: st.DrawFn, homogeneous: bool | None = None, max_members: int = 7
) -> tuple[list[MemberSpec], list[TopicMetadata]]:
    """Members, topics, random subscriptions/racks and a random valid current assignment."""
    topics = draw(TOPICS)
    ids = tuple(t.topic_id for t in topics)
    count = draw(integers(1, max_members))
    same = draw(BOOLEANS) if homogeneous is None else homogeneous
    shared = draw(sets_of(ids, min_size=1))
    racked = draw(BOOLEANS)
    members = []
    for i in range(count):
        subs = shared if same else draw(sets_of(ids))
        rack = draw(sampled(RACKS)) if racked else None
        iid = f"i{count - i}" if draw(BOOLEANS) and not same else None
        members.append(MemberSpec(f"m{i}", frozenset(subs), instance_id=iid, rack=rack))
    # random current assignment: any member (subscribed or not) or nobody owns a partition
    holdings: dict[str, dict[Hashable, list[int]]] = {m.member_id: {} for m in members}
    owner_of = integers(-1, count - 1)
    for t in topics:
        for p in range(t.partition_count):
            owner = draw(owner_of)
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


# --- overlapping and random subscriptions (the general heterogeneous path) ---------------


@st.composite
def topics_with_racks(
    draw: st.DrawFn, count: int, max_partitions: int = 12, racks: str | None = None
) -> list[TopicMetadata]:
    """``count`` topics; ``racks``: ``none``, ``single`` (one replica rack per partition) or
    ``multi`` (one to three), drawn when not given."""
    mode = racks or draw(sampled(("none", "single", "multi")))
    topics = []
    for i in range(count):
        n = draw(integers(0, max_partitions))
        partition_racks = None
        if mode == "single":
            partition_racks = [{draw(sampled(RACKS))} for _ in range(n)]
        elif mode == "multi":
            partition_racks = [
                set(draw(lists_of(sampled(RACKS), min_size=1, max_size=3)))
                for _ in range(n)
            ]
        topics.append(TopicMetadata(topic_id(i), f"t{i}", n, partition_racks))
    return topics


@cache
def racked_topics(count: int, racks: str | None) -> st.SearchStrategy[list[TopicMetadata]]:
    """``topics_with_racks(count, racks=racks)``, built once."""
    return topics_with_racks(count, racks=racks)


@st.composite
def overlapping_strategy(
    draw: st.DrawFn, kind: str | None = None, max_members: int = 9, max_topics: int = 8,
    racks: str | None = None,
) -> tuple[list[MemberSpec], list[TopicMetadata]]:
    """Members subscribed like ``bench assignor --subscriptions overlapping`` (member ``i``:
    ``window`` consecutive topics from ``stride * i``, wrapping) or ``random`` (a random
    subset of ``window`` topics each), with or without racks, and a random current
    assignment (possibly empty)."""
    kind = kind or draw(sampled(("overlapping", "random")))
    count = draw(integers(2, max_topics))
    topics = draw(racked_topics(count, racks))
    ids = tuple(t.topic_id for t in topics)
    size = draw(integers(2, max_members))
    window = draw(integers(1, count))
    stride = draw(integers(1, count))
    racked = draw(BOOLEANS) or racks is not None
    members = []
    for i in range(size):
        if kind == "overlapping":
            subs = frozenset(ids[(stride * i + j) % count] for j in range(window))
        else:
            subs = frozenset(draw(lists_of(sampled(ids), min_size=window,
                                           max_size=window, unique=True)))
        rack = draw(sampled((*RACKS, None))) if racked else None
        members.append(MemberSpec(f"m{i}", subs, rack=rack))
    if draw(BOOLEANS):
        holdings: dict[str, dict[Hashable, list[int]]] = {m.member_id: {} for m in members}
        owner_of = integers(-1, size - 1)
        for t in topics:
            for p in range(t.partition_count):
                owner = draw(owner_of)
                if owner >= 0:
                    holdings[f"m{owner}"].setdefault(t.topic_id, []).append(p)
        members = [
            MemberSpec(m.member_id, m.subscribed_topic_ids, m.instance_id, m.rack,
                       holdings[m.member_id])
            for m in members
        ]
    return members, topics


def check_most_balanced(
    members: list[MemberSpec], topics: list[TopicMetadata], assignment: GroupAssignment
) -> None:
    """As balanced as the subscriptions allow: no chain of hand-overs (``a`` gives ``b`` a
    partition of a topic ``b`` subscribes to, ``b`` one to ``c``, ...) leads from a member to
    one with two partitions fewer (then one partition could move along it)."""
    load = loads(assignment)
    subs = subscribers(members, topics)
    holds = {m: [t for t, p in ts.items() if p] for m, ts in assignment.members.items()}
    for a in load:
        seen = {a}
        frontier = [a]
        while frontier:
            nxt = []
            for u in frontier:
                for t in holds[u]:
                    for v in subs[t]:
                        if v not in seen:
                            assert load[a] < load[v] + 2, f"{a} ({load[a]}) -> {v} ({load[v]})"
                            seen.add(v)
                            nxt.append(v)
            frontier = nxt


def _components(
    members: list[MemberSpec], topics: list[TopicMetadata]
) -> list[tuple[list[MemberSpec], set[Hashable]]]:
    known = {t.topic_id for t in topics}
    groups: list[tuple[list[MemberSpec], set[Hashable]]] = []
    for m in members:
        subs = set(m.subscribed_topic_ids) & known
        if not subs:
            continue
        joined = [g for g in groups if g[1] & subs]
        merged = ([m], subs)
        for g in joined:
            groups.remove(g)
            merged[0].extend(g[0])
            merged[1].update(g[1])
        groups.append(merged)
    return groups


def check_rack_preference(
    members: list[MemberSpec],
    topics: list[TopicMetadata],
    before: GroupAssignment | None,
    after: GroupAssignment,
) -> None:
    """The uniform assignor's rack preference, for partitions with one replica rack each.

    * a member that gave up a partition on its own rack kept only partitions on its rack
      of that topic (it gives up the others first);
    * partitions that changed hands went to members on their rack as often as possible:
      per topic in a heterogeneous component (the counts per member are decided first),
      over the whole component in a homogeneous one (where any member can take any
      partition).
    """
    by_id = {t.topic_id: t for t in topics}
    rack_of = {m.member_id: m.rack for m in members}

    def rack(tid: Hashable, p: int) -> str | None:
        t = by_id[tid]
        if t.partition_racks is None:
            return None
        (only,) = t.partition_racks[p]
        return only

    old_owner = owners(before) if before is not None else {}
    new_owner = owners(after)
    subscribed = {m.member_id: set(m.subscribed_topic_ids) for m in members}
    if before is not None:
        for mid, ts in before.members.items():
            if mid not in after.members or rack_of[mid] is None:
                continue
            for tid, parts in ts.items():
                if tid not in subscribed[mid] or by_id[tid].partition_racks is None:
                    continue
                kept = [p for p in parts if new_owner.get((tid, p)) == mid]
                lost = [p for p in parts if new_owner.get((tid, p)) != mid]
                if any(rack(tid, p) == rack_of[mid] for p in lost):
                    assert all(rack(tid, p) == rack_of[mid] for p in kept), (mid, tid)
    for group, tids in _components(members, topics):
        homogeneous = len({frozenset(m.subscribed_topic_ids) for m in group}) == 1
        moved = [
            (tid, p, owner) for (tid, p), owner in new_owner.items()
            if tid in tids and old_owner.get((tid, p)) != owner
        ]
        scopes: dict[Hashable, list[tuple[Hashable, int, str]]] = {}
        for item in moved:
            scopes.setdefault(None if homogeneous else item[0], []).append(item)
        for items in scopes.values():
            if any(by_id[tid].partition_racks is None for tid, _, _ in items):
                continue
            matched = sum(1 for tid, p, o in items if rack(tid, p) == rack_of[o])
            best = 0
            for r in RACKS:
                best += min(sum(1 for tid, p, _ in items if rack(tid, p) == r),
                            sum(1 for _, _, o in items if rack_of[o] == r))
            assert matched == best, (items, matched, best)
