"""Rack awareness helpers shared by the assignors."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from itertools import chain, pairwise

from assignors.spec import NO_RACK, AssignmentSpec


def rack_aware(spec: AssignmentSpec, members: Iterable[int], topics: Iterable[int]) -> bool:
    """True when some member could be placed better or worse by rack for these topics.

    It is false without rack data, and also when every member's rack holds a replica of
    every partition (then all placements are equally good and the racks can be ignored).
    """
    if not spec.partition_racks:
        return False
    member_racks = {spec.member_racks[m] for m in members}
    member_racks.discard(NO_RACK)
    if not member_racks:
        return False
    common = spec.topic_common_racks
    for t in topics:
        racks = common[t]
        if racks is not None and not member_racks <= racks:
            return True
    return False


class RackMatches:
    """Per topic and rack, the partitions with a replica on that rack, computed once per
    rack layout (the interned per-partition class tuple) and rack."""

    __slots__ = ("_cache", "_spec")

    def __init__(self, spec: AssignmentSpec) -> None:
        self._spec = spec
        self._cache: dict[tuple[int, int], frozenset[int]] = {}

    def of(self, topic: int, rack: int) -> frozenset[int] | None:
        """The partitions of ``topic`` with a replica on ``rack``; ``None`` when any
        partition will do (no rack for the member, no rack data for the topic)."""
        spec = self._spec
        if rack == NO_RACK or not spec.partition_racks:
            return None
        prs = spec.partition_racks[topic]
        if prs is None:
            return None
        key = (id(prs), rack)
        found = self._cache.get(key)
        if found is None:
            sets = spec.rack_sets
            found = self._cache[key] = frozenset(
                p for p, k in enumerate(prs) if rack in sets[k])
        return found


def class_rack_flow(
    supply: dict[int, int], demand: dict[int, int], rack_sets: Sequence[frozenset[int]]
) -> dict[tuple[int, int], int]:
    """How many partitions of each rack class go to receivers on each rack, matching as many
    as possible.

    ``supply[k]`` is the number of partitions whose replicas are on the racks
    ``rack_sets[k]`` (a *class*), ``demand[rack]`` the number of partitions the receivers on
    ``rack`` take. A partition matches a receiver if its class includes the receiver's rack.
    The answer maps ``(class, rack)`` to a count and is a maximum flow of this small
    class-by-rack graph: greedy first (classes on the fewest racks first), then augmenting
    paths. Both dicts are consumed (left with what is unmatched).
    """
    flow: dict[tuple[int, int], int] = {}
    classes = sorted(supply, key=lambda k: (len(rack_sets[k]), k))
    racks_of = {k: sorted(r for r in rack_sets[k] if r in demand) for k in classes}
    for k in classes:
        for rack in racks_of[k]:
            d = demand[rack]
            s = supply[k]
            if d and s:
                f = d if d < s else s
                flow[k, rack] = f
                supply[k] = s - f
                demand[rack] = d - f
    while True:
        starts = [k for k in classes if supply[k]]
        if not starts or not any(demand.values()):
            return flow
        # nodes: class k as (0, k), rack r as (1, r); breadth-first in the residual graph
        prev: dict[tuple[int, int], tuple[int, int] | None] = {(0, k): None for k in starts}
        queue = deque(prev)
        end: tuple[int, int] | None = None
        while queue and end is None:
            kind, node = queue.popleft()
            if kind == 0:
                for rack in racks_of[node]:
                    nxt = (1, rack)
                    if nxt not in prev:
                        prev[nxt] = (0, node)
                        if demand[rack]:
                            end = nxt
                            break
                        queue.append(nxt)
            else:
                for k in classes:
                    nxt = (0, k)
                    if nxt not in prev and flow.get((k, node), 0) > 0:
                        prev[nxt] = (1, node)
                        queue.append(nxt)
        if end is None:
            return flow
        path = [end]
        while (step := prev[path[-1]]) is not None:
            path.append(step)
        path.reverse()
        amount = min(supply[path[0][1]], demand[end[1]])
        for (kind, a), (_, b) in pairwise(path):
            if kind == 1:
                amount = min(amount, flow[b, a])
        for (kind, a), (_, b) in pairwise(path):
            if kind == 0:
                flow[a, b] = flow.get((a, b), 0) + amount
            else:
                flow[b, a] -= amount
        supply[path[0][1]] -= amount
        demand[end[1]] -= amount


def split_by_rack(
    pool: Sequence[int],
    needs: Sequence[int],
    racks: Sequence[int],
    partition_racks: Sequence[int],
    rack_sets: Sequence[frozenset[int]],
    by_class: dict[int, list[int]] | None = None,
) -> list[list[int]]:
    """Split ``pool`` (ascending partitions of one topic) among receivers: receiver ``k`` is
    on ``racks[k]`` (``NO_RACK``: no preference) and takes ``needs[k]`` partitions.

    As many receivers as possible get partitions with a replica on their rack (a maximum
    matching, see :func:`class_rack_flow`); the rest is handed out in ascending runs.
    ``by_class`` (rack class -> ascending partitions of ``pool``) saves grouping the pool
    when the caller has it; it is consumed.
    """
    if by_class is None:
        by_class = {}
        for p in pool:
            k = partition_racks[p]
            group = by_class.get(k)
            if group is None:
                by_class[k] = [p]
            else:
                group.append(p)
    demand: dict[int, int] = {}
    for need, rack in zip(needs, racks, strict=True):
        if rack != NO_RACK and need:
            demand[rack] = demand.get(rack, 0) + need
    left = list(needs)
    grants: list[list[int]] = [[] for _ in needs]
    if demand:
        flow = class_rack_flow({k: len(v) for k, v in by_class.items()}, dict(demand),
                               rack_sets)
        receivers: dict[int, list[int]] = {}
        for k, rack in enumerate(racks):
            if rack != NO_RACK and needs[k]:
                receivers.setdefault(rack, []).append(k)
        for (cls, rack), amount in sorted(flow.items(), key=lambda e: (e[0][1], e[0][0])):
            if not amount:
                continue
            parts = by_class[cls]
            taken = parts[:amount]
            del parts[:amount]
            start = 0
            for k in receivers[rack]:
                if start == amount:
                    break
                if left[k]:
                    give = min(left[k], amount - start)
                    grants[k].extend(taken[start:start + give])
                    left[k] -= give
                    start += give
    rest = sorted(chain.from_iterable(by_class.values()))
    start = 0
    for k, need in enumerate(left):
        if need:
            grants[k].extend(rest[start:start + need])
            start += need
        if len(grants[k]) > 1:
            grants[k].sort()
    return grants


def partitions_by_class(prs: Sequence[int]) -> dict[int, list[int]]:
    """A topic's partitions by rack class (index into ``rack_sets``), ascending."""
    by_class: dict[int, list[int]] = {}
    for p, k in enumerate(prs):
        group = by_class.get(k)
        if group is None:
            by_class[k] = [p]
        else:
            group.append(p)
    return by_class
