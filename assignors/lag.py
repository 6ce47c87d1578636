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

:mod:`assignors._lag_reference` states the rule directly (a heap over all ``k`` subscribers
of each topic, O(k + n log k) per topic). This module computes exactly the same assignment
(the tests compare the two) without touching every subscriber of every topic:

* the greedy fills "levels": every subscriber with the fewest partitions of the topic gets
  one before anybody gets another, and within a level the members' keys do not change, so
  a level is one sort instead of a heap operation per partition;
* when a topic has fewer partitions than subscribers (``n < k``) only the first level is
  reached, and the members that get something are the first ones of the group in a fixed
  order: (total lag, total count, member) for partitions with lag, (total count, total lag,
  member) for those without. A :class:`_Ranking` keeps the subscribers of a subscriber set
  in that order across topics (sorted packed-int keys, updated for the members whose totals
  changed), so a topic costs O(n log k) rather than O(k);
* stickiness: the current owners of each topic are found by one pass over the current
  assignment, and when ``n < k`` both the sticky and the fresh assignment give every
  partition its own member, so their spreads are the topic's maximum lag and the fresh one
  need not be built;
* partitions are plain ints in flat lists and tuples; member totals are flat lists.

At 1,000 members x 1,000 topics x 50 partitions this takes tens of milliseconds rather than
the reference's seconds.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Sequence

from assignors._lag_reference import assign_reference
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

Chosen = tuple[list[int], list[Partitions], list[int]]
"""One topic's assignment: members that get partitions, their ascending partitions and the
partitions' total lag (parallel lists)."""

RANKING_MIN_MEMBERS = 48
"""Below this many subscribers a topic selects its members directly instead of a ranking."""
RANKING_MIN_TOPICS = 2
"""A subscriber set gets a ranking only if it has at least this many topics to assign."""


def partition_lags(
    spec: AssignmentSpec, topic: int, reset: OffsetReset = DEFAULT_LAG_OFFSET_RESET
) -> Sequence[int]:
    """Lag of each partition of ``topic``: explicit lags, else from offsets, else zero.

    From offsets, lag = log end - committed; without a committed offset it is the whole
    log (log end - log start) under ``earliest`` and 0 under ``latest``.
    """
    n = spec.partition_counts[topic]
    if spec.lags:
        explicit = spec.lags[topic]
        if explicit is not None:
            return explicit
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
        result = _Engine(spec, lambda t: partition_lags(spec, t, reset), tolerance).run()
        if result is None:  # negative lags: only a hand-made spec has them
            return assign_reference(spec, lambda t: partition_lags(spec, t, reset), tolerance)
        return result


class _Ranking:
    """Members of one subscriber set, in the order one phase of the greedy visits members
    that hold nothing of the topic yet. Keys are packed ints (see :class:`_Engine`) that end
    in the member index. ``dirty`` members have totals that changed since they were listed;
    ``popped`` ones were handed out by :meth:`take` and are listed again on the next call.
    """

    __slots__ = ("dirty", "keys", "keys_of", "listed", "modulus", "popped")

    def __init__(
        self, members: list[int], keys_of: Callable[[list[int]], list[int]], modulus: int
    ) -> None:
        listed = keys_of(members)
        self.keys_of = keys_of
        self.listed: dict[int, int | None] = dict(zip(members, listed, strict=True))
        self.keys = sorted(listed)
        self.dirty: set[int] = set()
        self.popped: list[int] = []
        self.modulus = modulus

    def _refresh(self) -> None:
        keys = self.keys
        listed = self.listed
        popped = self.popped
        dirty = self.dirty
        dirty.difference_update(popped)
        if dirty:
            for m in [m for m in dirty if m not in listed]:
                dirty.remove(m)  # a member of another subscriber set
        if 4 * (len(dirty) + len(popped)) > len(keys):
            changed = list(dirty) + popped
            listed.update(zip(changed, self.keys_of(changed), strict=True))
            keys[:] = sorted(listed.values())  # type: ignore[arg-type,type-var]  # no None left
        else:
            for m in dirty:
                # only popped members map to None, and they left dirty above
                del keys[bisect_left(keys, listed[m])]  # type: ignore[type-var]  # never None
            changed = popped + list(dirty)
            new = self.keys_of(changed)
            listed.update(zip(changed, new, strict=True))
            new.sort()
            lo = 0
            for k in new:
                lo = bisect_right(keys, k, lo)
                keys.insert(lo, k)
                lo += 1
        dirty.clear()
        popped.clear()

    def take(self, count: int, exclude: set[int] | None) -> list[int]:
        """The first ``count`` members (fewer if there are not enough) not in ``exclude``.

        They leave the list until the next call, which lists them again with their keys of
        then: the caller is about to change their totals.
        """
        if self.dirty or self.popped:
            self._refresh()
        keys = self.keys
        modulus = self.modulus
        if not exclude:
            result = [k % modulus for k in keys[:count]]
            del keys[:count]
        else:
            result = []
            where = []
            if count:
                for x, k in enumerate(keys):
                    m = k % modulus
                    if m not in exclude:
                        result.append(m)
                        where.append(x)
                        if len(result) == count:
                            break
            for x in reversed(where):
                del keys[x]
        listed = self.listed
        for m in result:
            listed[m] = None
        self.popped += result
        return result


class _Engine:
    """One run of the fast lag assignment (see the module doc)."""

    def __init__(
        self, spec: AssignmentSpec, lags_of: Callable[[int], Sequence[int]], tolerance: float
    ) -> None:
        self.spec = spec
        self.lags_of = lags_of
        self.tolerance = tolerance
        members = spec.member_count
        self.total_lag = [0] * members
        self.total_count = [0] * members
        self.rankings: dict[tuple[tuple[int, ...], int], _Ranking] = {}
        self.watchers: dict[int, list[_Ranking]] = {}
        """Subscription index -> rankings that list its members."""
        self.remaining: Counter[tuple[int, ...]] = Counter()
        """Subscriber set -> topics still to assign."""
        self.positions: dict[tuple[int, ...], dict[int, int]] = {}

    def run(self) -> GroupAssignment | None:
        spec = self.spec
        members = spec.member_count
        topics = spec.topic_count
        counts = spec.partition_counts

        # subscriber sets: topics with the same subscribing subscriptions share one
        by_sub: dict[int, list[int]] = {}
        for m, s in enumerate(spec.member_subscriptions):
            by_sub.setdefault(s, []).append(m)
        sig_parts: list[list[int]] = [[] for _ in range(topics)]
        for s in sorted(by_sub):
            for t in spec.subscriptions[s]:
                sig_parts[t].append(s)
        sig_members: dict[tuple[int, ...], list[int]] = {}
        topic_sig: list[tuple[int, ...] | None] = [None] * topics
        all_lags: list[Sequence[int] | None] = [None] * topics
        lag_sum = 0
        for t in range(topics):
            if not sig_parts[t] or not counts[t]:
                continue
            sig = tuple(sig_parts[t])
            if sig not in sig_members:
                if len(sig) == 1:
                    sig_members[sig] = by_sub[sig[0]]
                else:
                    sig_members[sig] = sorted(m for s in sig for m in by_sub[s])
            topic_sig[t] = sig
            self.remaining[sig] += 1
            lags = self.lags_of(t)
            if min(lags) < 0:
                return None
            all_lags[t] = lags
            lag_sum += sum(lags)

        # packed keys, exact for non-negative int totals:
        #   phase 0 (lagging partitions): (total lag, total count, member)
        #   phase 1 (no lag):              (total count, total lag, member)
        tl = self.total_lag
        tc = self.total_count
        count_base = sum(counts) + 1
        lag_base = lag_sum + 1
        self.keys: tuple[Callable[[list[int]], list[int]], ...] = (
            lambda ms: [(tl[m] * count_base + tc[m]) * members + m for m in ms],
            lambda ms: [(tc[m] * lag_base + tl[m]) * members + m for m in ms],
        )

        holders = self._holders()
        self.singles = [(p,) for p in range(max(counts, default=0))]
        """``(p,)`` for every partition number, shared by all one-partition assignments."""
        out_topics: list[list[int]] = [[] for _ in range(members)]
        out_parts: list[list[Partitions]] = [[] for _ in range(members)]
        watchers = self.watchers
        for t in range(topics):
            t_sig = topic_sig[t]
            if t_sig is None:
                continue
            t_lags = all_lags[t]
            assert t_lags is not None
            chosen_members, chosen_parts, chosen_loads = self._topic(
                t_sig, sig_members[t_sig], t_lags, holders[t]
            )
            self.remaining[t_sig] -= 1
            if not self.remaining[t_sig]:
                self._retire(t_sig)
            for m, parts, load in zip(chosen_members, chosen_parts, chosen_loads, strict=True):
                out_topics[m].append(t)
                out_parts[m].append(parts)
                tl[m] += load
                tc[m] += len(parts)
            if watchers:
                notified = {id(r): r for s in t_sig for r in watchers.get(s, ())}
                for ranking in notified.values():
                    ranking.dirty.update(chosen_members)
        return GroupAssignment(spec.member_ids, spec.topic_ids, out_topics, out_parts)

    def _holders(self) -> list[tuple[list[int], list[Partitions]] | None]:
        """Per topic: its current holders among its subscribers, ascending, and their
        partitions; ``None`` if nobody holds any."""
        spec = self.spec
        topics = spec.topic_count
        held_by: list[list[int]] = [[] for _ in range(topics)]
        held_parts: list[list[Partitions]] = [[] for _ in range(topics)]
        allowed_by_sub: dict[int, set[int] | None] = {}
        member_subs = spec.member_subscriptions
        current_parts = spec.current_partitions
        for m, ts in enumerate(spec.current_topics):
            if not ts:
                continue
            s = member_subs[m]
            if s in allowed_by_sub:
                allowed = allowed_by_sub[s]
            else:
                sub = spec.subscriptions[s]
                allowed = allowed_by_sub[s] = None if len(sub) == topics else set(sub)
            if allowed is None:
                for t, ps in zip(ts, current_parts[m], strict=True):
                    held_by[t].append(m)
                    held_parts[t].append(ps)
            else:
                for t, ps in zip(ts, current_parts[m], strict=True):
                    if t in allowed:
                        held_by[t].append(m)
                        held_parts[t].append(ps)
        return [
            (ms, ps) if ms else None for ms, ps in zip(held_by, held_parts, strict=True)
        ]

    def _retire(self, sig: tuple[int, ...]) -> None:
        """``sig`` has no topics left: stop maintaining its rankings."""
        for phase in (0, 1):
            ranking = self.rankings.pop((sig, phase), None)
            if ranking is not None:
                for s in sig:
                    self.watchers[s].remove(ranking)
                    if not self.watchers[s]:
                        del self.watchers[s]
        self.positions.pop(sig, None)

    def _select(
        self, sig: tuple[int, ...], subs: list[int], phase: int, count: int,
        exclude: set[int] | None,
    ) -> list[int]:
        """The first ``count`` of ``subs`` not in ``exclude``, in ``phase``'s order."""
        if not count:
            return []
        ranking = self.rankings.get((sig, phase))
        if ranking is None:
            keys_of = self.keys[phase]
            members = len(self.total_lag)
            if len(subs) < RANKING_MIN_MEMBERS or self.remaining[sig] < RANKING_MIN_TOPICS:
                keys = keys_of([m for m in subs if m not in exclude] if exclude else subs)
                if count < len(keys):
                    keys = heapq.nsmallest(count, keys)
                else:
                    keys.sort()
                return [k % members for k in keys]
            ranking = _Ranking(subs, keys_of, members)
            self.rankings[sig, phase] = ranking
            for s in sig:
                self.watchers.setdefault(s, []).append(ranking)
        return ranking.take(count, exclude)

    def _topic(
        self, sig: tuple[int, ...], subs: list[int], lags: Sequence[int],
        held: tuple[list[int], list[Partitions]] | None,
    ) -> Chosen:
        k = len(subs)
        n = len(lags)
        if held is None:
            return self._fresh(sig, subs, lags, _order(lags))
        bound = self.tolerance * (sum(lags) / k)
        if n < k:
            # the sticky and the fresh assignment both give every partition its own member
            # and leave some member empty: both spreads are the largest lag
            spread = max(lags)
            if spread <= spread + bound:
                return self._sticky_few(sig, subs, lags, held)
            return self._fresh(sig, subs, lags, _order(lags))
        order = _order(lags)
        sticky = self._sticky_many(sig, subs, lags, held, order)
        sticky_spread = _spread(sticky, k)
        if sticky_spread <= bound:  # the fresh spread is >= 0
            return sticky
        fresh = self._fresh(sig, subs, lags, order)
        if sticky_spread <= _spread(fresh, k) + bound:
            return sticky
        return fresh

    def _fresh(
        self, sig: tuple[int, ...], subs: list[int], lags: Sequence[int], order: list[int]
    ) -> Chosen:
        """The greedy assignment of the topic from scratch."""
        k = len(subs)
        n = len(order)
        positive = n - lags.count(0)
        if n < k:
            return self._place(sig, subs, lags, order, positive, None, ([], [], []))
        tl = self.total_lag
        lag = [tl[m] for m in subs]
        added = _levels([0] * k, lag, [self.total_count[m] for m in subs],
                        order, positive, lags, None, 0)
        return _collect(subs, {}, added, lag, tl)

    def _place(
        self, sig: tuple[int, ...], subs: list[int], lags: Sequence[int], free: list[int],
        positive: int, exclude: set[int] | None, chosen: Chosen,
    ) -> Chosen:
        """Free partitions (decreasing lag) one each onto members holding none of the topic
        (``subs`` minus ``exclude``), added to ``chosen``: the greedy's first level when
        ``n < k``."""
        members, parts, loads = chosen
        picks = self._select(sig, subs, 0, positive, exclude)
        members += picks
        parts += map(self.singles.__getitem__, free[:positive])
        loads += [lags[p] for p in free[:positive]]
        if positive < len(free):
            skip = set(picks)
            if exclude:
                skip |= exclude
            more = self._select(sig, subs, 1, len(free) - positive, skip)
            members += more
            parts += map(self.singles.__getitem__, free[positive:])
            loads += [0] * len(more)
        return chosen

    def _sticky_few(
        self, sig: tuple[int, ...], subs: list[int], lags: Sequence[int],
        held: tuple[list[int], list[Partitions]],
    ) -> Chosen:
        """The sticky assignment when ``n < k``: the quota is 0, plus one for every holder
        (there are at most ``n``), who keeps its partition of highest lag."""
        members, parts = held
        n = len(lags)
        if len(members) == n:  # n holders of n partitions: one each, nothing is free
            return members, parts, [lags[p] for p, in parts]
        kept: list[Partitions] = []
        for ps in parts:
            if len(ps) > 1:
                ps = (max(ps, key=lags.__getitem__),)  # first of the highest lag: lowest p
            kept.append(ps)
        taken = bytearray(n)
        for ps in kept:
            taken[ps[0]] = 1
        free = [p for p in _order(lags) if not taken[p]]
        positive = sum(1 for p in free if lags[p])
        chosen = (list(members), kept, [lags[p] for p, in kept])
        return self._place(sig, subs, lags, free, positive, set(members), chosen)

    def _sticky_many(
        self, sig: tuple[int, ...], subs: list[int], lags: Sequence[int],
        held: tuple[list[int], list[Partitions]], order: list[int],
    ) -> Chosen:
        """The sticky assignment when ``n >= k``: holders keep their partitions of highest
        lag up to ``n // k`` (plus one for the first ``n % k`` holders with more)."""
        k = len(subs)
        n = len(order)
        q, extras = divmod(n, k)
        positions = self.positions.get(sig)
        if positions is None:
            positions = self.positions[sig] = {m: i for i, m in enumerate(subs)}
        tl = self.total_lag
        count = [0] * k
        lag = [tl[m] for m in subs]
        overall = [self.total_count[m] for m in subs]
        kept: dict[int, Partitions] = {}
        taken = bytearray(n)
        getlag = lags.__getitem__
        for m, ps in zip(*held, strict=True):
            quota = q
            if extras and len(ps) > q:
                quota += 1
                extras -= 1
            if len(ps) > quota:
                ps = tuple(sorted(sorted(ps, key=getlag, reverse=True)[:quota]))
            if not ps:
                continue
            i = positions[m]
            kept[i] = ps
            count[i] = len(ps)
            lag[i] += sum(map(getlag, ps))
            for p in ps:
                taken[p] = 1
        free = [p for p in order if not taken[p]]
        positive = sum(1 for p in free if lags[p])
        added = _levels(count, lag, overall, free, positive, lags, q, extras)
        return _collect(subs, kept, added, lag, tl)


def _collect(
    subs: list[int], kept: dict[int, Partitions], added: list[list[int]], lag: list[int],
    total_lag: list[int],
) -> Chosen:
    """The members' kept plus added partitions; ``lag`` is their total lag after."""
    members: list[int] = []
    parts: list[Partitions] = []
    loads: list[int] = []
    for i, m in enumerate(subs):
        mine = kept.get(i)
        more = added[i]
        if more:
            ps = tuple(sorted(mine + tuple(more))) if mine else tuple(sorted(more))
        elif mine:
            ps = mine
        else:
            continue
        members.append(m)
        parts.append(ps)
        loads.append(lag[i] - total_lag[m])
    return members, parts, loads


def _order(lags: Sequence[int]) -> list[int]:
    """Partitions by decreasing lag, ties by partition number (sorting is stable)."""
    return sorted(range(len(lags)), key=lags.__getitem__, reverse=True)


def _spread(chosen: Chosen, k: int) -> int:
    """Max minus min lag over the ``k`` subscribers (those not in ``chosen`` have 0)."""
    loads = chosen[2]
    if not loads:
        return 0
    return max(loads) - (min(loads) if len(loads) == k else 0)


def _levels(
    count: list[int],
    lag: list[int],
    overall: list[int],
    parts: list[int],
    positive: int,
    lags: Sequence[int],
    q: int | None,
    extras: int,
) -> list[list[int]]:
    """The greedy, level by level: place ``parts`` (decreasing lag, the first ``positive``
    with lag) onto members ``0..k-1`` (member order) and return what each one got.

    A member at the lowest partition count goes first; among those, the least ``lag`` (then
    overall count, then member) while partitions have lag, the least overall count (then
    ``lag``) once they have none. Members of one count keep their keys until served, and
    their overall counts differ as their totals before the topic (``overall``) do, so each
    count is one sort. With ``q``
    members stop at ``q`` partitions, ``extras`` of them at ``q + 1``. ``lag`` is updated in
    place.
    """
    k = len(count)
    added: list[list[int]] = [[] for _ in range(k)]
    levels: dict[int, list[int]] = {}
    for i, c in enumerate(count):
        if q is None or c <= q:
            levels.setdefault(c, []).append(i)
    if not levels:
        return added
    n = len(parts)
    j = 0
    c = min(levels)
    top = max(levels)

    def by_lag(i: int) -> tuple[int, int, int]:
        return (lag[i], overall[i], i)

    def by_count(i: int) -> tuple[int, int, int]:
        return (overall[i], lag[i], i)

    while j < n and c <= top:
        level = levels.pop(c, None)
        if level is None:
            c += 1
            continue
        last = q is not None and c == q
        if last and not extras:
            break
        lagging = j < positive
        level.sort(key=by_lag if lagging else by_count)
        size = len(level)
        x = 0
        while x < size and j < n:
            if lagging and j >= positive:
                lagging = False
                level[x:] = sorted(level[x:], key=by_count)
            end = min(size - x, n - j)
            if lagging:
                end = min(end, positive - j)
            if last:
                end = min(end, extras)
                extras -= end
            served = level[x:x + end]
            for i, p in zip(served, parts[j:j + end], strict=True):
                added[i].append(p)
                lag[i] += lags[p]
            x += end
            j += end
            if last:
                if not extras:
                    break
            else:
                levels.setdefault(c + 1, []).extend(served)
                top = max(top, c + 1)
        c += 1
    return added
