"""Structure found in a spec: who subscribes to what, and independent sub-groups."""

from __future__ import annotations

from dataclasses import dataclass

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
    """Split the group into components (union-find over distinct subscriptions)."""
    subs = spec.subscriptions
    parent = list(range(len(subs)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    used = sorted(set(spec.member_subscriptions))
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
