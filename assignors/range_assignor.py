"""The ``range`` assignor: Kafka's server-side range semantics, sticky and rack-aware.

Per topic, the ``k`` subscribers (ordered by group.instance.id when they have one, then by
member id) get ``n // k`` partitions each and the first ``n % k`` one more, so a first
assignment is the classic contiguous ranges. Topics with the same partition count and the
same subscribers form a co-partitioned class and are solved once: the same partition
numbers go to the same member in every topic of the class, also after stickiness and rack
preferences are applied (the class's current owner of a partition number is the member
holding it in most of the class's topics). Members keep their current partitions up to
their quota (lowest numbers first, rack-matched ones before others), extra slots go first
to members already holding more than the floor, and free partitions are handed out in
ascending runs (to a member on a replica's rack when possible).
"""

from __future__ import annotations

from collections.abc import Sequence

from assignors.base import PartitionAssignor
from assignors.racks import rack_aware
from assignors.spec import NO_RACK, AssignmentSpec, GroupAssignment, Partitions


class RangeAssignor(PartitionAssignor):
    name = "range"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        counts = spec.partition_counts
        by_sub: dict[int, list[int]] = {}
        for m, s in enumerate(spec.member_subscriptions):
            by_sub.setdefault(s, []).append(m)
        signature: dict[int, list[int]] = {}
        for s in sorted(by_sub):
            for t in spec.subscriptions[s]:
                signature.setdefault(t, []).append(s)
        classes: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        for t, sub_list in signature.items():
            if counts[t]:
                classes.setdefault((counts[t], tuple(sub_list)), []).append(t)

        rank = _range_rank(spec)
        out_topics: list[tuple[int, ...]] = [()] * spec.member_count
        out_parts: list[tuple[Partitions, ...]] = [()] * spec.member_count
        for (n, subs), topics in classes.items():
            topics.sort()
            if len(subs) == 1:
                members: list[int] = by_sub[subs[0]]
            else:
                members = [m for s in subs for m in by_sub[s]]
                members.sort()
            if rank is not None:
                members = sorted(members, key=rank.__getitem__)
            result = _assign_class(spec, members, topics, n)
            class_topics = tuple(topics)
            width = len(class_topics)
            for m, parts in zip(members, result, strict=True):
                if parts:
                    if out_topics[m]:
                        out_topics[m] += class_topics
                        out_parts[m] += (parts,) * width
                    else:
                        out_topics[m] = class_topics
                        out_parts[m] = (parts,) * width
        return GroupAssignment(spec.member_ids, spec.topic_ids, out_topics, out_parts)


def _range_rank(spec: AssignmentSpec) -> list[int] | None:
    """Position of each member in range order, or ``None`` if that is member-id order."""
    if all(i is None for i in spec.instance_ids):
        return None
    keys = [
        (0, iid) if iid is not None else (1, mid)
        for mid, iid in zip(spec.member_ids, spec.instance_ids, strict=True)
    ]
    order = sorted(range(spec.member_count), key=keys.__getitem__)
    rank = [0] * spec.member_count
    for position, m in enumerate(order):
        rank[m] = position
    return rank


def _assign_class(
    spec: AssignmentSpec, members: Sequence[int], topics: list[int], n: int
) -> list[Partitions]:
    """Partitions ``0..n-1`` for each of ``members`` (range order), shared by ``topics``."""
    k = len(members)
    held = _current_owners(spec, members, topics, n)
    q, r = divmod(n, k)
    cnt = [len(h) for h in held]
    racks = _class_racks(spec, members, topics, n)
    if racks is None and not any(cnt):
        return _fresh_ranges(k, q, r)
    quota = [q] * k
    extras = r
    for i in range(k):
        if extras and cnt[i] > q:
            quota[i] = q + 1
            extras -= 1
    for i in range(k):
        if extras and cnt[i] <= q:
            quota[i] = q + 1
            extras -= 1

    kept: list[list[int]] = []
    for i in range(k):
        mine = held[i]
        if len(mine) > quota[i]:
            if racks is not None and spec.member_racks[members[i]] != NO_RACK:
                rack = spec.member_racks[members[i]]
                good = [p for p in mine if rack in racks[p]]
                bad = [p for p in mine if rack not in racks[p]]
                mine = sorted((good + bad)[: quota[i]])
            else:
                mine = mine[: quota[i]]
        kept.append(mine)
    taken = {p for mine in kept for p in mine}
    free = [p for p in range(n) if p not in taken]
    needy = [i for i in range(k) if len(kept[i]) < quota[i]]
    if racks is not None:
        grants = _fill_by_rack(spec, members, needy, kept, quota, free, racks)
    else:
        grants = {}
        start = 0
        for i in needy:
            need = quota[i] - len(kept[i])
            grants[i] = free[start:start + need]
            start += need
    result: list[Partitions] = []
    for i in range(k):
        got = grants.get(i)
        if got:
            result.append(tuple(sorted(kept[i] + got)))
        else:
            result.append(tuple(kept[i]))
    return result


def _fresh_ranges(k: int, q: int, r: int) -> list[Partitions]:
    result: list[Partitions] = []
    start = 0
    for i in range(k):
        size = q + 1 if i < r else q
        result.append(tuple(range(start, start + size)))
        start += size
    return result


def _current_owners(
    spec: AssignmentSpec, members: Sequence[int], topics: list[int], n: int
) -> list[list[int]]:
    """Ascending partition numbers currently owned by each member for the whole class.

    When a member holds the same partition tuple in every topic of the class (the usual
    case, as this assignor produces it), that tuple is taken whole; otherwise each
    partition number goes to the member holding it in most of the class's topics.
    """
    topic_set = frozenset(topics)
    width = len(topics)
    cur_topics = spec.current_topics
    cur_parts = spec.current_partitions
    whole: list[Partitions | None] = []
    mixed = False
    for m in members:
        ts = cur_topics[m]
        if not ts:
            whole.append(())
            continue
        ps = cur_parts[m]
        if len(ts) == width and topic_set.issuperset(ts):
            distinct = set(ps)
            if len(distinct) == 1:
                whole.append(ps[0])
                continue
        whole.append(None)
        mixed = True
    if not mixed:
        return [list(p) if p else [] for p in whole]
    votes: dict[int, dict[int, int]] = {}
    for i, m in enumerate(members):
        rep = whole[i]
        if rep is not None:
            for p in rep:
                votes.setdefault(p, {})[i] = width
            continue
        for t, parts in zip(cur_topics[m], cur_parts[m], strict=True):
            if t in topic_set:
                for p in parts:
                    per = votes.setdefault(p, {})
                    per[i] = per.get(i, 0) + 1
    held: list[list[int]] = [[] for _ in members]
    for p in sorted(votes):
        per = votes[p]
        best = min(per, key=lambda i: (-per[i], i))
        held[best].append(p)
    return held


def _class_racks(
    spec: AssignmentSpec, members: Sequence[int], topics: list[int], n: int
) -> list[frozenset[int]] | None:
    """Racks holding a replica of partition ``p`` in every topic of the class (if relevant)."""
    if not rack_aware(spec, members, topics):
        return None
    racks: list[frozenset[int] | None] = [None] * n
    for t in topics:
        prs = spec.partition_racks[t]
        if prs is None:
            continue
        for p in range(n):
            here = spec.rack_sets[prs[p]]
            old = racks[p]
            racks[p] = here if old is None else old & here
    return [r if r is not None else frozenset() for r in racks]


def _fill_by_rack(
    spec: AssignmentSpec,
    members: Sequence[int],
    needy: list[int],
    kept: list[list[int]],
    quota: list[int],
    free: list[int],
    racks: list[frozenset[int]],
) -> dict[int, list[int]]:
    need = {i: quota[i] - len(kept[i]) for i in needy}
    grants: dict[int, list[int]] = {i: [] for i in needy}
    leftover = []
    for p in free:
        for i in needy:
            if need[i] and spec.member_racks[members[i]] in racks[p]:
                grants[i].append(p)
                need[i] -= 1
                break
        else:
            leftover.append(p)
    k = 0
    for i in needy:
        take = need[i]
        grants[i].extend(leftover[k:k + take])
        k += take
    return grants
