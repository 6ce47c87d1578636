"""Uniform assignment of a component whose members subscribe to different, overlapping topics.

1. Keep every current partition whose topic the holder still subscribes to.
2. Hand out free partitions, topics with the fewest subscribers first, each to the least
   loaded subscriber (a rack match wins among equally loaded ones).
3. Balance: while some topic has a holder more than one partition above its least loaded
   subscriber, move one partition from the most loaded holder to that subscriber
   (partitions the holder received in step 2 move first). Every move lowers the sum of
   squared loads, so this ends; at the end, for every topic, no holder is more than one
   partition above any subscriber: as balanced as the subscriptions allow for single moves.
4. Return moves: a partition that moved away from a member still subscribed to it goes
   back if that keeps the balance bound (a later move may have made it unnecessary).
5. Undo swaps: if a member lost a partition it held before to ``x`` and received a
   partition ``x`` could hold instead, trade them back (loads are unchanged, fewer moves).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from assignors.racks import matches, rack_aware
from assignors.spec import AssignmentSpec, Partitions
from assignors.structure import Component


def assign_heterogeneous(
    spec: AssignmentSpec,
    comp: Component,
    out_topics: list[Sequence[int]],
    out_parts: list[Sequence[Partitions]],
) -> None:
    """Assign the topics of ``comp`` to its members (into ``out_topics``/``out_parts``)."""
    members = comp.members
    n = len(members)
    counts = spec.partition_counts
    sub_sets = {s: frozenset(spec.subscriptions[s]) for s in comp.subscriptions}
    subs_of = [sub_sets[spec.member_subscriptions[m]] for m in members]

    held: list[dict[int, list[int]]] = []
    original: list[dict[int, Partitions]] = []
    load = [0] * n
    subscribers: dict[int, list[int]] = {t: [] for t in comp.topics}
    taken: dict[int, set[int]] = {}
    for i, m in enumerate(members):
        mine: dict[int, list[int]] = {}
        orig: dict[int, Partitions] = {}
        subs = subs_of[i]
        for t in subs:
            subscribers[t].append(i)
        for t, p in zip(spec.current_topics[m], spec.current_partitions[m], strict=True):
            if t in subs:
                mine[t] = list(p)
                orig[t] = p
                load[i] += len(p)
                taken.setdefault(t, set()).update(p)
        held.append(mine)
        original.append(orig)
    for subs_t in subscribers.values():
        subs_t.sort()

    racks = rack_aware(spec, members, comp.topics)
    order = sorted(comp.topics, key=lambda t: (len(subscribers[t]), t))
    for t in order:
        got = taken.get(t)
        free = [p for p in range(counts[t]) if got is None or p not in got]
        if free:
            if racks and spec.partition_racks[t] is not None:
                _hand_out_by_rack(spec, members, t, free, subscribers[t], held, load)
            else:
                _hand_out(t, free, subscribers[t], held, load)

    _balance(spec, members, order, subscribers, held, load, racks)
    _return_moves(subscribers, held, original, subs_of, load)
    _undo_swaps(subscribers, held, original, subs_of, load)

    for i, m in enumerate(members):
        orig = original[i]
        ts: list[int] = []
        ps: list[Partitions] = []
        for t, parts in held[i].items():
            if not parts:
                continue
            before = orig.get(t)
            ts.append(t)
            if before is not None and len(before) == len(parts) and set(before) == set(parts):
                ps.append(before)
            else:
                ps.append(tuple(sorted(parts)))
        out_topics[m] = tuple(ts)
        out_parts[m] = tuple(ps)


def _hand_out(
    t: int, free: list[int], subs_t: list[int], held: list[dict[int, list[int]]], load: list[int]
) -> None:
    heap = [(load[i], i) for i in subs_t]
    heapq.heapify(heap)
    for p in free:
        _, i = heap[0]
        held[i].setdefault(t, []).append(p)
        load[i] += 1
        heapq.heapreplace(heap, (load[i], i))


def _hand_out_by_rack(
    spec: AssignmentSpec,
    members: Sequence[int],
    t: int,
    free: list[int],
    subs_t: list[int],
    held: list[dict[int, list[int]]],
    load: list[int],
) -> None:
    everyone = [(load[i], i) for i in subs_t]
    heapq.heapify(everyone)
    by_rack: dict[int, list[tuple[int, int]]] = {}
    for i in subs_t:
        by_rack.setdefault(spec.member_racks[members[i]], []).append((load[i], i))
    for heap in by_rack.values():
        heapq.heapify(heap)
    prs = spec.partition_racks[t]
    assert prs is not None

    def top(heap: list[tuple[int, int]]) -> tuple[int, int] | None:
        while heap and heap[0][0] != load[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0] if heap else None

    rack_lists = [sorted(r) for r in spec.rack_sets]
    for p in free:
        best = top(everyone)
        assert best is not None
        choice = best
        if not matches(spec, members[best[1]], t, p):
            for rack in rack_lists[prs[p]]:
                rack_heap = by_rack.get(rack)
                cand = top(rack_heap) if rack_heap is not None else None
                if cand is not None and cand[0] == best[0] and (choice is best or cand < choice):
                    choice = cand
        i = choice[1]
        held[i].setdefault(t, []).append(p)
        load[i] += 1
        heapq.heappush(everyone, (load[i], i))
        heapq.heappush(by_rack[spec.member_racks[members[i]]], (load[i], i))


def _balance(
    spec: AssignmentSpec,
    members: Sequence[int],
    order: list[int],
    subscribers: dict[int, list[int]],
    held: list[dict[int, list[int]]],
    load: list[int],
    racks: bool,
) -> None:
    moved = True
    while moved:
        moved = False
        for t in order:
            subs_t = subscribers[t]
            if len(subs_t) < 2:
                continue
            low = [(load[i], i) for i in subs_t]
            high = [(-load[i], i) for i in subs_t if held[i].get(t)]
            heapq.heapify(low)
            heapq.heapify(high)
            while high:
                neg, hi = high[0]
                if -neg != load[hi] or not held[hi].get(t):
                    heapq.heappop(high)
                    if held[hi].get(t):
                        heapq.heappush(high, (-load[hi], hi))
                    continue
                lo_load, lo = low[0]
                if lo_load != load[lo]:
                    heapq.heapreplace(low, (load[lo], lo))
                    continue
                if load[hi] <= lo_load + 1:
                    break
                parts = held[hi][t]
                k = len(parts) - 1
                if racks and matches(spec, members[hi], t, parts[k]):
                    for j in range(k, -1, -1):
                        if matches(spec, members[lo], t, parts[j]) and not matches(
                            spec, members[hi], t, parts[j]
                        ):
                            k = j
                            break
                p = parts.pop(k)
                held[lo].setdefault(t, []).append(p)
                load[hi] -= 1
                load[lo] += 1
                moved = True
                heapq.heapreplace(low, (load[lo], lo))
                heapq.heappush(low, (load[hi], hi))
                heapq.heappush(high, (-load[lo], lo))
                heapq.heappush(high, (-load[hi], hi))


def _return_moves(
    subscribers: dict[int, list[int]],
    held: list[dict[int, list[int]]],
    original: list[dict[int, Partitions]],
    subs_of: list[frozenset[int]],
    load: list[int],
) -> None:
    """Give moved partitions back to their previous owner when the bound still holds."""
    owner_now: dict[tuple[int, int], int] = {}
    for i, mine in enumerate(held):
        for t, parts in mine.items():
            for p in parts:
                owner_now[t, p] = i
    moved = [
        (t, p, o)
        for o, orig in enumerate(original)
        for t, parts in orig.items()
        for p in parts
        if owner_now[t, p] != o
    ]
    if not moved:
        return

    def bound_holds(o: int, n: int, t: int) -> bool:
        new_load = {o: load[o] + 1, n: load[n] - 1}

        def floor(t2: int) -> int:
            return min(new_load.get(s, load[s]) for s in subscribers[t2])

        for t2, parts in held[o].items():
            if (parts or t2 == t) and new_load[o] > floor(t2) + 1:
                return False
        if t not in held[o] and new_load[o] > floor(t) + 1:
            return False
        for t2 in subs_of[n]:
            f = floor(t2)
            for h in subscribers[t2]:
                has = bool(held[h].get(t2)) or (h == o and t2 == t)
                if h == n and t2 == t and len(held[n][t]) == 1:
                    has = False
                if has and new_load.get(h, load[h]) > f + 1:
                    return False
        return True

    changed = True
    while changed:
        changed = False
        for t, p, o in moved:
            n = owner_now[t, p]
            if n == o or not bound_holds(o, n, t):
                continue
            held[n][t].remove(p)
            held[o].setdefault(t, []).append(p)
            load[n] -= 1
            load[o] += 1
            owner_now[t, p] = o
            changed = True


def _undo_swaps(
    subscribers: dict[int, list[int]],
    held: list[dict[int, list[int]]],
    original: list[dict[int, Partitions]],
    subs_of: list[frozenset[int]],
    load: list[int],
) -> None:
    """Trade back pairs of moves that cancel out in load (and keep the balance bound)."""
    floor = {t: min(load[i] for i in subs_t) for t, subs_t in subscribers.items() if subs_t}
    owner_before: dict[tuple[int, int], int] = {}
    for i, held_before in enumerate(original):
        for t, parts_before in held_before.items():
            for p in parts_before:
                owner_before[t, p] = i
    # partitions each member gained that it did not hold before, by topic
    gained: list[dict[int, list[int]]] = [{} for _ in held]
    # partitions each member lost, with their new owner
    lost: list[list[tuple[int, int, int]]] = [[] for _ in held]
    for i, mine in enumerate(held):
        for t, parts in mine.items():
            orig = original[i].get(t, ())
            before = set(orig)
            for p in parts:
                if p not in before:
                    gained[i].setdefault(t, []).append(p)
                    prev = owner_before.get((t, p))
                    if prev is not None and prev != i:
                        lost[prev].append((t, p, i))
    for i in range(len(held)):
        for t, p, x in lost[i]:
            if p not in held[x].get(t, ()):
                continue
            for t2, gains in gained[i].items():
                candidates = [g for g in gains if g in held[i].get(t2, ())]
                if (
                    candidates
                    and t2 in subs_of[x]
                    and load[x] <= floor[t2] + 1
                    and load[i] <= floor[t] + 1
                ):
                    g = candidates[0]
                    held[i][t2].remove(g)
                    held[x].setdefault(t2, []).append(g)
                    held[x][t].remove(p)
                    held[i].setdefault(t, []).append(p)
                    gains.remove(g)
                    break
