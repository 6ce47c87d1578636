"""Uniform assignment of a component whose members all subscribe to the same topics.

Everything is arithmetic on counts: with ``P`` partitions and ``N`` members, every member
gets ``P // N`` and ``P % N`` members get one more. The extra slots go first to members
that already hold more than the floor, so the number of moved partitions is the minimum
any balanced assignment needs. Members over their quota shed partitions (rack-mismatched
ones first, then from the end), and members under it take contiguous runs from a pool of
free partitions (rack-matched ones first). Free partitions are kept as ranges, never as
one object per partition, unless rack matching needs to look at each of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import accumulate, chain, compress, count, islice, pairwise
from operator import gt, itemgetter, lt

from assignors.racks import RackMatches, class_rack_flow, partitions_by_class, rack_aware
from assignors.spec import NO_RACK, AssignmentSpec, Partitions

Segment = tuple[int, Sequence[int]]
"""A run of free partitions of one topic: (topic index, ascending partitions)."""


def assign_homogeneous(
    spec: AssignmentSpec,
    members: Sequence[int],
    topics: Sequence[int],
    out_topics: list[Sequence[int]],
    out_parts: list[Sequence[Partitions]],
) -> None:
    """Assign ``topics`` to ``members`` (all subscribed to exactly ``topics``).

    Writes each member's topic indexes and partition tuples into ``out_topics[m]`` and
    ``out_parts[m]``.
    """
    counts = spec.partition_counts
    # topics are distinct indexes: as many as the spec has are all of them
    every_topic = len(topics) == len(counts)
    total = sum(counts) if every_topic else sum(map(counts.__getitem__, topics))
    n = len(members)
    if total == 0:
        return
    q, r = divmod(total, n)
    # what each member holds: C-level passes over the members (slices when they are
    # consecutive indexes, as in a group of one component), never over partitions, so a
    # member joining or leaving costs the members and the partitions that move
    first = members[0]
    consecutive = members[-1] - first + 1 == n  # (ascending and distinct)
    if consecutive:
        kept_topics: list[Sequence[int]] = list(spec.current_topics[first:first + n])
        kept_parts: list[Sequence[Partitions]] = list(spec.current_partitions[first:first + n])
    else:
        kept_topics = list(map(spec.current_topics.__getitem__, members))
        kept_parts = list(map(spec.current_partitions.__getitem__, members))
    if not any(kept_topics):
        if rack_aware(spec, members, topics):
            _fresh_by_rack(spec, members, topics, q, r, out_topics, out_parts)
        else:
            _fresh(members, topics, counts, q, r, out_topics, out_parts)
        return
    # a Python pass only over the members holding topics outside the component (their
    # subscription changed)
    topic_set = frozenset(() if every_topic else topics)
    clean = every_topic or topic_set.issuperset(chain.from_iterable(kept_topics))
    if not clean:
        for i, ts in enumerate(kept_topics):
            if not topic_set.issuperset(ts):
                pairs = [(t, p) for t, p in zip(ts, kept_parts[i], strict=True)
                         if t in topic_set]
                kept_topics[i] = tuple(t for t, _ in pairs)
                kept_parts[i] = tuple(p for _, p in pairs)
    cnt = _counts(kept_parts)
    held_total = sum(cnt)

    quota = _quotas(cnt, q, r)
    if held_total == total and clean and cnt == quota:
        _write(members, kept_topics, kept_parts, out_topics, out_parts)
        return

    use_racks = rack_aware(spec, members, topics)
    pool: list[Segment] = []
    if held_total < total:
        pool.extend(_unheld(counts, topics, kept_topics, kept_parts, held_total == 0))
    matches = RackMatches(spec)
    # over their quota (everyone's is q when r is 0), then under it
    over = map(q.__lt__, cnt) if not r else map(gt, cnt, quota)
    for i in list(compress(range(n), over)):
        excess = cnt[i] - quota[i]
        if use_racks:
            kept_topics[i], kept_parts[i] = _shed_by_rack(
                spec, members[i], kept_topics[i], kept_parts[i], excess, pool, matches
            )
        else:
            kept_topics[i], kept_parts[i] = _shed_tail(
                kept_topics[i], kept_parts[i], excess, pool
            )
        cnt[i] = quota[i]

    needy = list(compress(range(n), map(q.__gt__, cnt) if not r else map(lt, cnt, quota)))
    if use_racks:
        grants = _fill_by_rack(spec, members, needy, cnt, quota, pool)
    else:
        grants = _fill_runs(needy, cnt, quota, pool)

    # everyone keeps what is left of its own; then the members granted more
    _write(members, kept_topics, kept_parts, out_topics, out_parts)
    for i, got in grants.items():
        if not got:
            continue
        m = members[i]
        if not kept_topics[i] and len(got) == 1:
            out_topics[m] = (got[0][0],)
            out_parts[m] = (got[0][1],)
            continue
        assignment = dict(zip(kept_topics[i], kept_parts[i], strict=True))
        for t, parts in got:
            old = assignment.get(t)
            assignment[t] = parts if old is None else tuple(sorted(old + parts))
        out_topics[m] = tuple(assignment)
        out_parts[m] = tuple(assignment.values())


def _counts(parts: Sequence[Sequence[Partitions]]) -> list[int]:
    """Partitions per member: the lengths of its tuples, summed (most members hold one)."""
    return [len(ps[0]) if len(ps) == 1 else sum(map(len, ps)) for ps in parts]


def _write(
    members: Sequence[int],
    topics: list[Sequence[int]],
    parts: list[Sequence[Partitions]],
    out_topics: list[Sequence[int]],
    out_parts: list[Sequence[Partitions]],
) -> None:
    """``out_*[members[i]] = topics[i], parts[i]`` for every member (one slice assignment
    when the members are consecutive indexes, as in a group of one component)."""
    first, last = members[0], members[-1]
    if last - first + 1 == len(members):  # ascending and distinct: consecutive
        out_topics[first:last + 1] = topics
        out_parts[first:last + 1] = parts
        return
    for i, m in enumerate(members):
        out_topics[m] = topics[i]
        out_parts[m] = parts[i]


def _fresh(
    members: Sequence[int],
    topics: Sequence[int],
    counts: Sequence[int],
    q: int,
    r: int,
    out_topics: list[Sequence[int]],
    out_parts: list[Sequence[Partitions]],
) -> None:
    """Nobody holds anything: lay the partitions out in topic order, member after member."""
    runs: dict[tuple[int, int], Partitions] = {}
    live = [t for t in topics if counts[t]]
    k = 0
    t = live[0]
    n = counts[t]
    off = 0
    for idx, m in enumerate(members):
        need = q + 1 if idx < r else q
        if not need:
            break
        end = off + need
        if end <= n:
            tup = runs.get((off, end))
            if tup is None:
                tup = runs[off, end] = tuple(range(off, end))
            out_topics[m] = (t,)
            out_parts[m] = (tup,)
            off = end
            if off == n and k + 1 < len(live):
                k += 1
                t = live[k]
                n = counts[t]
                off = 0
            continue
        ts: list[int] = []
        ps: list[Partitions] = []
        while need:
            take = min(n - off, need)
            ts.append(t)
            ps.append(tuple(range(off, off + take)))
            need -= take
            off += take
            if off == n and k + 1 < len(live):
                k += 1
                t = live[k]
                n = counts[t]
                off = 0
        out_topics[m] = tuple(ts)
        out_parts[m] = tuple(ps)


def _fresh_by_rack(
    spec: AssignmentSpec,
    members: Sequence[int],
    topics: Sequence[int],
    q: int,
    r: int,
    out_topics: list[Sequence[int]],
    out_parts: list[Sequence[Partitions]],
) -> None:
    """Nobody holds anything and racks matter: decide on counts, then lay out runs.

    Partitions with the same replica racks form a *class*. A maximum flow from classes to
    the members' racks (:func:`class_rack_flow`) says how many partitions of each class the
    members of each rack take, so that as many partitions as possible go to a member on one
    of their replicas' racks; then each rack's members take their quotas from the classes'
    streams (topic order), and what is left over goes, in the same order, to whoever still
    needs partitions. Each member's share is first decided as slices of the streams (no
    partition is looked at); a class's partitions of one topic are one tuple computed once
    per distinct rack layout, so most members get whole, shared tuples. When every topic
    has the same layout (the usual case: same partition count and replica placement), a
    class's stream is that one tuple once per topic, and a slice of it is cut by arithmetic.
    """
    counts = spec.partition_counts
    partition_racks = spec.partition_racks
    streams: _Streams
    layouts = list(map(partition_racks.__getitem__, topics))
    only = layouts[0]
    if only is not None and len(set(map(id, layouts))) == 1:
        # one layout (so one partition count, not 0: there are partitions)
        streams = _LayoutStreams(tuple(topics), only)
    else:
        # topics by rack layout (the interned per-partition class tuple); None: no rack data
        by_layout: dict[int, list[int]] = {}
        layout_of: dict[int, tuple[int, ...] | None] = {}
        for t, prs in zip(topics, layouts, strict=True):
            if counts[t]:
                group = by_layout.get(id(prs))
                if group is None:
                    by_layout[id(prs)] = [t]
                    layout_of[id(prs)] = prs
                else:
                    group.append(t)
        streams = _PieceStreams(counts, by_layout, layout_of)
    sizes = streams.sizes
    n = len(members)
    need = [q + 1] * r + [q] * (n - r) if r else [q] * n
    racks = spec.member_racks
    on_rack: dict[int, list[int]] = {}
    demand: dict[int, int] = {}
    if q:
        for idx, m in enumerate(members):
            rack = racks[m]
            if rack != NO_RACK:
                group = on_rack.get(rack)
                if group is None:
                    on_rack[rack] = [idx]
                else:
                    group.append(idx)
        for rack, group in on_rack.items():
            demand[rack] = q * len(group) + sum(1 for idx in group if idx < r)
    else:
        for idx in range(r):
            rack = racks[members[idx]]
            if rack != NO_RACK:
                on_rack.setdefault(rack, []).append(idx)
                demand[rack] = demand.get(rack, 0) + 1
    supply = {k: size for k, size in sizes.items() if k >= 0}
    flow = class_rack_flow(supply, demand, spec.rack_sets) if demand else {}
    # supply now holds what the flow left unmatched; class -1 is never matched
    if -1 in sizes:
        supply[-1] = sizes[-1]
    # each member's slices of the class streams: (class, start, end), in the order taken;
    # a member's assignment is written when it gets its first slice, and again at the end
    # for the few that get more than one
    taken = dict.fromkeys(sizes, 0)
    first: list[tuple[int, int, int] | None] = [None] * n
    more: dict[int, list[tuple[int, int, int]]] = {}
    whole = streams.whole
    heads = dict.fromkeys(on_rack, 0)
    for (k, rack), amount in sorted(flow.items(), key=lambda e: (e[0][1], e[0][0])):
        receivers = on_rack[rack]
        head = heads[rack]
        lo = taken[k]
        while amount:
            idx = receivers[head]
            give = need[idx]
            if first[idx] is None and give <= amount and head + 1 < len(receivers):
                # a run of members that take all they need from this edge: the members
                # after the head have not been served yet, and all need q, or q + 1 for
                # the positions below r
                stop = head + amount // give
                if give > q:
                    stop = min(stop, bisect_left(receivers, r, head))
                run = receivers[head:stop]
                for i, ts, ps in zip(run, *streams.run(k, lo, give, len(run)), strict=True):
                    m = members[i]
                    out_topics[m] = ts
                    out_parts[m] = ps
                    need[i] = 0
                lo += give * len(run)
                amount -= give * len(run)
                head = stop
                continue
            if give > amount:
                give = amount
            hi = lo + give
            if first[idx] is None:
                first[idx] = (k, lo, hi)
                m = members[idx]
                out_topics[m], out_parts[m] = whole(k, lo, hi)
            else:
                more.setdefault(idx, []).append((k, lo, hi))
            lo = hi
            amount -= give
            need[idx] -= give
            if not need[idx]:
                head += 1
        taken[k] = lo
        heads[rack] = head
    rest = sorted(k for k, left in supply.items() if left)
    if rest:
        for idx in range(n):
            while need[idx]:
                k = rest[0]
                give = need[idx] if need[idx] < supply[k] else supply[k]
                lo = taken[k]
                hi = taken[k] = lo + give
                if first[idx] is None:
                    first[idx] = (k, lo, hi)
                    m = members[idx]
                    out_topics[m], out_parts[m] = whole(k, lo, hi)
                else:
                    more.setdefault(idx, []).append((k, lo, hi))
                need[idx] -= give
                supply[k] -= give
                if not supply[k]:
                    rest.pop(0)
    cut = streams.cut
    for idx, extra in more.items():
        slice_ = first[idx]
        assert slice_ is not None
        m = members[idx]
        got: list[tuple[int, Partitions]] = []
        for k, lo, hi in (slice_, *extra):
            cut(k, lo, hi, got)
        got.sort()
        by_topic: dict[int, Partitions] = {}
        for t, piece in got:  # one topic from two classes: merge
            old = by_topic.get(t)
            by_topic[t] = piece if old is None else tuple(sorted((*old, *piece)))
        out_topics[m], out_parts[m] = tuple(by_topic), tuple(by_topic.values())


class _Streams(ABC):
    """Per rack class (``-1``: partitions without rack data) the stream of its partitions
    in topic order, as pieces ``(topic, partitions of the class in that topic)``."""

    __slots__ = ()

    sizes: dict[int, int]
    """Partitions per class stream."""

    @abstractmethod
    def cut(self, k: int, lo: int, hi: int, got: list[tuple[int, Partitions]]) -> None:
        """Append the pieces of partitions ``lo..hi-1`` of class ``k``'s stream to ``got``."""

    def whole(self, k: int, lo: int, hi: int) -> tuple[tuple[int, ...], tuple[Partitions, ...]]:
        """A member's whole assignment when it is that one slice: topics and partitions."""
        got: list[tuple[int, Partitions]] = []
        self.cut(k, lo, hi, got)
        ts, ps = zip(*got, strict=True)
        return ts, ps

    def run(self, k: int, lo: int, size: int, count: int
            ) -> tuple[Sequence[tuple[int, ...]], Sequence[tuple[Partitions, ...]]]:
        """The whole assignments of ``count`` members taking ``size`` partitions each, one
        after the other, from partition ``lo`` of class ``k``'s stream: their topics, their
        partitions."""
        whole = self.whole
        got = [whole(k, start, start + size) for start in range(lo, lo + size * count, size)]
        return [ts for ts, _ in got], [ps for _, ps in got]


class _LayoutStreams(_Streams):
    """Every topic has the same rack layout: class ``k``'s stream is the class's tuple of
    partition numbers once per topic, and slices are cut by arithmetic."""

    __slots__ = ("parts", "sizes", "topics")

    def __init__(self, topics: tuple[int, ...], layout: tuple[int, ...]) -> None:
        self.topics = topics
        self.parts = {k: tuple(ps) for k, ps in partitions_by_class(layout).items()}
        self.sizes = {k: len(ps) * len(topics) for k, ps in self.parts.items()}

    def whole(self, k: int, lo: int, hi: int) -> tuple[tuple[int, ...], tuple[Partitions, ...]]:
        parts = self.parts[k]
        width = len(parts)
        i = lo // width
        a = lo - i * width
        j = hi // width
        b = hi - j * width
        topics = self.topics
        if i == j:
            return (topics[i],), (parts[a:b],)
        if not a and not b:
            return topics[i:j], (parts,) * (j - i)
        ps = [parts] * (j - i)
        if a:
            ps[0] = parts[a:]
        if not b:
            return topics[i:j], tuple(ps)
        ps.append(parts[:b])
        return topics[i:j + 1], tuple(ps)

    def cut(self, k: int, lo: int, hi: int, got: list[tuple[int, Partitions]]) -> None:
        got.extend(zip(*self.whole(k, lo, hi), strict=True))

    def run(self, k: int, lo: int, size: int, count: int
            ) -> tuple[Sequence[tuple[int, ...]], Sequence[tuple[Partitions, ...]]]:
        parts = self.parts[k]
        width = len(parts)
        if lo % width or size % width:
            return super().run(k, lo, size, count)
        step = size // width
        start = lo // width
        topics = self.topics
        return ([topics[i:i + step] for i in range(start, start + step * count, step)],
                ((parts,) * step,) * count)


class _PieceStreams(_Streams):
    """Topics of several rack layouts (or some without rack data): the streams as lists of
    pieces, cut by bisection on their running lengths."""

    __slots__ = ("ends", "sizes", "streams")

    def __init__(self, counts: Sequence[int], by_layout: dict[int, list[int]],
                 layout_of: dict[int, tuple[int, ...] | None]) -> None:
        streams: dict[int, list[tuple[int, Partitions]]] = {}
        for key, ts in by_layout.items():
            prs = layout_of[key]
            if prs is None:
                streams.setdefault(-1, []).extend((t, tuple(range(counts[t]))) for t in ts)
                continue
            for k, parts in partitions_by_class(prs).items():
                shared = tuple(parts)
                streams.setdefault(k, []).extend([(t, shared) for t in ts])
        if len(by_layout) > 1:
            for stream in streams.values():
                stream.sort()
        self.streams = streams
        self.ends = {k: list(accumulate(map(len, map(itemgetter(1), stream))))
                     for k, stream in streams.items()}
        self.sizes = {k: e[-1] for k, e in self.ends.items()}

    def cut(self, k: int, lo: int, hi: int, got: list[tuple[int, Partitions]]) -> None:
        stream = self.streams[k]
        end = self.ends[k]
        i = bisect_right(end, lo)  # the piece holding partition number lo
        j = bisect_left(end, hi)  # the piece holding partition number hi - 1
        start = lo - (end[i - 1] if i else 0)
        if i == j:
            t, parts = stream[i]
            stop = hi - (end[i - 1] if i else 0)
            got.append((t, parts if not start and stop == len(parts) else parts[start:stop]))
            return
        t, parts = stream[i]
        got.append((t, parts if not start else parts[start:]))
        got.extend(stream[i + 1:j])
        t, parts = stream[j]
        stop = hi - end[j - 1]
        got.append((t, parts if stop == len(parts) else parts[:stop]))


def _quotas(cnt: list[int], q: int, r: int) -> list[int]:
    """Per-member quota: ``q``, plus one for ``r`` members, first those holding more than ``q``
    (in member order), then the first of the others."""
    quota = [q] * len(cnt)
    if r:
        over = list(islice(compress(count(), map(q.__lt__, cnt)), r))
        for i in over:
            quota[i] = q + 1
        if len(over) < r:
            for i in islice(compress(count(), map(q.__ge__, cnt)), r - len(over)):
                quota[i] = q + 1
    return quota


def _unheld(
    counts: Sequence[int],
    topics: Sequence[int],
    kept_topics: list[Sequence[int]],
    kept_parts: list[Sequence[Partitions]],
    nothing_held: bool,
) -> list[Segment]:
    if nothing_held:
        return [(t, range(counts[t])) for t in topics if counts[t]]
    held: dict[int, list[Partitions]] = {}
    for ts, ps in zip(kept_topics, kept_parts, strict=True):
        for t, p in zip(ts, ps, strict=True):
            held.setdefault(t, []).append(p)
    segments: list[Segment] = []
    for t in topics:
        n = counts[t]
        parts = held.get(t)
        if parts is None:
            if n:
                segments.append((t, range(n)))
            continue
        size = sum(map(len, parts))
        if size == n:
            continue
        taken: set[int] = set()
        for p in parts:
            taken.update(p)
        segments.append((t, [p for p in range(n) if p not in taken]))
    return segments


def _shed_tail(
    ts: Sequence[int], ps: Sequence[Partitions], excess: int, pool: list[Segment]
) -> tuple[Sequence[int], Sequence[Partitions]]:
    last = ps[-1]
    if excess < len(last):  # the usual case: a few of the last topic's partitions
        pool.append((ts[-1], last[-excess:]))
        return ts, (*ps[:-1], last[:-excess])
    topics, parts = list(ts), list(ps)
    while excess:
        t, p = topics[-1], parts[-1]
        if len(p) <= excess:
            pool.append((t, p))
            topics.pop()
            parts.pop()
            excess -= len(p)
        else:
            pool.append((t, p[-excess:]))
            parts[-1] = p[:-excess]
            excess = 0
    return topics, parts


def _shed_by_rack(
    spec: AssignmentSpec,
    member: int,
    ts: Sequence[int],
    ps: Sequence[Partitions],
    excess: int,
    pool: list[Segment],
    matches: RackMatches,
) -> tuple[Sequence[int], Sequence[Partitions]]:
    """Shed mismatched partitions first, then from the tail."""
    rack = spec.member_racks[member]
    topics: list[int] = []
    parts: list[Partitions] = []
    for t, p in zip(ts, ps, strict=True):
        if excess:
            ok = matches.of(t, rack)
            if ok is not None and not ok.issuperset(p):
                good = []
                for x in p:
                    if excess and x not in ok:
                        pool.append((t, (x,)))
                        excess -= 1
                    else:
                        good.append(x)
                if good:
                    topics.append(t)
                    parts.append(tuple(good))
                continue
        topics.append(t)
        parts.append(p)
    if excess:
        return _shed_tail(topics, parts, excess, pool)
    return topics, parts


def _fill_runs(
    needy: list[int], cnt: list[int], quota: list[int], pool: list[Segment]
) -> dict[int, list[tuple[int, Partitions]]]:
    """Hand out the pool in order, as contiguous runs, to the members under quota."""
    grants: dict[int, list[tuple[int, Partitions]]] = {}
    cache: dict[range, Partitions] = {}
    seg = 0
    off = 0
    for i in needy:
        need = quota[i] - cnt[i]
        pieces: list[tuple[int, Partitions]] = []
        while need:
            t, seq = pool[seg]
            take = min(len(seq) - off, need)
            chunk = seq[off:off + take]
            if isinstance(chunk, range):
                tup = cache.get(chunk)
                if tup is None:
                    tup = cache[chunk] = tuple(chunk)
            else:
                tup = tuple(chunk)
            pieces.append((t, tup))
            need -= take
            off += take
            if off == len(seq):
                seg += 1
                off = 0
        grants[i] = _merge(pieces)
    return grants


def _merge(pieces: list[tuple[int, Partitions]]) -> list[tuple[int, Partitions]]:
    if len(pieces) < 2:
        return pieces
    by_topic: dict[int, Partitions] = {}
    joined: list[int] = []  # the topics of several pieces (each piece is ascending)
    for t, p in pieces:
        old = by_topic.get(t)
        if old is None:
            by_topic[t] = p
        else:
            by_topic[t] = old + p
            joined.append(t)
    for t in joined:
        p = by_topic[t]
        if not _ascending(p):
            by_topic[t] = tuple(sorted(p))
    return list(by_topic.items())


def _ascending(p: Partitions) -> bool:
    return all(a < b for a, b in pairwise(p))


def _fill_by_rack(
    spec: AssignmentSpec,
    members: Sequence[int],
    needy: list[int],
    cnt: list[int],
    quota: list[int],
    pool: list[Segment],
) -> dict[int, list[tuple[int, Partitions]]]:
    """Give each free partition to a needy member on one of its replicas' racks if any."""
    need = {i: quota[i] - cnt[i] for i in needy}
    queues: dict[int, list[int]] = {}
    for i in needy:
        rack = spec.member_racks[members[i]]
        if rack != NO_RACK:
            queues.setdefault(rack, []).append(i)
    heads = dict.fromkeys(queues, 0)
    rack_lists = [sorted(s) for s in spec.rack_sets]
    partition_racks = spec.partition_racks
    got: dict[int, list[tuple[int, int]]] = {i: [] for i in needy}
    leftover: list[tuple[int, int]] = []
    for t, seq in pool:
        prs = partition_racks[t]
        for p in seq:
            chosen = -1
            if prs is not None:
                for rack in rack_lists[prs[p]]:
                    queue = queues.get(rack)
                    if queue is not None and heads[rack] < len(queue):
                        chosen = queue[heads[rack]]
                        need[chosen] -= 1
                        if not need[chosen]:
                            heads[rack] += 1
                        break
            if chosen < 0:
                leftover.append((t, p))
            else:
                got[chosen].append((t, p))
    k = 0
    for i in needy:
        while need[i]:
            got[i].append(leftover[k])
            k += 1
            need[i] -= 1
    grants: dict[int, list[tuple[int, Partitions]]] = {}
    for i, pairs in got.items():
        by_topic: dict[int, list[int]] = {}
        for t, p in pairs:
            by_topic.setdefault(t, []).append(p)
        grants[i] = [(t, tuple(sorted(ps))) for t, ps in by_topic.items()]
    return grants
