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

A class with fewer partitions than members (overlapping subscriptions: every topic its own
class, hundreds of subscribers, tens of partitions) is solved without a step per member:
only the current holders and the first members in range order can get a partition. Such a
topic whose partitions are all held, one each, by subscribers holding nothing unusual is
settled as it is, from counts per topic: its holders keep their tuples and it costs no step
per holder, so one member joining costs in proportion to the topics that change.

With racks, each free partition in order goes to the first member still short of its count
on one of its replicas' racks. That is computed from the members' side (the same matching):
each member in order takes the first untaken partition with a replica on its rack, from a
stream per rack over the partitions with a replica there; the steps run inside C iterators,
none per partition in Python.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import chain, compress, count, repeat
from operator import is_, itemgetter

from assignors.base import PartitionAssignor
from assignors.spec import NO_RACK, AssignmentSpec, GroupAssignment, Partitions

_NONE: Iterator[Partitions] = iter(())
"""The stream of a taker on a rack with no replica of any free partition."""


class RackSets:
    """Per partition number of a class, the racks holding a replica of it in every topic
    (``sets``), and per rack the partition numbers with a replica there (``on``)."""

    __slots__ = ("_every", "on", "sets")

    def __init__(self, sets: list[tuple[int, ...]]) -> None:
        self.sets = sets
        on: dict[int, list[int]] = {}
        for p, racks in enumerate(sets):
            for rack in racks:
                on.setdefault(rack, []).append(p)
        self.on = on
        self._every: dict[int, Partitions] | None = None

    def every(self, singles: list[Partitions]) -> dict[int, Partitions]:
        """``{p: singles[p]}`` for every partition number, ascending (not to be changed:
        copy it)."""
        if self._every is None:
            self._every = dict(enumerate(singles[:len(self.sets)]))
        return self._every


class _RackCache:
    """Rack data shared by the classes of one assignment: the racks members are on, the
    :class:`RackSets` of each combination of partition-racks tuples, and the racks a
    member may be on to have a replica of every partition, per set of such racks."""

    __slots__ = ("by_key", "member_racks", "untouched")

    def __init__(self, spec: AssignmentSpec) -> None:
        self.member_racks = frozenset(spec.member_racks) - {NO_RACK}
        self.by_key: dict[tuple[int, ...], RackSets] = {}
        self.untouched: dict[frozenset[int], frozenset[int]] = {}


class RangeAssignor(PartitionAssignor):
    name = "range"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        counts = spec.partition_counts
        by_sub: dict[int, list[int]] = {}
        for m, s in enumerate(spec.member_subscriptions):
            by_sub.setdefault(s, []).append(m)
        signature: list[list[int]] = [[] for _ in range(spec.topic_count)]
        for s in sorted(by_sub):
            for t in spec.subscriptions[s]:
                signature[t].append(s)
        classes: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        for t, sub_list in enumerate(signature):
            if sub_list and counts[t]:
                classes.setdefault((counts[t], tuple(sub_list)), []).append(t)
        only = {s: ms[0] for s, ms in by_sub.items() if len(ms) == 1}
        settled = _settled_topics(spec, classes, by_sub, len(only) == len(by_sub))

        rank = _range_rank(spec)
        out_topics: list[tuple[int, ...] | list[int]] = [()] * spec.member_count
        out_parts: list[tuple[Partitions, ...] | list[Partitions]] = [()] * spec.member_count
        holders = _Holders(spec, _keep_settled(spec, settled, out_topics, out_parts))
        singles: list[Partitions] = []  # (p,), shared by all one-partition assignments
        rack_cache = _RackCache(spec)
        grown: list[bool] = [False] * spec.member_count
        for (n, subs), topics in classes.items():
            if len(topics) == 1 and topics[0] in settled:
                continue
            topics.sort()
            if len(subs) == 1:
                members: list[int] = by_sub[subs[0]]
            else:
                if len(only) == len(by_sub) or all(map(only.__contains__, subs)):
                    members = list(map(only.__getitem__, subs))
                else:
                    members = [m for s in subs for m in by_sub[s]]
                members.sort()
            if rank is not None:
                members = sorted(members, key=rank.__getitem__)
            class_topics = tuple(topics)
            width = len(class_topics)
            for m, parts in _assign_class(spec, members, topics, n, holders, rank, singles,
                                          rack_cache):
                if not out_topics[m]:
                    out_topics[m] = class_topics
                    out_parts[m] = (parts,) * width
                    continue
                if not grown[m]:
                    grown[m] = True
                    out_topics[m] = list(out_topics[m])
                    out_parts[m] = list(out_parts[m])
                out_topics[m] += class_topics  # type: ignore[operator]  # lists by now
                out_parts[m] += (parts,) * width  # type: ignore[operator]
        for m in compress(range(spec.member_count), grown):
            out_topics[m] = tuple(out_topics[m])
            out_parts[m] = tuple(out_parts[m])
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


def _settled_topics(
    spec: AssignmentSpec, classes: dict[tuple[int, tuple[int, ...]], list[int]],
    by_sub: dict[int, list[int]], unique: bool,
) -> frozenset[int]:
    """Topics whose current holders are exactly what range gives them: one-topic classes
    with fewer partitions than subscribers, each partition held by a different subscriber
    that holds one partition of every topic it holds, all of them subscribed (every holder
    keeps its one partition and nobody else gets one). Decided per topic from holder
    counts; the per-member checks are C-level calls."""
    cur_topics = spec.current_topics
    if not any(cur_topics):
        return frozenset()
    candidates: dict[int, int] = {}  # one-topic class with fewer partitions than members
    for (n, subs), topics in classes.items():
        if len(topics) == 1 and n < (len(subs) if unique else
                                     sum(len(by_sub[s]) for s in subs)):
            candidates[topics[0]] = n
    if not candidates:
        return frozenset()
    cur_parts = spec.current_partitions
    subscriptions = spec.subscriptions
    member_subs = spec.member_subscriptions
    covers: dict[int, frozenset[int]] = {}
    dirty: set[int] = set()  # topics held by a member that is not plain
    for m, ts in enumerate(cur_topics):
        if not ts:
            continue
        s = member_subs[m]
        cover = covers.get(s)
        if cover is None:
            cover = covers[s] = frozenset(subscriptions[s])
        if sum(map(len, cur_parts[m])) != len(ts) or not cover.issuperset(ts):
            dirty.update(ts)
    held = Counter(chain.from_iterable(cur_topics))
    return frozenset(t for t, n in candidates.items() if held[t] == n and t not in dirty)


def _keep_settled(
    spec: AssignmentSpec, settled: frozenset[int],
    out_topics: list[tuple[int, ...] | list[int]],
    out_parts: list[tuple[Partitions, ...] | list[Partitions]],
) -> list[int]:
    """Starts each holder's answer with its partitions of the ``settled`` topics (the
    whole current assignment, shared, when it holds nothing else); the holders of other
    topics, whose partitions are decided class by class."""
    if not settled:
        return list(compress(range(spec.member_count), spec.current_topics))
    unsettled: list[int] = []
    for m, ts in enumerate(spec.current_topics):
        if not ts:
            continue
        if settled.issuperset(ts):
            out_topics[m] = ts
            out_parts[m] = spec.current_partitions[m]
            continue
        unsettled.append(m)
        if not settled.isdisjoint(ts):
            kept = [(t, parts) for t, parts in zip(ts, spec.current_partitions[m], strict=True)
                    if t in settled]
            out_topics[m] = tuple(t for t, _ in kept)
            out_parts[m] = tuple(parts for _, parts in kept)
    return unsettled


class _Holders:
    """Who holds what of each topic in the current assignment, built on first use (one
    pass over the current assignment of the given members, the holders of every topic
    that is looked at)."""

    __slots__ = ("_by_topic", "_members", "_spec")

    def __init__(self, spec: AssignmentSpec, members: list[int]) -> None:
        self._spec = spec
        self._members = members
        self._by_topic: list[list[tuple[int, Partitions]]] | None = None

    def of(self, t: int) -> list[tuple[int, Partitions]]:
        """(member, partitions) of the members holding partitions of topic ``t``."""
        if self._by_topic is None:
            spec = self._spec
            by_topic: list[list[tuple[int, Partitions]]] = [[] for _ in range(spec.topic_count)]
            for m in self._members:
                for tt, parts in zip(spec.current_topics[m], spec.current_partitions[m],
                                     strict=True):
                    by_topic[tt].append((m, parts))
            self._by_topic = by_topic
        return self._by_topic[t]


def _assign_class(
    spec: AssignmentSpec, members: Sequence[int], topics: list[int], n: int,
    holders: _Holders, rank: list[int] | None, singles: list[Partitions],
    rack_cache: _RackCache,
) -> list[tuple[int, Partitions]]:
    """Partitions ``0..n-1`` for ``members`` (range order), shared by ``topics``: the
    members that get some, with their partitions.

    With fewer partitions than members only the holders and the first members in range
    order can get one, so only they are looked at (no step per member of the class).
    """
    k = len(members)
    q, r = divmod(n, k)
    held = _current_owners(spec, members, topics, holders, rank)
    racks = _class_racks(spec, members, topics, rack_cache)
    if not held and racks is None:
        return _fresh_ranges(members, q, r, singles)
    if q == 0:
        return _assign_sparse(spec, members, n, held, racks, singles)
    dense: list[Sequence[int]] = [held.get(m, ()) for m in members] if held else [()] * k
    cnt = list(map(len, dense))
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

    kept: list[Sequence[int]] = []
    for i in range(k):
        mine = dense[i]
        if len(mine) > quota[i]:
            mine = _keep(spec, members[i], mine, quota[i], racks)
        kept.append(mine)
    taken = {p for mine in kept for p in mine}
    free = [p for p in range(n) if p not in taken]
    needy = [i for i in range(k) if len(kept[i]) < quota[i]]
    grants = _grant(spec, members, needy, [quota[i] - len(kept[i]) for i in needy], free,
                    racks, singles)
    result: list[tuple[int, Partitions]] = []
    for i in range(k):
        got = grants.get(i)
        mine = kept[i]
        if got:
            result.append((members[i], tuple(sorted((*mine, *got)) if mine or racks else got)))
        elif mine:
            result.append((members[i], mine if isinstance(mine, tuple) else tuple(mine)))
    return result


def _assign_sparse(
    spec: AssignmentSpec, members: Sequence[int], n: int, held: dict[int, Sequence[int]],
    racks: RackSets | None, singles: list[Partitions],
) -> list[tuple[int, Partitions]]:
    """:func:`_assign_class` with fewer partitions than members (the quota is 0, plus one
    for ``n`` members): every holder keeps one partition, the first members in range order
    holding nothing take the rest."""
    if len(singles) < n:
        singles.extend((p,) for p in range(len(singles), n))
    if not held and racks is not None:  # from scratch: the first n members take one each
        takers = members[:n]
        return list(zip(takers, _match_by_rack(spec, takers, None, racks, singles),
                        strict=True))
    kept: dict[int, Sequence[int]] = {}
    for m, mine in held.items():
        kept[m] = _keep(spec, m, mine, 1, racks) if len(mine) > 1 else mine
    taken = {mine[0] for mine in kept.values()}
    free = [p for p in range(n) if p not in taken]
    result = [(m, mine if isinstance(mine, tuple) else tuple(mine)) for m, mine in kept.items()]
    if not free:
        return result
    takers = list(map(members.__getitem__, _first_without(members, kept, len(free))))
    if racks is None:
        result += zip(takers, map(singles.__getitem__, free), strict=True)
    else:
        result += zip(takers, _match_by_rack(spec, takers, free, racks, singles), strict=True)
    return result


def _first_without(members: Sequence[int], kept: dict[int, Sequence[int]], want: int
                   ) -> list[int]:
    """Positions of the first ``want`` members (range order) not in ``kept``."""
    needy: list[int] = []
    if want:
        for i, m in enumerate(members):
            if m not in kept:
                needy.append(i)
                if len(needy) == want:
                    break
    return needy


def _match_by_rack(
    spec: AssignmentSpec, takers: Sequence[int], free: list[int] | None, racks: RackSets,
    singles: list[Partitions],
) -> list[Partitions]:
    """One of the ``free`` partitions (ascending; ``None``: all of the class's) for each
    entry of ``takers`` (members in order, a member once per partition it is to get; as
    many entries as partitions), as ``singles[p]``: each free partition in order goes to
    the first taker still without one on one of its replicas' racks; the partitions left
    go in order to the takers left.

    Computed from the takers' side, which gives the same matching: each taker in order
    takes the first free partition still untaken that has a replica on its rack (a taker
    ``j`` that takes partition ``p`` this way is the first taker on a rack of ``p`` still
    without one when ``p``'s turn comes in partition order: every earlier partition
    with a replica on ``j``'s rack went to an earlier taker, so ``j`` was free, and ``p``
    went to none of them). That is a step per taker and one pass per rack over the
    partitions with a replica there, all in C: the untaken partitions are a dict (taking
    one pops it), each rack a stream of pops of its partitions, skipping those already
    taken (a check, then a pop, in one step of the stream).
    """
    if free is None:
        untaken = racks.every(singles).copy()
    else:
        untaken = dict(zip(free, map(singles.__getitem__, free), strict=True))
    # by rack index, NO_RACK (-1) at the end: the takers' streams, empty for no replica
    streams: list[Iterator[Partitions]] = [_NONE] * (len(spec.racks) + 1)
    pop = untaken.pop
    untaken_has = untaken.__contains__
    for rack, on in racks.on.items():
        streams[rack] = map(pop, filter(untaken_has, on))
    if len(takers) > 1:  # (itemgetter: one C call for all of them)
        draws = iter(itemgetter(*itemgetter(*takers)(spec.member_racks))(streams))
    else:
        draws = map(streams.__getitem__, map(spec.member_racks.__getitem__, takers))
    # a taker whose stream is dry raises StopIteration inside ``map``: the list ends there
    got: list[Partitions | None] = list(map(next, draws))
    if len(got) < len(takers):
        got.append(None)
        got += map(next, draws, repeat(None))
    if untaken:  # as many takers without one: in order, they get what is left in order
        holes = list(compress(count(), map(is_, got, repeat(None))))
        for j, parts in zip(holes, untaken.values(), strict=True):
            got[j] = parts
    return got  # type: ignore[return-value]  # no None left


def _keep(
    spec: AssignmentSpec, m: int, mine: Sequence[int], quota: int,
    racks: RackSets | None,
) -> list[int]:
    """The ``quota`` partitions ``m`` keeps of ``mine``: lowest first, rack-matched ones
    before the others."""
    rack = spec.member_racks[m]
    if racks is not None and rack != NO_RACK:
        sets = racks.sets
        good = [p for p in mine if rack in sets[p]]
        bad = [p for p in mine if rack not in sets[p]]
        return sorted((good + bad)[:quota])
    return list(mine[:quota])


def _grant(
    spec: AssignmentSpec, members: Sequence[int], needy: list[int], needs: list[int],
    free: list[int], racks: RackSets | None, singles: list[Partitions],
) -> dict[int, list[int]]:
    """``free`` (ascending) to the ``needy`` positions, ``needs`` each, in ascending runs;
    with rack data each partition first goes to the first needy member on one of its
    replicas' racks that still needs some (:func:`_match_by_rack`, a member once per
    partition it needs), the rest in ascending runs."""
    grants: dict[int, list[int]] = {}
    start = 0
    if racks is None:
        for i, need in zip(needy, needs, strict=True):
            grants[i] = free[start:start + need]
            start += need
        return grants
    if len(singles) < len(racks.sets):
        singles.extend((p,) for p in range(len(singles), len(racks.sets)))
    takers = list(chain.from_iterable(map(repeat, map(members.__getitem__, needy), needs)))
    got = _match_by_rack(spec, takers, free, racks, singles)
    for i, need in zip(needy, needs, strict=True):
        grants[i] = list(chain.from_iterable(got[start:start + need]))
        start += need
    return grants


def _fresh_ranges(
    members: Sequence[int], q: int, r: int, singles: list[Partitions]
) -> list[tuple[int, Partitions]]:
    if not q:
        if len(singles) < r:
            singles.extend((p,) for p in range(len(singles), r))
        return list(zip(members[:r], singles[:r], strict=True))
    result: list[tuple[int, Partitions]] = []
    start = 0
    for i, m in enumerate(members):
        size = q + 1 if i < r else q
        result.append((m, tuple(range(start, start + size))))
        start += size
    return result


def _current_owners(
    spec: AssignmentSpec, members: Sequence[int], topics: list[int], holders: _Holders,
    rank: list[int] | None,
) -> dict[int, Sequence[int]]:
    """Ascending partition numbers currently owned for the whole class, by member: each
    partition number goes to the subscriber holding it in most of the class's topics (ties
    to the first in range order).

    One topic: its holders (no step per member of the class). Several: when a member holds
    the same partition tuple in every topic of the class and nothing else (the usual case,
    as this assignor produces it), that tuple is taken whole; otherwise partition numbers
    are voted for.
    """
    if len(topics) == 1:
        (t,) = topics
        subscriptions = spec.subscriptions
        member_subs = spec.member_subscriptions
        owned: dict[int, Sequence[int]] = {}
        for m, parts in holders.of(t):
            sub = subscriptions[member_subs[m]]
            j = bisect_left(sub, t)
            if j < len(sub) and sub[j] == t:
                owned[m] = parts
        return owned
    topic_set = frozenset(topics)
    width = len(topics)
    cur_topics = spec.current_topics
    cur_parts = spec.current_partitions
    whole: dict[int, Sequence[int]] = {}
    mixed: list[int] = []
    for m in members:
        ts = cur_topics[m]
        if not ts:
            continue
        ps = cur_parts[m]
        if len(ts) == width and topic_set.issuperset(ts) and len(set(ps)) == 1:
            whole[m] = ps[0]
        else:
            mixed.append(m)
    if not mixed:
        return whole
    votes: dict[int, dict[int, int]] = {}
    for m, rep in whole.items():
        for p in rep:
            votes.setdefault(p, {})[m] = width
    for m in mixed:
        for t, parts in zip(cur_topics[m], cur_parts[m], strict=True):
            if t in topic_set:
                for p in parts:
                    per = votes.get(p)
                    if per is None:
                        votes[p] = {m: 1}
                    else:
                        per[m] = per.get(m, 0) + 1
    held: dict[int, list[int]] = {}
    for p in sorted(votes):
        per = votes[p]
        if len(per) == 1:
            (best,) = per
        elif rank is None:
            best = min(per, key=lambda m: (-per[m], m))
        else:
            best = min(per, key=lambda m: (-per[m], rank[m]))
        held.setdefault(best, []).append(p)
    return dict(held)


def _class_racks(
    spec: AssignmentSpec, members: Sequence[int], topics: list[int], cache: _RackCache,
) -> RackSets | None:
    """Racks holding a replica of partition ``p`` in every topic of the class, if some
    member's rack lacks a replica of some partition (else racks do not matter)."""
    if not spec.partition_racks:
        return None
    first = spec.partition_racks[topics[0]]
    if len(topics) == 1 or (itemgetter(*topics)(spec.partition_racks).count(first)
                            == len(topics)):  # (tuples are interned: usually the case)
        everywhere = spec.topic_common_racks[topics[0]]  # racks with every partition
        if first is None or everywhere is None:
            return None
        distinct = {id(first): first}
    else:
        commons = [c for t in topics if (c := spec.topic_common_racks[t]) is not None]
        if not commons:
            return None
        everywhere = frozenset.intersection(*commons)
        # topics with the same replica racks share one (interned) tuple: intersect each
        # once, and classes with the same tuples share the answer
        distinct = {id(prs): prs for t in topics
                    if (prs := spec.partition_racks[t]) is not None}
    if cache.member_racks <= everywhere:
        return None  # no member anywhere lacks a replica
    untouched = cache.untouched.get(everywhere)
    if untouched is None:
        untouched = cache.untouched[everywhere] = everywhere | {NO_RACK}
    if untouched.issuperset(map(spec.member_racks.__getitem__, members)):
        return None  # no member of the class lacks a replica
    key = tuple(sorted(distinct))
    racks = cache.by_key.get(key)
    if racks is None:
        rack_sets = spec.rack_sets
        tuples = iter(distinct.values())
        common = [rack_sets[k] for k in next(tuples)]
        for prs in tuples:
            common = [have & rack_sets[k] for have, k in zip(common, prs, strict=True)]
        racks = cache.by_key[key] = RackSets([tuple(sorted(have)) for have in common])
    return racks
