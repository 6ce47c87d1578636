"""Uniform assignment of a component whose members subscribe to different, overlapping topics.

The result is balanced as tightly as the subscriptions allow: no chain of hand-overs (member
``a`` gives a partition of a topic ``b`` subscribes to to ``b``, ``b`` one to ``c``, ...)
leads from a member to one with two partitions fewer. That is the most balanced load vector
there is (the sum of squared loads is minimal); in particular no holder of a topic has more
than one partition above any subscriber of that topic, and when the subscriptions allow it
every member has ``q`` or ``q + 1`` partitions (``q = partitions // members``). It is also
sticky: a partition that moved away from a member still subscribed to it could not go back
without breaking that balance.

The work is done on counts per (member, topic), in proportion to what is to change, and
partition numbers are chosen only at the end:

1. keep every current partition whose topic the holder still subscribes to;
2. members below ``q`` take free partitions, whole runs of a topic at a time, from the
   topics they subscribe to (each member starts looking at its own place in its
   subscription, so that members do not all empty the same topics first); with racks,
   first only partitions with a replica on the member's rack;
3. a member still below ``q`` gets partitions along chains, found by one breadth-first
   search backwards from all such members at once over "holds a topic the next one
   subscribes to", from members that can take free partitions; free partitions left then
   go one more to members at ``q``, then level by level to the least loaded members that
   can take them; members still below ``q`` pull along chains from members above
   ``q + 1``, then above ``q``;
4. if two members are still more than one apart (parts of the group differ in density, so
   ``q`` is no target for everybody): chains from members above the middle of the loads to
   members below it, then from members two or more above the least loaded ones, until no
   chain is left (the members a search reaches without finding one are final). If that
   takes more than a few searches, it starts again from step 1 the robust way: free
   partitions topic by topic to their least loaded subscribers, moves inside each topic
   until no holder is two above a subscriber, then the chains;
5. a partition that moved from ``o`` to ``n`` of a topic where ``n`` ended above ``o`` goes
   back (the loads swap, the balance stays the same): no move is needless;
6. partition numbers, per changed topic: members giving partitions up give their
   rack-mismatched ones first, then their highest; members receiving take partitions with
   a replica on their rack first (as many as possible), then contiguous runs.

Members and topics are dense indexes; loads, counts and holders are lists and dicts keyed
by them. Members whose assignment did not change keep their current tuples. At 1,000
members x 1,000 topics x 50 partitions, member ``i`` subscribed to 200 topics from ``7i``,
this takes about 9 ms from scratch and 5 ms when one member joins.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from itertools import chain, compress, zip_longest

from assignors.racks import partitions_by_class, rack_aware, split_by_rack
from assignors.spec import NO_RACK, AssignmentSpec, Partitions
from assignors.structure import Component

_SPREAD = 2654435761
"""Knuth's multiplicative hash constant: where member ``i`` starts looking for free
partitions in its subscription."""

_IMPROVE_BUDGET = 8
"""Searches step 4 may take before the targets are given up for the topic-by-topic way."""

Hop = tuple[int, int]
"""(member partitions go to, topic): where a member found by a chain search gives."""


def assign_heterogeneous(
    spec: AssignmentSpec,
    comp: Component,
    out_topics: list[Sequence[int]],
    out_parts: list[Sequence[Partitions]],
) -> None:
    """Assign the topics of ``comp`` to its members (into ``out_topics``/``out_parts``)."""
    solver = _Solver(spec, comp)
    solver.solve()
    solver.write(out_topics, out_parts)


class _Solver:
    """State of one component's assignment; ``i`` is a member's position in ``comp``."""

    def __init__(self, spec: AssignmentSpec, comp: Component) -> None:
        self.spec = spec
        self.comp = comp
        members = comp.members
        self.n = n = len(members)
        subscriptions = spec.subscriptions
        member_subs = spec.member_subscriptions
        self.subs: list[tuple[int, ...]] = [subscriptions[member_subs[m]] for m in members]
        counts = spec.partition_counts
        # free[t]: partitions of topic t in the pool (indexed by the spec's topic index)
        self.free: list[int] = list(counts)
        self.load: list[int] = [0] * n
        # x[i][t]: partitions of t member i has now; hold[t][i]: the same, by topic
        self.x: list[dict[int, int]] = [{} for _ in range(n)]
        self.hold: dict[int, dict[int, int]] = {}
        # what each member keeps of its current assignment (subscribed topics only)
        self.kept: list[dict[int, Partitions]] = [{}] * n
        self.kept_hold: dict[int, dict[int, int]] = {}
        self.clean: list[bool] = [True] * n
        """Members whose current assignment is all subscribed (kept whole)."""
        self.touched: set[int] = set()
        """Topics whose counts changed or that had free partitions handed out."""
        self.plan: dict[int, _Fresh] = {}
        """Topic nobody held -> what members took of it in :meth:`_fill_matched`."""
        self.matched = False
        """:meth:`_fill_matched` handed out partitions on members' racks."""
        self.free_set: set[int] = set()
        """Topics with free partitions, while chains pull from the pool."""
        self.no_free: set[int] = set()
        """Members known to subscribe to no topic of ``free_set`` (which only shrinks)."""
        self.racks: list[int] = [spec.member_racks[m] for m in members]
        self.use_racks = rack_aware(spec, members, comp.topics)
        self.total = sum(map(counts.__getitem__, comp.topics))
        self.q = self.total // n
        self._keep()

    # -- counts ------------------------------------------------------------------------

    def _keep(self) -> None:
        spec = self.spec
        cur_topics = spec.current_topics
        cur_parts = spec.current_partitions
        free = self.free
        load = self.load
        x = self.x
        kept = self.kept
        kept_hold = self.kept_hold
        held = 0
        for i, m in enumerate(self.comp.members):
            ts = cur_topics[m]
            if not ts:
                continue
            sub = self.subs[i]
            ps = cur_parts[m]
            mine: dict[int, Partitions] = {}
            width = len(sub)
            for t, p in zip(ts, ps, strict=True):
                j = bisect_left(sub, t)
                if j < width and sub[j] == t:
                    mine[t] = p
            if len(mine) != len(ts):
                self.clean[i] = False
            if not mine:
                continue
            kept[i] = mine
            counts_i = {t: len(p) for t, p in mine.items()}
            x[i] = counts_i
            total = 0
            for t, c in counts_i.items():
                free[t] -= c
                total += c
                holders = kept_hold.get(t)
                if holders is None:
                    kept_hold[t] = {i: c}
                else:
                    holders[i] = c
            load[i] = total
            held += total
        self.hold = {t: dict(h) for t, h in kept_hold.items()}
        self.pool = self.total - held

    def _add(self, i: int, t: int, c: int) -> None:
        """Give ``c`` partitions of ``t`` to member ``i`` (negative: take them away)."""
        xi = self.x[i]
        now = xi.get(t, 0) + c
        holders = self.hold.get(t)
        if holders is None:
            holders = self.hold[t] = {}
        if now:
            xi[t] = now
            holders[i] = now
        else:
            del xi[t]
            del holders[i]
        self.load[i] += c
        self.touched.add(t)

    def _take_free(self, i: int, t: int, c: int) -> None:
        self.free[t] -= c
        if not self.free[t]:
            self.free_set.discard(t)
        self.pool -= c
        self._add(i, t, c)

    def solve(self) -> None:
        q = self.q
        load = self.load
        # 2. fill up to q from the pool (partitions on the member's rack first)
        if self.pool and self.use_racks:
            self._fill_matched(q)
        if self.pool:
            self._fill(q)
        # 3. chains to members still below q, from members that can take free partitions
        if self.pool and min(load) < q:
            self._chains(0)
        # then one more for members at q while free partitions are left, then higher
        if self.pool:
            self._fill_extras()
        if self.pool:
            self._raise()
        # chains to members still below q, from members above q + 1, then above q
        if min(load) < q and max(load) > q + 1:
            self._chains(q + 1)
        if min(load) < q and max(load) > q:
            self._chains(q)
        # 4. whatever the targets could not settle: chains between the most and the least
        # loaded; if that takes long (parts of the group of very different densities, where
        # the common target q means little), start again from what was kept: partitions
        # topic by topic to their least loaded subscribers, balanced topic by topic, then
        # the chains again
        if max(load) - min(load) > 1 and not self._improve(_IMPROVE_BUDGET):
            self._reset()
            self._by_topic()
            self._improve(None)
        # 5. no needless move
        self._return_moves()

    def _fill(self, cap: int, order: Sequence[int] | None = None) -> None:
        """Members below ``cap`` (all, or ``order``, in that order) take free partitions of
        their topics, up to ``cap``."""
        free = self.free
        load = self.load
        subs = self.subs
        x = self.x
        hold = self.hold
        touched = self.touched
        pool = self.pool
        if order is None:
            order = range(self.n)
            if self.matched:
                # after the rack-matched pass: the least loaded first
                order = sorted(order, key=load.__getitem__)
        for i in order:
            need = cap - load[i]
            if need <= 0:
                continue
            sub = subs[i]
            if len(sub) > 1:
                # start at a different place for every member, so that members do not all
                # empty the same topics first and leave the last ones with nothing
                k = (i * _SPREAD) % len(sub)
                sub = sub[k:] + sub[:k]
            xi = x[i]
            got = 0
            for t in compress(sub, map(free.__getitem__, sub)):
                c = free[t]
                if c > need - got:
                    c = need - got
                free[t] -= c
                xi[t] = now = xi.get(t, 0) + c
                holders = hold.get(t)
                if holders is None:
                    hold[t] = {i: now}
                else:
                    holders[i] = now
                touched.add(t)
                got += c
                if got == need:
                    break
            if got:
                load[i] += got
                pool -= got
                if not pool:
                    break
        self.pool = pool

    def _fill_matched(self, cap: int) -> None:
        """Like :meth:`_fill`, but members with a rack take only free partitions with a
        replica on their rack (counted per rack class: partitions with the same replica
        racks), from the classes on the fewest racks first.

        Of a topic nobody held, what a member takes is recorded as pieces of the classes
        (the next partitions of each, in order; ``self.plan``, see :data:`_Fresh`): the
        same pieces recur from topic to topic of one rack layout, so :meth:`_materialize`
        makes their tuples once. The free sizes of such a topic's classes are a state
        shared by the topics of its layout, and what a member on a rack needing so many
        takes from a state is worked out once (the same steps recur from topic to topic);
        its holders are written once at the end, from the record."""
        spec = self.spec
        prs_all = spec.partition_racks
        rack_sets = spec.rack_sets
        racks = self.racks
        free = self.free
        # per topic somebody held, with free partitions and rack data: how many free
        # partitions each of its classes has and by rack the classes with a replica on
        # that rack (see _template)
        entries: list[tuple[list[int], dict[int, list[tuple[int, int, int]]]] | None] = [
            None] * spec.topic_count
        # per topic nobody held, with rack data: its _Fresh record and its state
        records: list[_Fresh | None] = [None] * spec.topic_count
        at: list[int] = [0] * spec.topic_count
        fresh_topics: list[int] = []
        # per distinct partition-racks tuple: its classes' sizes and the classes by rack,
        # the partitions of each class, and the tuples made of them
        templates: dict[int, tuple[list[int], dict[int, list[tuple[int, int, int]]],
                                   dict[int, list[int]], dict[int, Partitions]]] = {}
        # states: (layout, free sizes of its classes), interned; by rack, steps: state
        # times ``stride`` plus need -> (state after, taken, the pieces taken as one int)
        states: list[tuple[int, tuple[int, ...]]] = []
        state_ids: dict[tuple[int, tuple[int, ...]], int] = {}
        steps_by_rack: dict[int, dict[int, tuple[int, int, int]]] = {}
        stride = cap + 1

        def intern(layout: int, sizes: tuple[int, ...]) -> int:
            key = (layout, sizes)
            found = state_ids.get(key)
            if found is None:
                found = state_ids[key] = len(states)
                states.append(key)
            return found

        def step(state: int, rack: int, need: int, base: int, span: int) -> tuple[int, int, int]:
            """What a member on ``rack`` needing ``need`` (at most ``cap``) takes of a topic
            nobody held in ``state``: from its classes on the rack, fewest racks first."""
            layout, free_sizes = states[state]
            sizes = list(free_sizes)
            left = need
            key = 0
            for idx, k_base, size in templates[layout][1].get(rack, ()):
                a = sizes[idx]
                if a:
                    d = a if a < left else left
                    sizes[idx] = a - d
                    start = size - a
                    key = key * span + (k_base + start) * base + start + d
                    left -= d
                    if not left:
                        break
            found = steps_by_rack[rack][state * stride + need] = (
                intern(layout, tuple(sizes)), need - left, key)
            return found

        kept_hold = self.kept_hold
        plan = self.plan
        for t in self._free_topics():
            prs = prs_all[t]
            if prs is None:
                continue
            if t in kept_hold:
                kept = self.kept
                unheld = set(range(len(prs))).difference(*(kept[i][t] for i in kept_hold[t]))
                entries[t] = _template(Counter(prs[p] for p in unheld), rack_sets, 0)
                continue
            base = len(prs) + 1
            cached = templates.get(id(prs))
            if cached is None:
                cached = templates[id(prs)] = (*_template(Counter(prs), rack_sets, base),
                                               partitions_by_class(prs), {})
            records[t] = plan[t] = (cached[2], cached[3], {}, {}, base,
                                    len(rack_sets) * base * base)
            at[t] = intern(id(prs), tuple(cached[0]))
            fresh_topics.append(t)
        load = self.load
        subs = self.subs
        x = self.x
        hold = self.hold
        touched = self.touched
        pool = self.pool
        matched = False
        synced: set[int] = set()
        """Topics nobody held whose holders are written as they change (take_any took some
        of them): the others' are written from their records at the end."""

        def take_any(i: int, xi: dict[int, int], t: int, c: int) -> None:
            """Member ``i`` takes ``c`` free partitions of ``t``, from the classes on the
            most racks first (each matches the fewest others' needs)."""
            record = records[t]
            sizes: list[int] | None = None
            if record is not None:
                layout, free_sizes = states[at[t]]
                sizes = list(free_sizes)
                if t not in synced:
                    synced.add(t)
                    hold[t] = dict(record[2])
            else:
                entry = entries[t]
                if entry is not None:
                    sizes = entry[0]
            if sizes is not None:
                left = c
                for idx in range(len(sizes) - 1, -1, -1):
                    a = sizes[idx]
                    if a:
                        d = a if a < left else left
                        sizes[idx] = a - d
                        left -= d
                        if not left:
                            break
                if record is not None:
                    at[t] = intern(layout, tuple(sizes))
            free[t] -= c
            xi[t] = now = xi.get(t, 0) + c
            holders = hold.get(t)
            if holders is None:
                hold[t] = {i: now}
            else:
                holders[i] = now
            touched.add(t)

        for i in range(self.n):
            rack = racks[i]
            need = cap - load[i]
            if need <= 0 or rack == NO_RACK:
                continue
            sub = subs[i]
            if len(sub) > 1:
                k = (i * _SPREAD) % len(sub)
                sub = sub[k:] + sub[:k]
            xi = x[i]
            left = need
            steps = steps_by_rack.get(rack)
            if steps is None:
                steps = steps_by_rack[rack] = {}
            for t in compress(sub, map(free.__getitem__, sub)):
                # the free partitions of t on the member's rack, from its classes there,
                # fewest racks first
                record = records[t]
                if record is not None:
                    # nobody held t: i holds none of it yet
                    state = at[t]
                    found = steps.get(state * stride + left)
                    if found is None:
                        found = step(state, rack, left, record[4], record[5])
                    state, c, key = found
                    if not c:
                        continue
                    at[t] = state
                    record[2][i] = c
                    record[3][i] = key
                    free[t] -= c
                    xi[t] = c
                    if synced and t in synced:
                        hold[t][i] = c
                    left -= c
                    if not left:
                        break
                    continue
                entry = entries[t]
                if entry is None:
                    continue
                sizes, match = entry
                mine = match.get(rack)
                if mine is None:
                    continue
                before = left
                for idx, _, _ in mine:
                    a = sizes[idx]
                    if a:
                        d = a if a < left else left
                        sizes[idx] = a - d
                        left -= d
                        if not left:
                            break
                if left == before:
                    continue
                c = before - left
                matched = True
                free[t] -= c
                xi[t] = now = xi.get(t, 0) + c
                holders = hold.get(t)
                if holders is None:
                    hold[t] = {i: now}
                else:
                    holders[i] = now
                touched.add(t)
                if not left:
                    break
            if left:
                # nothing on its rack left in its topics: any free partition
                for t in compress(sub, map(free.__getitem__, sub)):
                    c = min(free[t], left)
                    take_any(i, xi, t, c)
                    left -= c
                    if not left:
                        break
            got = need - left
            load[i] += got
            pool -= got
            if not pool:
                break
        for t in fresh_topics:
            taken = plan[t][2]
            if taken:
                matched = True
                touched.add(t)
                if t not in synced:
                    hold[t] = dict(taken)
        self.pool = pool
        self.matched = matched

    def _free_topics(self) -> list[int]:
        topics = self.comp.topics
        return list(compress(topics, map(self.free.__getitem__, topics)))

    def _fill_extras(self) -> None:
        """Members at ``q`` take one more free partition each (member by member, or topic by
        topic when few topics have free partitions left)."""
        q = self.q
        load = self.load
        free = self.free
        topics = self._free_topics()
        if len(topics) <= 8:
            # few topics left: look for their subscribers rather than through every member
            for t in topics:
                for i in self._subscribers(t):
                    if load[i] == q and free[t]:
                        self._take_free(i, t, 1)
                if not self.pool:
                    return
            return
        subs = self.subs
        for i in range(self.n):
            if load[i] != q:
                continue
            sub = subs[i]
            t = next(compress(sub, map(free.__getitem__, sub)), -1)
            if t >= 0:
                self._take_free(i, t, 1)
                if not self.pool:
                    return

    def _subscribers(self, t: int) -> list[int]:
        """Members subscribed to ``t``, ascending (a scan: for the few topics that need it)."""
        result = []
        for i, sub in enumerate(self.subs):
            j = bisect_left(sub, t)
            if j < len(sub) and sub[j] == t:
                result.append(i)
        return result

    def _raise(self) -> None:
        """Free partitions left when every member that can take one directly has ``q + 1``
        (some topics have more partitions than the rest of the group can balance): the
        members subscribed to them take more, level by level, the least loaded first."""
        load = self.load
        subs = self.subs
        while self.pool:
            free_set = set(self._free_topics())
            takers = [i for i in range(self.n) if not free_set.isdisjoint(subs[i])]
            if not takers:
                break
            takers.sort(key=lambda i: (load[i], i))
            cap = load[takers[0]] + max(1, -(-self.pool // len(takers)))
            before = self.pool
            self._fill(cap, takers)
            if self.pool == before:
                break
        if self.pool:
            self._place_leftovers()

    def _place_leftovers(self) -> None:
        """Free partitions nobody below ``q + 1`` could take: to their least loaded
        subscribers (step 4 evens out what this unbalances)."""
        for t in self._free_topics():
            self._water_fill(t, self._subscribers(t))

    def _water_fill(self, t: int, subscribers: list[int]) -> None:
        """The free partitions of ``t`` to ``subscribers``, as if one at a time to the least
        loaded (then the first), in one step per subscriber."""
        load = self.load
        order = sorted(subscribers, key=lambda j: (load[j], j))
        units = self.free[t]
        # raise the least loaded (order[:k]) to a common level while the units go round
        level = load[order[0]]
        k = 1
        while True:
            while k < len(order) and load[order[k]] <= level:
                k += 1
            step = units // k
            if k < len(order):
                step = min(step, load[order[k]] - level)
            if not step:
                break
            level += step
            units -= step * k
        gets = {j: level - load[j] for j in order[:k]}
        for j in sorted(order[:k])[:units]:  # fewer than k left: one each, in order
            gets[j] += 1
        for j, give in gets.items():
            if give:
                self._take_free(j, t, give)

    # -- chains ------------------------------------------------------------------------

    def _chains(self, above: int) -> None:
        """Bring the members below ``q`` up to ``q`` along hand-over chains, if any, from
        members subscribed to a topic with free partitions (``above == 0``) or from members
        above ``above``."""
        q = self.q
        load = self.load
        self.free_set = set(self._free_topics())
        self.no_free = set()
        while above or self.pool:
            needy = [v for v in range(self.n) if load[v] < q]
            if not needy or not self._augment(needy, above, q, set()):
                return

    def _augment(self, needy: list[int], above: int, target: int, frozen: set[int]) -> int:
        """One breadth-first search backwards from all of ``needy`` at once, over members
        not in ``frozen``; partitions are pulled along the chains from every source it meets
        (see :meth:`_chains`) to the member a chain ends at, while that member is below
        ``target``. Returns how many arrived; ``frozen`` gets every member reached if none.

        Each member reached holds a topic the member it was reached from subscribes to; it
        gives that member partitions of that topic, or of any other topic it holds that the
        member subscribes to. A member the search started from that has what it needs
        passes on what reaches it to one that does not, if it holds a topic that one
        subscribes to.
        """
        q = target
        load = self.load
        subs = self.subs
        hold = self.hold
        free_set = self.free_set
        no_free = self.no_free
        parent: dict[int, Hop | None] = dict.fromkeys(needy)
        dead: set[int] = set()  # members no chain can go through any more
        waiting = dict.fromkeys(needy)  # the members the search started from still below q
        pending = {t for t, holders in hold.items() if holders}  # topics not yet expanded
        frontier = needy
        moved = 0
        while frontier and pending:
            # each member of the frontier takes (up to its share of) the topics it can
            # receive that nobody took yet: their holders are the next level, reached from
            # it. The share spreads the search over the frontier, so that every member it
            # started from gets chains of its own; the members reached are then put in turn
            # by the member they were reached from, for the same reason one level down.
            share = -(-len(pending) // len(frontier))
            by_parent: list[list[int]] = []
            capped: list[int] = []  # members that left topics for later: they search again
            for w in frontier:
                sub = subs[w]
                width = len(sub)
                if 4 * len(pending) < width:
                    hits = sorted(t for t in pending
                                  if (j := bisect_left(sub, t)) < width and sub[j] == t)
                else:
                    hits = sorted(pending.intersection(sub))
                if not hits:
                    continue
                if len(hits) > share:
                    hits = hits[:share]
                    capped.append(w)
                pending.difference_update(hits)
                children: list[int] = []
                for t in hits:
                    for h in hold[t]:
                        if h not in parent and h not in frozen:
                            parent[h] = (w, t)
                            children.append(h)
                if children:
                    by_parent.append(children)
                if not pending:
                    break
            reached: list[int] = []
            for turn in zip_longest(*by_parent):
                reached.extend(h for h in turn if h is not None)
            for h in reached:
                if above:
                    if load[h] <= above:
                        continue
                elif h in no_free:
                    continue
                else:
                    hsub = subs[h]
                    if len(free_set) < 8:
                        hwidth = len(hsub)
                        hit = any((j := bisect_left(hsub, t)) < hwidth and hsub[j] == t
                                  for t in free_set)
                    else:
                        hit = not free_set.isdisjoint(hsub)
                    if not hit:
                        no_free.add(h)
                        continue
                path = self._route(h, parent, dead)
                if path is None:
                    continue
                root = path[-1][1]
                moved += self._pull(h, path, above, q - load[root])
                if not above and not self.pool:
                    return moved
                if load[root] >= q:
                    del waiting[root]
                    if not waiting:
                        return moved
                    self._relink(root, parent, waiting, dead)
            frontier = [h for h in chain(capped, reached) if h not in dead]
        if not moved:
            frozen.update(parent)
        return moved

    def _relink(
        self, root: int, parent: dict[int, Hop | None], waiting: dict[int, None],
        dead: set[int],
    ) -> None:
        """``root`` has what it needs: chains that reach it go on to a member still waiting
        that subscribes to a topic ``root`` holds (the first such), or nowhere."""
        xr = self.x[root]
        subs = self.subs
        for w in waiting:
            sub = subs[w]
            width = len(sub)
            for t in xr:
                if (j := bisect_left(sub, t)) < width and sub[j] == t:
                    parent[root] = (w, t)
                    return
        dead.add(root)

    def _route(
        self, h: int, parent: dict[int, Hop | None], dead: set[int],
    ) -> list[tuple[int, int, list[tuple[int, int]]]] | None:
        """A chain from ``h`` to a member the search started from: (giver, receiver, the
        giver's (topic, count) the receiver subscribes to, the search's topic first), every
        giver with something to give; or ``None``. Members found to lead nowhere are added
        to ``dead``."""
        chain: list[tuple[int, int, list[tuple[int, int]]]] = []
        a = h
        while True:
            hop = parent[a]
            if hop is None:
                return chain
            b, t = hop
            offer = self._offer(a, b, t) if b not in dead else None
            if offer:
                chain.append((a, b, offer))
                a = b
                continue
            dead.add(a)
            if a == h:
                return None
            chain.clear()
            a = h

    def _offer(self, a: int, b: int, t: int) -> list[tuple[int, int]]:
        """What ``a`` holds of the topics ``b`` subscribes to: ``t`` (which it does) first."""
        xa = self.x[a]
        first = xa.get(t, 0)
        offer = [(t, first)] if first else []
        if len(xa) > 1:
            sub = self.subs[b]
            width = len(sub)
            for t2, c in xa.items():
                if t2 != t and (j := bisect_left(sub, t2)) < width and sub[j] == t2:
                    offer.append((t2, c))
        return offer

    def _pull(
        self, h: int, chain: list[tuple[int, int, list[tuple[int, int]]]], above: int,
        need: int,
    ) -> int:
        """Move up to ``need`` partitions along ``chain`` from source ``h``."""
        c = need
        for _, _, offer in chain:
            have = sum(count for _, count in offer)
            if have < c:
                c = have
        if c <= 0:
            return 0
        if above:
            c = min(c, self.load[h] - above)
            if c <= 0:
                return 0
        else:
            # the source takes free partitions, from as many of its topics as it needs
            sub = self.subs[h]
            free = self.free
            got = 0
            for tf in compress(sub, map(free.__getitem__, sub)):
                take = min(c - got, free[tf])
                self._take_free(h, tf, take)
                got += take
                if got == c:
                    break
            if not got:
                self.no_free.add(h)
                return 0
            c = got
        for a, b, offer in chain:
            left = c
            for t, count in offer:
                move = count if count < left else left
                self._add(a, t, -move)
                self._add(b, t, move)
                left -= move
                if not left:
                    break
        return c

    # -- step 4: general improvement ----------------------------------------------------

    def _improve(self, budget: int | None) -> bool:
        """Hand-over chains from a member to one with at least two fewer, until none; False
        if that took more than ``budget`` searches (then it stopped).

        First in big steps: the members below the middle of the loads pull partitions along
        chains from the members above it, as far as the middle (:meth:`_augment` with that
        target). When no chain crosses the middle, one step at a time: the least loaded
        members pull one partition each from members two or more above them; if none can,
        every member that search reached is final (nobody outside can give to them, and
        they are all within one of the least loaded) and is set aside.
        """
        load = self.load
        frozen: set[int] = set()
        self.free_set = set()
        searches = 0
        while True:
            live = [i for i in range(self.n) if i not in frozen]
            if not live:
                return True
            lo = min(map(load.__getitem__, live))
            hi = max(map(load.__getitem__, live))
            if hi - lo <= 1:
                return True
            if budget is not None:
                if searches == budget:
                    return False
                searches += 1
            mid = (lo + hi) // 2
            if hi - lo > 3:
                needy = [i for i in live if load[i] < mid]
                if self._augment(needy, mid, mid, set(frozen)):
                    continue
            low = [i for i in live if load[i] == lo]
            self._augment(low, lo + 1, lo + 1, frozen)

    def _reset(self) -> None:
        """Back to the kept assignment: nothing handed out, nothing moved."""
        kept_hold = self.kept_hold
        self.hold = {t: dict(h) for t, h in kept_hold.items()}
        self.x[:] = [{t: len(p) for t, p in k.items()} for k in self.kept]
        load = self.load
        load[:] = [sum(xi.values()) for xi in self.x]
        free = self.free
        counts = self.spec.partition_counts
        for t in self.comp.topics:
            free[t] = counts[t] - sum(kept_hold[t].values()) if t in kept_hold else counts[t]
        self.pool = self.total - sum(load)
        self.plan.clear()
        self.matched = False

    def _by_topic(self) -> None:
        """The slow but robust way: every topic's free partitions go to its least loaded
        subscribers (topics with the fewest subscribers first), then each topic in turn
        moves partitions from its most loaded holder to its least loaded subscriber while
        they are two or more apart, until no topic does (every move lowers the sum of
        squared loads). Needs the subscribers of every topic: one pass over the
        subscriptions."""
        subscribers: dict[int, list[int]] = {t: [] for t in self.comp.topics}
        for i, sub in enumerate(self.subs):
            for t in sub:
                subscribers[t].append(i)
        order = sorted(self.comp.topics, key=lambda t: (len(subscribers[t]), t))
        for t in order:
            if self.free[t]:
                self._water_fill(t, subscribers[t])
        load = self.load
        hold = self.hold
        x = self.x
        moved = True
        while moved:
            moved = False
            for t in order:
                subs_t = subscribers[t]
                holders = hold.get(t)
                if len(subs_t) < 2 or not holders:
                    continue
                low = [(load[i], i) for i in subs_t]
                high = [(-load[i], i) for i in holders]
                heapq.heapify(low)
                heapq.heapify(high)
                while high and low:
                    neg, hi = high[0]
                    if -neg != load[hi] or not x[hi].get(t):
                        heapq.heappop(high)
                        if x[hi].get(t):
                            heapq.heappush(high, (-load[hi], hi))
                        continue
                    lo_load, lo = low[0]
                    if lo_load != load[lo]:
                        heapq.heapreplace(low, (load[lo], lo))
                        continue
                    if load[hi] <= lo_load + 1:
                        break
                    c = min(x[hi][t], (load[hi] - lo_load) // 2)
                    self._add(hi, t, -c)
                    self._add(lo, t, c)
                    moved = True
                    heapq.heapreplace(low, (load[lo], lo))
                    heapq.heappush(low, (load[hi], hi))
                    heapq.heappush(high, (-load[lo], lo))
                    heapq.heappush(high, (-load[hi], hi))

    # -- step 5: needless moves ---------------------------------------------------------

    def _return_moves(self) -> None:
        """Per topic, while a member that lost partitions of it (``o``) ended below one that
        gained some (``n``), give one back: loads swap, moves drop by one."""
        kept_hold = self.kept_hold
        hold = self.hold
        load = self.load
        x = self.x
        work = sorted(t for t in self.touched if t in kept_hold)
        if not work:
            return
        topics_of: dict[int, list[int]] = {}
        for t in work:
            for i in kept_hold[t]:
                topics_of.setdefault(i, []).append(t)
            for i in hold.get(t, ()):
                topics_of.setdefault(i, []).append(t)
        pending = set(work)
        work.reverse()
        while work:
            t = work.pop()
            pending.discard(t)
            before = kept_hold[t]
            now = hold.get(t, {})
            losers = [o for o, c in before.items() if x[o].get(t, 0) < c]
            if not losers:
                continue
            gainers = [g for g, c in now.items() if c > before.get(g, 0)]
            if not gainers:
                continue
            o = min(losers, key=lambda i: (load[i], i))
            g = max(gainers, key=lambda i: (load[i], -i))
            if load[g] <= load[o]:
                continue
            self._add(g, t, -1)
            self._add(o, t, 1)
            for i in (o, g):
                for t2 in topics_of.get(i, ()):
                    if t2 not in pending:
                        pending.add(t2)
                        work.append(t2)
            if t not in pending:
                pending.add(t)
                work.append(t)

    # -- step 6: partition numbers ------------------------------------------------------

    def write(self, out_topics: list[Sequence[int]], out_parts: list[Sequence[Partitions]]) -> None:
        spec = self.spec
        members = self.comp.members
        new_parts = self._materialize()
        kept = self.kept
        clean = self.clean
        cur_topics = spec.current_topics
        cur_parts = spec.current_partitions
        for i, m in enumerate(members):
            mine = new_parts.get(i)
            if mine is None:
                if clean[i]:
                    out_topics[m] = cur_topics[m]
                    out_parts[m] = cur_parts[m]
                    continue
                k = kept[i]
                out_topics[m] = tuple(k)
                out_parts[m] = tuple(k.values())
                continue
            k = kept[i]
            if not k:
                # a member that held nothing: its new topics were written in ascending order
                out_topics[m] = tuple(mine)
                out_parts[m] = tuple(mine.values())
                continue
            merged = dict(k)
            merged.update(mine)
            ts = sorted(t for t, p in merged.items() if p)
            out_topics[m] = tuple(ts)
            out_parts[m] = tuple(merged[t] for t in ts)

    def _materialize(self) -> dict[int, dict[int, Partitions]]:
        """Partition numbers for every (member, topic) whose count changed, by member, each
        member's topics in ascending order."""
        spec = self.spec
        counts = spec.partition_counts
        kept = self.kept
        kept_hold = self.kept_hold
        hold = self.hold
        racks = self.racks
        prs_all = spec.partition_racks if self.use_racks else None
        rack_sets = spec.rack_sets
        plan = self.plan
        by_class_cache: dict[int, dict[int, list[int]]] = {}
        result: dict[int, dict[int, Partitions]] = {}
        ranges: dict[tuple[int, int], Partitions] = {}
        for t in sorted(self.touched):
            now = hold.get(t)
            fresh = plan.get(t)
            if fresh is not None and fresh[2] == now:
                # nobody held it and all of it went as _fill_matched took it: nothing taken
                # by other steps or moved since; the same pieces give the same (shared) tuple
                by_class, tuples, _, taken, base, span = fresh
                for g, key in taken.items():
                    planned = tuples.get(key)
                    if planned is None:
                        planned = tuples[key] = _piece_parts(by_class, key, base, span)
                    mine = result.get(g)
                    if mine is None:
                        result[g] = {t: planned}
                    else:
                        mine[t] = planned
                continue
            before = kept_hold.get(t)
            prs = prs_all[t] if prs_all is not None else None
            if before is None:
                # nobody held any of it: all of it is handed out
                if not now:
                    continue
                gainers = sorted(now)
                if prs is None or len(gainers) == 1:
                    start = 0
                    for g in gainers:
                        end = start + now[g]
                        parts = ranges.get((start, end))
                        if parts is None:
                            parts = ranges[start, end] = tuple(range(start, end))
                        mine = result.get(g)
                        if mine is None:
                            result[g] = {t: parts}
                        else:
                            mine[t] = parts
                        start = end
                    continue
                template = by_class_cache.get(id(prs))
                if template is None:
                    template = by_class_cache[id(prs)] = partitions_by_class(prs)
                steps = _fresh_steps(fresh) if fresh is not None else []
                grants = _split_fresh(template, gainers, now, steps, racks, prs, rack_sets)
                for g, got in zip(gainers, grants, strict=True):
                    mine = result.get(g)
                    if mine is None:
                        result[g] = {t: tuple(got)}
                    else:
                        mine[t] = tuple(got)
                continue
            now = now or {}
            gainers = sorted(g for g, c in now.items() if c > before.get(g, 0))
            losers = [o for o, c in before.items() if now.get(o, 0) < c]
            if not gainers and not losers:
                continue
            n_parts = counts[t]
            shed: list[int] = []
            for o in losers:
                mine_o = kept[o][t]
                keep = now.get(o, 0)
                rack = racks[o]
                if prs is not None and rack != NO_RACK:
                    good = [p for p in mine_o if rack in rack_sets[prs[p]]]
                    if len(good) < len(mine_o):
                        bad = [p for p in mine_o if rack not in rack_sets[prs[p]]]
                        order = good + bad
                        kept_o = sorted(order[:keep])
                        shed.extend(order[keep:])
                    else:
                        kept_o = list(mine_o[:keep])
                        shed.extend(mine_o[keep:])
                else:
                    kept_o = list(mine_o[:keep])
                    shed.extend(mine_o[keep:])
                result.setdefault(o, {})[t] = tuple(kept_o)
            if sum(before.values()) < n_parts:
                shed.extend(set(range(n_parts)).difference(*(kept[i][t] for i in before)))
            shed.sort()
            needs = [now[g] - before.get(g, 0) for g in gainers]
            pieces: Sequence[Sequence[int]]
            if prs is not None and (len(needs) > 1 or len(shed) > needs[0]):
                pieces = split_by_rack(shed, needs, [racks[g] for g in gainers], prs,
                                       rack_sets)
            else:
                pieces = []
                start = 0
                for need in needs:
                    pieces.append(shed[start:start + need])
                    start += need
            for g, piece in zip(gainers, pieces, strict=True):
                old = kept[g].get(t) if before.get(g) else None
                parts = tuple(sorted((*old, *piece))) if old else tuple(piece)
                result.setdefault(g, {})[t] = parts
        return result


_Fresh = tuple[dict[int, list[int]], dict[int, Partitions], dict[int, int], dict[int, int],
               int, int]
"""What members took of a topic nobody held in :meth:`_Solver._fill_matched`: the topic's
partitions by rack class, partition tuples by pieces (shared by the topics of one rack
layout), by member (in the order they took) its count and its pieces of the classes, and
the two numbers the pieces are packed with. A piece (class ``k``, partitions ``start`` to
``end`` of the class) is ``(k * base + start) * base + end`` with ``base`` one more than the
topic's partitions, a member's pieces are digits of one int in base ``span`` (the rack
classes times ``base`` squared): no object per piece."""


def _unpack(key: int, base: int, span: int) -> list[tuple[int, int, int]]:
    """The pieces (class, start, end) packed in ``key``, in the order taken."""
    pieces = []
    while key:
        key, code = divmod(key, span)
        rest, end = divmod(code, base)
        k, start = divmod(rest, base)
        pieces.append((k, start, end))
    pieces.reverse()
    return pieces


def _piece_parts(by_class: dict[int, list[int]], key: int, base: int, span: int) -> Partitions:
    """The partitions of the pieces packed in ``key`` (see :data:`_Fresh`), ascending."""
    pieces = _unpack(key, base, span)
    if len(pieces) == 1:
        k, start, end = pieces[0]
        return tuple(by_class[k][start:end])
    return tuple(sorted(chain.from_iterable(
        by_class[k][start:end] for k, start, end in pieces)))


def _fresh_steps(fresh: _Fresh) -> list[tuple[int, int, int]]:
    """(member, class, count) of a :data:`_Fresh` record, in the order taken (for
    :func:`_split_fresh`)."""
    _, _, _, taken, base, span = fresh
    return [(i, k, end - start) for i, key in taken.items()
            for k, start, end in _unpack(key, base, span)]


def _split_fresh(
    by_class: dict[int, list[int]],
    gainers: list[int],
    counts: dict[int, int],
    plan: Sequence[tuple[int, int, int]],
    racks: list[int],
    prs: Sequence[int],
    rack_sets: tuple[frozenset[int], ...],
) -> list[list[int]]:
    """Split all the partitions of a topic nobody held (``by_class``: by rack class) among
    ``gainers`` (``counts`` each): first as :meth:`_Solver._fill_matched` planned (classes
    on the member's rack), then the rest by :func:`split_by_rack`."""
    left = dict(counts)
    grants: dict[int, list[int]] = {g: [] for g in gainers}
    used: dict[int, int] = {}
    for i, k, d in plan:
        have = left.get(i)
        if have:
            take = d if d < have else have
            start = used.get(k, 0)
            grants[i] += by_class[k][start:start + take]
            used[k] = start + take
            left[i] = have - take
    waiting = [g for g in gainers if left[g]]
    if waiting:
        rest: dict[int, list[int]] = {}
        for k, parts in by_class.items():
            start = used.get(k, 0)
            if start < len(parts):
                rest[k] = parts[start:]
        pool = sorted(chain.from_iterable(rest.values()))
        wanted = {racks[g] for g in waiting}
        if any(not wanted.isdisjoint(rack_sets[k]) for k in rest):
            more = split_by_rack(pool, [left[g] for g in waiting],
                                 [racks[g] for g in waiting], prs, rack_sets, rest)
            for g, extra in zip(waiting, more, strict=True):
                grants[g] += extra
        else:
            # nothing left on the racks of those who still need some: ascending runs
            start = 0
            for g in waiting:
                need = left[g]
                grants[g] += pool[start:start + need]
                start += need
    result = []
    for g in gainers:
        got = grants[g]
        got.sort()
        result.append(got)
    return result


def _template(
    tally: Counter[int], rack_sets: tuple[frozenset[int], ...], base: int
) -> tuple[list[int], dict[int, list[tuple[int, int, int]]]]:
    """The sizes of the rack classes (fewest racks first), and by rack the classes with a
    replica on it: (position, class times ``base``, size)."""
    classes = sorted(tally, key=lambda k: (len(rack_sets[k]), k))
    match: dict[int, list[tuple[int, int, int]]] = {}
    for idx, k in enumerate(classes):
        for rack in rack_sets[k]:
            match.setdefault(rack, []).append((idx, k * base, tally[k]))
    return [tally[k] for k in classes], match
