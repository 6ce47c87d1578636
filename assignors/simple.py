"""The ``simple`` share group assignor (KIP-932; Kafka's ``SimpleAssignor``, AK 4.2+).

A share group's partitions may go to several members. With ``M`` members and ``P``
assignable partitions, every partition wants ``desired_sharing = ceil(M / P)`` members
(1 when partitions are at least as many as members), and member ``i`` (in member-id order)
wants ``ceil(precise * (i + 1)) - ceil(precise * i)`` partitions, where
``precise = desired_sharing * P / M`` (a float, computed as Kafka computes it).

Starting from the members' current target (stickiness), Kafka's steps are:

1. revoke unassignable partitions: topics the member no longer subscribes to (partitions
   the spec does not offer were already dropped by :meth:`AssignmentSpec.build`);
2. revoke from overfilled members: a member holding more than it wants loses its first
   partitions (in topic, partition order) until it holds exactly what it wants;
3. revoke overshared partitions: a partition held by more than ``desired_sharing`` members
   loses its first holders (in member order) down to ``desired_sharing``;
4. assign the remaining partitions: walk the partitions (topic order, then partition
   number) once; a partition short of ``desired_sharing`` members takes the next members of
   a cyclic iterator over the unfilled members (those holding fewer than they want),
   skipping members that held it before this step. A member that reaches its count leaves
   the iterator. If a whole pass of the iterator assigns nothing, Kafka gives up: nothing
   more is assigned (a small imbalance is tolerated). Assignment stops when no member is
   unfilled. (Kafka's quirk, kept: a member that took the partition earlier in the same
   walk is not skipped; taking it again changes nothing for the member but counts towards
   the partition's sharing.)

The outcome, for the members of one run: every assignable partition has at least one and
at most ``desired_sharing`` members, and every member at most its desired count and at
least one less. With ``desired_sharing == 1`` it is exact: one member per partition and
every member at its count, except one member one short when the float rounding makes the
desired counts add up to ``P + 1``.

A homogeneous group (every member subscribes to the same topics) runs this once over all
the partitions of its topics; a heterogeneous group runs it per topic, over the members
subscribed to that topic. Members whose assignment did not change keep their current
partition tuples.

The assignable partitions of a topic are ``0 .. partition_count - 1`` of the spec: the
coordinator passes the initialized share partitions as the topics' partition counts.
Build the spec with ``AssignmentSpec.build(..., shared=True)`` so that a partition held
by several members stays with all of them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import chain, groupby, pairwise, repeat
from operator import add, itemgetter

from assignors.base import PartitionAssignor
from assignors.spec import AssignmentSpec, GroupAssignment, Partitions
from assignors.structure import subscribers

Held = Sequence[int]
"""A member's partitions within one pool, as pool positions, ascending."""

_first = itemgetter(0)


class SimpleAssignor(PartitionAssignor):
    """Kafka's share group assignor: balanced, sticky, partitions shared when members
    outnumber them. Not rack-aware; deterministic (member-id, topic, partition order)."""

    name = "simple"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        count = spec.member_count
        out_topics: list[Sequence[int]] = [()] * count
        out_parts: list[Sequence[Partitions]] = [()] * count
        if count:
            if len(set(spec.member_subscriptions)) == 1:
                _assign_homogeneous(spec, out_topics, out_parts)
            else:
                _assign_heterogeneous(spec, out_topics, out_parts)
        return GroupAssignment(spec.member_ids, spec.topic_ids, out_topics, out_parts)


def desired_counts(members: int, partitions: int) -> tuple[int, list[int]]:
    """``(desired_sharing, partitions wanted by each member)`` as Kafka computes them."""
    if not partitions:
        return 0, [0] * members
    sharing = -(-members // partitions)
    precise = sharing * partitions / members
    ceils = [math.ceil(precise * i) for i in range(members + 1)]
    return sharing, [b - a for a, b in pairwise(ceils)]


Counts = dict[tuple[int, int], tuple[int, list[int]]]
"""A cache of :func:`desired_counts` by (members, partitions)."""


def assign_pool(size: int, held: list[Held], cache: Counts | None = None
                ) -> list[Held | None]:
    """Kafka's steps 2-4 for one pool of ``size`` partitions (positions ``0 .. size - 1``,
    in assignment order) and ``len(held)`` members (in member order).

    ``held[i]`` is member ``i``'s current partitions of the pool, ascending (step 1 done).
    Returns each member's new partitions, ascending, or ``None`` if they did not change.
    ``held`` is used as scratch space.
    """
    members = len(held)
    key = (members, size)
    found = None if cache is None else cache.get(key)
    if found is None:
        found = desired_counts(members, size)
        if cache is not None:
            cache[key] = found
    sharing, want = found
    count = list(map(len, held))
    total = sum(count)
    if count == want and _within_sharing(sharing, held, total):
        return [None] * members  # nothing overfilled, overshared or unfilled

    changed = [False] * members
    for i in [i for i in range(members) if count[i] > want[i]]:
        held[i] = held[i][count[i] - want[i]:]
        total -= count[i] - want[i]
        count[i] = want[i]
        changed[i] = True

    added: dict[int, list[int]]
    taken = set().union(*held) if sharing == 1 and total else set()
    if sharing == 1 and len(taken) == total:  # nothing overshared
        deficient: Sequence[int]
        if not total:
            deficient = range(size)
        else:
            deficient = sorted(set(range(size)).difference(taken)) if total < size else ()
        unfilled = [i for i in range(members) if count[i] < want[i]]
        added = _deal(unfilled, [w - c for w, c in zip(want, count, strict=True)], deficient)
    else:
        first, more = _owners(size, held)
        if more:
            _revoke_overshared(sharing, held, first, more, count, changed)
        if sharing == 1:
            deficient = [f for f, o in enumerate(first) if o < 0]
        else:
            deficient = [
                f for f, o in enumerate(first)
                if o < 0 or len(more.get(f, (o,))) < sharing
            ]
        unfilled = [i for i in range(members) if count[i] < want[i]]
        added = {}
        if unfilled and deficient:
            added = _assign_remaining(sharing, want, count, unfilled, deficient, first, more)
    for i, got in added.items():
        h = held[i]
        held[i] = sorted([*h, *got]) if h else got
        changed[i] = True
    return [h if c else None for h, c in zip(held, changed, strict=True)]


def _within_sharing(sharing: int, held: list[Held], total: int) -> bool:
    """No partition is held by more than ``sharing`` members."""
    if total <= sharing:
        return True
    if sharing == 1:
        return len(set().union(*held)) == total
    return max(Counter(chain.from_iterable(held)).values()) <= sharing


def _owners(size: int, held: list[Held]) -> tuple[list[int], dict[int, list[int]]]:
    """``first[f]``: the first holder of ``f`` (-1: none); ``more[f]``: all its holders, in
    member order, if there are several."""
    first = [-1] * size
    more: dict[int, list[int]] = {}
    for i, h in enumerate(held):
        for f in h:
            o = first[f]
            if o < 0:
                first[f] = i
            else:
                holders = more.get(f)
                if holders is None:
                    more[f] = [o, i]
                else:
                    holders.append(i)
    return first, more


def _revoke_overshared(
    sharing: int,
    held: list[Held],
    first: list[int],
    more: dict[int, list[int]],
    count: list[int],
    changed: list[bool],
) -> None:
    """Step 3: a partition with more than ``sharing`` holders drops its first holders."""
    lost: dict[int, set[int]] = {}
    for f in sorted(more):
        holders = more[f]
        extra = len(holders) - sharing
        if extra <= 0:
            continue
        for i in holders[:extra]:
            lost.setdefault(i, set()).add(f)
        kept = holders[extra:]
        first[f] = kept[0]
        if len(kept) > 1:
            more[f] = kept
        else:
            del more[f]
    for i, gone in lost.items():
        held[i] = [f for f in held[i] if f not in gone]
        count[i] -= len(gone)
        changed[i] = True


def _deal(order: list[int], need: list[int], deficient: Sequence[int]
          ) -> dict[int, list[int]]:
    """Step 4 when every partition wants one member and ``deficient`` ones have none.

    Nobody can already hold a deficient partition, so every step of the cyclic iterator
    assigns: pass ``j`` of the iterator hands one partition to each member still needing
    more than ``j``, in member order. Passes with the same members are dealt as slices.
    """
    added: dict[int, list[int]] = {}
    total = len(deficient)
    off = 0
    done = 0
    for level in sorted({need[i] for i in order}):
        n = len(order)
        end = min(off + (level - done) * n, total)
        for x, i in enumerate(order):
            part = deficient[off + x:end:n]
            if part:
                mine = added.get(i)
                if mine is None:
                    added[i] = list(part)
                else:
                    mine.extend(part)
        off = end
        if off >= total:
            break
        done = level
        order = [i for i in order if need[i] > level]
    return added


def _assign_remaining(
    sharing: int,
    want: list[int],
    count: list[int],
    unfilled: list[int],
    deficient: list[int],
    first: list[int],
    more: dict[int, list[int]],
) -> dict[int, list[int]]:
    """Step 4: the cyclic iterator over unfilled members; returns what each member got.

    As in Kafka, "already holds the partition" means held before this step: when the
    iterator wraps around within one partition and comes back to a member that took the
    partition moments ago, that member "takes" it again, which changes nothing for the
    member but counts towards the partition's desired sharing (so the partition may end
    one member short, and the walk goes on rather than stopping on a fruitless pass).
    """
    added: dict[int, list[int]] = {}
    left = len(unfilled)
    order = unfilled
    pos = 0
    progress = False
    for f in deficient:
        o = first[f]
        holders: Sequence[int] = () if o < 0 else more.get(f) or (o,)
        need = sharing - len(holders)
        got: list[int] = []
        while need:
            if pos == len(order):
                if not progress:
                    return added  # a whole pass assigned nothing: Kafka stops here
                order = [i for i in order if count[i] < want[i]]
                pos = 0
                progress = False
                if not order:
                    return added
            i = order[pos]
            pos += 1
            if i in holders:
                continue
            need -= 1
            progress = True
            if i in got:  # see the note above
                continue
            got.append(i)
            mine = added.get(i)
            if mine is None:
                added[i] = [f]
            else:
                mine.append(f)
            count[i] += 1
            if count[i] >= want[i]:
                left -= 1
        if not left:
            break
    return added


def _assign_homogeneous(
    spec: AssignmentSpec,
    out_topics: list[Sequence[int]],
    out_parts: list[Sequence[Partitions]],
) -> None:
    """One pool: every partition of the common subscription, in topic order."""
    topics = spec.subscriptions[spec.member_subscriptions[0]]
    if not topics:
        return
    counts = spec.partition_counts
    base = [-1] * spec.topic_count
    size = 0
    for t in topics:
        base[t] = size
        size += counts[t]
    base_at = base.__getitem__
    cur_topics = spec.current_topics
    cur_parts = spec.current_partitions
    held: list[Held] = []
    stale: set[int] = set()
    for m, ts in enumerate(cur_topics):
        if not ts:
            held.append(())
            continue
        ps = cur_parts[m]
        bases = list(map(base_at, ts))
        if -1 in bases:  # step 1: topics the member no longer subscribes to
            stale.add(m)
            pairs = [(b, p) for b, p in zip(bases, ps, strict=True) if b >= 0]
            bases = [b for b, _ in pairs]
            ps = tuple(p for _, p in pairs)
        if len(bases) == 1 and not bases[0]:
            held.append(ps[0])
        elif len(ps) == sum(map(len, ps)):  # one partition per topic: no repeat objects
            held.append(list(map(add, bases, map(_first, ps))))
        else:
            held.append(list(map(add, chain.from_iterable(map(repeat, bases, map(len, ps))),
                                 chain.from_iterable(ps))))
    new = assign_pool(size, held)

    def keep(m: int) -> None:
        """Member ``m`` keeps its current partitions of the pool's topics."""
        if m in stale:
            pairs = [(t, p) for t, p in zip(cur_topics[m], cur_parts[m], strict=True)
                     if base[t] >= 0]
            out_topics[m] = tuple(t for t, _ in pairs)
            out_parts[m] = tuple(p for _, p in pairs)
        else:
            out_topics[m] = cur_topics[m]
            out_parts[m] = cur_parts[m]

    if len(topics) == 1:
        (t,) = topics
        for m, flat in enumerate(new):
            if flat is None:
                keep(m)
            elif flat:
                out_topics[m] = (t,)
                out_parts[m] = (tuple(flat),)
        return

    topic_of: list[int] = []
    number: list[int] = []
    for t in topics:
        topic_of.extend([t] * counts[t])
        number.extend(range(counts[t]))
    topic_at = topic_of.__getitem__
    number_at = number.__getitem__
    for m, flat in enumerate(new):
        if flat is None:
            keep(m)
        elif flat:
            ts_out = tuple(map(topic_at, flat))
            if len(set(ts_out)) == len(ts_out):  # one partition per topic
                out_topics[m] = ts_out
                out_parts[m] = tuple(zip(map(number_at, flat)))
                continue
            runs = [(t, tuple(map(number_at, run))) for t, run in groupby(flat, topic_at)]
            out_topics[m] = tuple(t for t, _ in runs)
            out_parts[m] = tuple(p for _, p in runs)


def _assign_heterogeneous(
    spec: AssignmentSpec,
    out_topics: list[Sequence[int]],
    out_parts: list[Sequence[Partitions]],
) -> None:
    """One pool per topic, over the members subscribed to it."""
    counts = spec.partition_counts
    cur_topics = spec.current_topics
    cur_parts = spec.current_partitions
    current = [
        dict(zip(ts, ps, strict=True)) if ts else None
        for ts, ps in zip(cur_topics, cur_parts, strict=True)
    ]
    # step 1: a member drops the topics it no longer subscribes to
    subs = [frozenset(sub) for sub in spec.subscriptions]
    changes: list[dict[int, Sequence[int]] | None] = [
        None if not ts or subs[s].issuperset(ts) else {}
        for ts, s in zip(cur_topics, spec.member_subscriptions, strict=True)
    ]
    cache: Counts = {}
    fresh: dict[tuple[int, int], list[Held | None]] = {}
    for t, members in enumerate(subscribers(spec)):
        if not members:
            continue
        size = counts[t]
        held: list[Held] = [
            () if mine is None else mine.get(t, ())
            for mine in map(current.__getitem__, members)
        ]
        if any(held):
            new = assign_pool(size, held, cache)
            if new.count(None) == len(new):
                continue
        else:  # nobody holds the topic: the outcome depends on the sizes only
            key = (len(members), size)
            found = fresh.get(key)
            if found is None:
                found = fresh[key] = [
                    None if p is None else tuple(p) for p in assign_pool(size, held, cache)
                ]
            new = found
        for m, got in zip(members, new, strict=True):
            if got is not None:
                mine = changes[m]
                if mine is None:
                    changes[m] = {t: got}
                else:
                    mine[t] = got
    for m, mine in enumerate(changes):
        if mine is None:
            out_topics[m] = cur_topics[m]
            out_parts[m] = cur_parts[m]
            continue
        merged: dict[int, Sequence[int]] = {}
        held_now = current[m]
        if held_now:
            sub = subs[spec.member_subscriptions[m]]
            merged = {t: p for t, p in held_now.items() if t in sub}
        merged.update(mine)
        pairs = sorted((t, p) for t, p in merged.items() if p)
        out_topics[m] = tuple(t for t, _ in pairs)
        out_parts[m] = tuple(p if isinstance(p, tuple) else tuple(p) for _, p in pairs)
