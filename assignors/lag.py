"""The ``lag`` assignor (seed 001, KAFKA-5337): spread consumer lag evenly, per topic.

Per topic, partitions in decreasing lag each go to the subscriber with the fewest partitions
of that topic, ties broken by the least total assigned lag (then fewest partitions overall,
then member order). Two fixes over the original prototype:

* a partition with no lag carries no lag information, so it is placed by partition counts
  first (fewest of the topic, then fewest overall): zero-lag partitions no longer pile onto
  the member that happens to have the least lag;
* stickiness: the assignor also builds the sticky assignment of the topic (members keep
  their current partitions up to a balanced quota, the free ones are placed as above) and
  keeps it unless its lag spread (max - min lag per subscriber) is worse than the fresh
  assignment's by more than ``tolerance`` times the topic's mean lag per subscriber. Lag
  noise between runs therefore does not move partitions.

Either way every subscriber gets ``n // k`` or ``n // k + 1`` partitions of each topic.

Cost: O(k) per topic (k = subscribers) on top of O(n log k), so O(topics x members) for a
group where everyone subscribes to everything: about 1 s at 1,000 members x 1,000 topics.
A persistent per-subscription heap of members would make it O(partitions log members).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from assignors.base import PartitionAssignor
from assignors.options import (
    DEFAULT_LAG_OFFSET_RESET,
    DEFAULT_LAG_STICKINESS_TOLERANCE,
    LAG_OFFSET_RESET_CONFIG,
    LAG_STICKINESS_TOLERANCE_CONFIG,
    OffsetReset,
    parse_offset_reset,
    parse_tolerance,
)
from assignors.spec import NO_OFFSET, AssignmentSpec, GroupAssignment, Partitions
from assignors.structure import subscribers


def partition_lags(
    spec: AssignmentSpec, topic: int, reset: OffsetReset = DEFAULT_LAG_OFFSET_RESET
) -> Sequence[int]:
    """Lag of each partition of ``topic``: explicit lags, else from offsets, else zero.

    From offsets, lag = log end - committed; without a committed offset it is the whole
    log (log end - log start) under ``earliest`` and 0 under ``latest``.
    """
    n = spec.partition_counts[topic]
    if spec.lags and spec.lags[topic] is not None:
        return spec.lags[topic]  # type: ignore[return-value]
    offsets = spec.offsets[topic] if spec.offsets else None
    if offsets is None:
        return (0,) * n
    lags = []
    for p in range(n):
        end = offsets.log_end[p]
        committed = offsets.committed[p]
        if committed == NO_OFFSET or committed is None:
            lag = end - offsets.log_start[p] if reset is OffsetReset.EARLIEST else 0
        else:
            lag = end - committed
        lags.append(max(0, lag))
    return lags


class LagAssignor(PartitionAssignor):
    name = "lag"

    def __init__(
        self,
        offset_reset: str | OffsetReset = DEFAULT_LAG_OFFSET_RESET,
        stickiness_tolerance: float = DEFAULT_LAG_STICKINESS_TOLERANCE,
    ) -> None:
        self.offset_reset = parse_offset_reset(offset_reset)
        self.stickiness_tolerance = parse_tolerance(stickiness_tolerance)

    def __repr__(self) -> str:
        return (
            f"LagAssignor(offset_reset={self.offset_reset.value!r}, "
            f"stickiness_tolerance={self.stickiness_tolerance!r})"
        )

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        reset = parse_offset_reset(spec.option(LAG_OFFSET_RESET_CONFIG) or self.offset_reset)
        tolerance = self.stickiness_tolerance
        override = spec.option(LAG_STICKINESS_TOLERANCE_CONFIG)
        if override is not None:
            tolerance = parse_tolerance(override)

        members = spec.member_count
        total_count = [0] * members
        total_lag = [0] * members
        out_topics: list[list[int]] = [[] for _ in range(members)]
        out_parts: list[list[Partitions]] = [[] for _ in range(members)]
        for t, subs in enumerate(subscribers(spec)):
            n = spec.partition_counts[t]
            if not subs or not n:
                continue
            lags = partition_lags(spec, t, reset)
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
