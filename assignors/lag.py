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
from assignors.spec import NO_OFFSET, AssignmentSpec, GroupAssignment, Partitions, TopicId
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
        out: list[dict[TopicId, Partitions]] = [{} for _ in range(members)]
        for t, subs in enumerate(subscribers(spec)):
            n = spec.partition_counts[t]
            if not subs or not n:
                continue
            lags = partition_lags(spec, t, reset)
            order = sorted(range(n), key=lambda p: (-lags[p], p))
            fresh = _greedy(subs, order, lags, total_count, total_lag, [0] * len(subs), None)
            owners = _current(spec, t, subs)
            chosen = fresh
            if owners is not None:
                sticky = _sticky(subs, order, lags, total_count, total_lag, owners)
                mean = sum(lags) / len(subs)
                if _spread(sticky, lags) <= _spread(fresh, lags) + tolerance * mean:
                    chosen = sticky
            topic_id = spec.topic_ids[t]
            for i, parts in enumerate(chosen):
                if parts:
                    m = subs[i]
                    out[m][topic_id] = tuple(sorted(parts))
                    total_count[m] += len(parts)
                    total_lag[m] += sum(lags[p] for p in parts)
        return GroupAssignment(dict(zip(spec.member_ids, out, strict=True)))


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
    order: list[int],
    lags: Sequence[int],
    total_count: list[int],
    total_lag: list[int],
    start: list[int],
    room: list[int] | None,
    assignment: list[list[int]] | None = None,
) -> list[list[int]]:
    """Place ``order`` (decreasing lag) greedily; ``room`` caps each member (None = no cap).

    ``start`` is each member's count of this topic so far; ``assignment`` its partitions.
    """
    k = len(subs)
    result = assignment if assignment is not None else [[] for _ in range(k)]
    count = list(start)
    lag = [total_lag[m] for m in subs]
    extra = [0] * k
    positive = [p for p in order if lags[p] > 0]
    zero = order[len(positive):]
    for phase, parts in ((0, positive), (1, zero)):
        if not parts:
            continue
        heap = []
        for i in range(k):
            if room is None or room[i] > 0:
                heap.append(_key(phase, count[i], lag[i], total_count[subs[i]] + extra[i], i))
        heapq.heapify(heap)
        for p in parts:
            i = heap[0][3]
            result[i].append(p)
            count[i] += 1
            extra[i] += 1
            lag[i] += lags[p]
            if room is not None:
                room[i] -= 1
                if room[i] == 0:
                    heapq.heappop(heap)
                    continue
            heapq.heapreplace(heap, _key(phase, count[i], lag[i], total_count[subs[i]] + extra[i], i))
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
    # members may take up to q, and `extras` of them one more
    room = [max(0, q - len(kept[i])) for i in range(k)]
    if extras:
        # the extra slots are placed by the greedy: give everyone at quota q one more
        # slot, then trim back to `extras` winners by placing in two passes
        below = sum(room)
        first = free[:below]
        _greedy(subs, first, lags, total_count, total_lag_with(kept, lags, total_lag, subs),
                [len(x) for x in kept], room, kept)
        rest = free[below:]
        room2 = [1 if len(kept[i]) == q else 0 for i in range(k)]
        _greedy(subs, rest, lags, total_count, total_lag_with(kept, lags, total_lag, subs),
                [len(x) for x in kept], room2, kept)
    else:
        _greedy(subs, free, lags, total_count, total_lag_with(kept, lags, total_lag, subs),
                [len(x) for x in kept], room, kept)
    return kept


def total_lag_with(
    kept: list[list[int]], lags: Sequence[int], total_lag: list[int], subs: list[int]
) -> list[int]:
    """``total_lag`` (by member index) with the lag of ``kept`` added for the subscribers."""
    result = list(total_lag)
    for i, parts in enumerate(kept):
        result[subs[i]] += sum(lags[p] for p in parts)
    return result
