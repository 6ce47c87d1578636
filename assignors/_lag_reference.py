"""Reference implementation of the ``lag`` assignor's rule (see :mod:`assignors.lag`).

This is the straightforward per-topic version the fast engine in :mod:`assignors.lag` must
match exactly: O(subscribers) per topic plus a heap per partition. It is used by the tests
as an oracle and by :class:`~assignors.lag.LagAssignor` for specs the fast engine does not
handle (negative lags, which :meth:`AssignmentSpec.build` never produces).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from assignors.spec import AssignmentSpec, GroupAssignment, Partitions
from assignors.structure import subscribers


def assign_reference(
    spec: AssignmentSpec, lags_of: Callable[[int], Sequence[int]], tolerance: float
) -> GroupAssignment:
    """The lag assignment of ``spec``; ``lags_of(t)`` gives the partition lags of topic t."""
    members = spec.member_count
    total_count = [0] * members
    total_lag = [0] * members
    out_topics: list[list[int]] = [[] for _ in range(members)]
    out_parts: list[list[Partitions]] = [[] for _ in range(members)]
    for t, subs in enumerate(subscribers(spec)):
        n = spec.partition_counts[t]
        if not subs or not n:
            continue
        lags = lags_of(t)
        order = sorted(range(n), key=lambda p: (-lags[p], p))
        fresh = _greedy(subs, order, lags, total_count, total_lag, [[] for _ in subs])
        owners = _current(spec, t, subs)
        chosen = fresh
        if owners is not None:
            sticky = _sticky(subs, order, lags, total_count, total_lag, owners)
            mean = sum(lags) / len(subs)
            if _spread(sticky, lags) <= _spread(fresh, lags) + tolerance * mean:
                chosen = sticky
        for i, parts in enumerate(chosen):
            if parts:
                m = subs[i]
                out_topics[m].append(t)
                out_parts[m].append(tuple(sorted(parts)))
                total_count[m] += len(parts)
                total_lag[m] += sum(lags[p] for p in parts)
    return GroupAssignment(spec.member_ids, spec.topic_ids, out_topics, out_parts)


def _spread(assignment: list[list[int]], lags: Sequence[int]) -> int:
    loads = [sum(lags[p] for p in parts) for parts in assignment]
    return max(loads) - min(loads)


def _current(spec: AssignmentSpec, t: int, subs: list[int]) -> list[list[int]] | None:
    """Current partitions of topic ``t`` per subscriber, or ``None`` if nobody holds any."""
    owners: list[list[int]] = []
    any_held = False
    for m in subs:
        ts = spec.current_topics[m]
        parts: list[int] = []
        if ts:
            for t2, ps in zip(ts, spec.current_partitions[m], strict=True):
                if t2 == t:
                    parts = list(ps)
                    any_held = True
                    break
        owners.append(parts)
    return owners if any_held else None


def _greedy(
    subs: list[int],
    parts: list[int],
    lags: Sequence[int],
    total_count: list[int],
    total_lag: list[int],
    result: list[list[int]],
    cap: tuple[int, int] | None = None,
) -> list[list[int]]:
    """Place ``parts`` (decreasing lag) onto ``result`` (partitions so far, per subscriber).

    ``cap = (q, extras)`` limits every member to ``q`` partitions of the topic plus one more
    for ``extras`` of them; without it the fewest-partitions rule alone keeps the balance.
    """
    k = len(subs)
    count = [len(x) for x in result]
    lag = [total_lag[m] + sum(lags[p] for p in mine) for m, mine in zip(subs, result, strict=True)]
    q, extras = cap if cap is not None else (len(parts) + max(count, default=0) + 1, 0)
    positive = [p for p in parts if lags[p] > 0]
    zero = parts[len(positive):]
    for phase, batch in ((0, positive), (1, zero)):
        if not batch:
            continue
        heap = [
            _key(phase, count[i], lag[i], total_count[subs[i]] + count[i], i)
            for i in range(k)
            if count[i] < q or (count[i] == q and extras)
        ]
        heapq.heapify(heap)
        for p in batch:
            while True:
                i = heap[0][3]
                if count[i] < q or (count[i] == q and extras):
                    break
                heapq.heappop(heap)
            if count[i] == q:
                extras -= 1
            result[i].append(p)
            count[i] += 1
            lag[i] += lags[p]
            if count[i] > q:
                heapq.heappop(heap)
            else:
                key = _key(phase, count[i], lag[i], total_count[subs[i]] + count[i], i)
                heapq.heapreplace(heap, key)
    return result


def _key(phase: int, count: int, lag: int, overall: int, i: int) -> tuple[int, int, int, int]:
    return (count, lag, overall, i) if phase == 0 else (count, overall, lag, i)


def _sticky(
    subs: list[int],
    order: list[int],
    lags: Sequence[int],
    total_count: list[int],
    total_lag: list[int],
    owners: list[list[int]],
) -> list[list[int]]:
    """Keep current partitions up to a balanced quota, place the rest greedily."""
    k = len(subs)
    n = len(order)
    q, r = divmod(n, k)
    rank = {p: j for j, p in enumerate(order)}
    quota = [q] * k
    extras = r
    for i in range(k):
        if extras and len(owners[i]) > q:
            quota[i] = q + 1
            extras -= 1
    kept: list[list[int]] = []
    for i in range(k):
        mine = sorted(owners[i], key=rank.__getitem__)[: quota[i]]
        kept.append(mine)
    taken = {p for mine in kept for p in mine}
    free = [p for p in order if p not in taken]
    return _greedy(subs, free, lags, total_count, total_lag, kept, (q, extras))
