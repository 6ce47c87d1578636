"""Structure found in a spec: who subscribes to what, and independent sub-groups."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat

from assignors.spec import AssignmentSpec


@dataclass(frozen=True, slots=True)
class Component:
    """Members whose subscriptions are connected through shared topics.

    Components share no topic, so each can be assigned on its own.
    """

    members: tuple[int, ...]
    """Member indexes, ascending."""
    topics: tuple[int, ...]
    """Topic indexes, ascending."""
    subscriptions: tuple[int, ...]
    """Indexes into ``spec.subscriptions``, ascending."""

    @property
    def homogeneous(self) -> bool:
        return len(self.subscriptions) == 1


def components(spec: AssignmentSpec) -> list[Component]:
    """Split the group into components (union-find over distinct subscriptions).

    Subscriptions of one big component are usually subsets of the topics it already has:
    once that component holds every topic index below some ``k`` (typically all topics),
    a subscription's last (largest) topic tells; otherwise one C-level ``issuperset``
    does. Only the other subscriptions are merged topic by topic (all of them when there
    are few (subscription, topic) pairs: that is faster then).
    """
    subs = spec.subscriptions
    used = sorted(set(spec.member_subscriptions))
    if len(used) == 1:  # one subscription (ascending, distinct topics): one component
        (only,) = used
        if not subs[only]:
            return []
        return [Component(tuple(range(spec.member_count)), tuple(subs[only]), (only,))]
    if sum(map(len, map(subs.__getitem__, used))) <= _SMALL:
        return _components_small(spec, used)
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[int, int] = {}  # topic -> a subscription that has it
    topics_of: dict[int, set[int]] = {}  # root -> the topics of its component
    big = -1  # the root with the most topics
    big_set: set[int] = set()
    below = 0  # big_set holds every topic index below this
    for s in used:
        sub = subs[s]
        if not sub:
            continue
        if big >= 0 and (sub[-1] < below or big_set.issuperset(sub)):
            parent[s] = big
            continue
        parent[s] = s
        merged = set(sub)
        root = s
        if owner.keys().isdisjoint(sub):
            owner.update(zip(sub, repeat(s)))
        else:
            roots = {find(o) for o in set(map(owner.get, sub)) if o is not None}
            owner.update(zip(sub, repeat(s)))
            for r in roots:
                other = topics_of.pop(r)
                if len(other) > len(merged):
                    other, merged = merged, other
                merged |= other
                if r < root:
                    root = r
            for r in roots:
                parent[r] = root
            parent[s] = root
        topics_of[root] = merged
        if big < 0 or big not in topics_of or len(merged) >= len(big_set):
            big = root
            big_set = merged
            size = len(merged)
            below = size if sub[-1] < size and max(merged) == size - 1 else 0
    root_of = {s: find(s) for s in parent}
    groups: dict[int, list[int]] = {}
    for s in used:
        found = root_of.get(s)
        if found is not None:
            groups.setdefault(found, []).append(s)
    members: dict[int, list[int]] = {root: [] for root in groups}
    if len(groups) == 1:
        (root,) = groups
        ms = members[root]
        ms.extend(m for m, s in enumerate(spec.member_subscriptions) if s in root_of)
    else:
        for m, s in enumerate(spec.member_subscriptions):
            found = root_of.get(s)
            if found is not None:
                members[found].append(m)
    return [
        Component(tuple(members[root]), tuple(sorted(topics_of[root])), tuple(group))
        for root, group in sorted(groups.items())
    ]


_SMALL = 4096
"""Up to this many (subscription, topic) pairs, components are merged topic by topic."""


def _components_small(spec: AssignmentSpec, used: list[int]) -> list[Component]:
    """:func:`components` topic by topic: the fastest way for few subscription entries."""
    subs = spec.subscriptions
    parent = list(range(len(subs)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[int, int] = {}
    for s in used:
        for t in subs[s]:
            other = owner.setdefault(t, s)
            if other != s:
                a, b = find(other), find(s)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for s in used:
        if subs[s]:
            groups.setdefault(find(s), []).append(s)
    members: dict[int, list[int]] = {root: [] for root in groups}
    root_of = {s: find(s) for s in used}
    for m, s in enumerate(spec.member_subscriptions):
        root = root_of[s]
        if root in members:
            members[root].append(m)
    result = []
    for root, group in sorted(groups.items()):
        topics: set[int] = set()
        for s in group:
            topics.update(subs[s])
        result.append(Component(tuple(members[root]), tuple(sorted(topics)), tuple(group)))
    return result


def subscribers(spec: AssignmentSpec) -> list[list[int]]:
    """Member indexes subscribed to each topic, ascending."""
    by_sub: dict[int, list[int]] = {}
    for m, s in enumerate(spec.member_subscriptions):
        by_sub.setdefault(s, []).append(m)
    result: list[list[int]] = [[] for _ in range(spec.topic_count)]
    if len(by_sub) == 1:
        (s, ms), = by_sub.items()
        for t in spec.subscriptions[s]:
            result[t] = ms
        return result
    for s, ms in by_sub.items():
        for t in spec.subscriptions[s]:
            result[t].extend(ms)
    for ms in result:
        if len(ms) > 1:
            ms.sort()
    return result
