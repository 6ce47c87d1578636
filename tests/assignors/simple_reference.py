"""A slow, literal model of Kafka's ``SimpleAssignor`` steps, to check ``assignors.simple``.

Works on member and topic records directly (not on the compact spec), with plain lists,
sets and dicts, in the orders the Python assignor fixes: members by member id, partitions
by (topic name, partition number). The cyclic iterator is modelled as Java's iterator over
a live set: ``next`` walks it, ``remove`` drops the element just returned.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

from assignors import MemberSpec, TopicMetadata

TopicPartition = tuple[Hashable, int]


class _Iterator:
    """Java's ``Iterator`` over a live list, with ``remove``."""

    def __init__(self, items: list[str]) -> None:
        self.items = items
        self.index = 0

    def has_next(self) -> bool:
        return self.index < len(self.items)

    def next(self) -> str:
        item = self.items[self.index]
        self.index += 1
        return item

    def remove(self) -> None:
        self.index -= 1
        del self.items[self.index]


def desired(members: int, partitions: int) -> tuple[int, list[int]]:
    if partitions == 0:
        return 0, [0] * members
    sharing = math.ceil(members / partitions)
    precise = sharing * partitions / members
    return sharing, [
        math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)
    ]


def _pool(
    members: list[str],
    partitions: list[TopicPartition],
    current: dict[str, list[TopicPartition]],
) -> dict[str, list[TopicPartition]]:
    sharing, want_list = desired(len(members), len(partitions))
    want = dict(zip(members, want_list, strict=True))
    position = {tp: i for i, tp in enumerate(partitions)}
    assigned = {m: sorted(current[m], key=position.__getitem__) for m in members}
    # revoke from overfilled members, first partitions first
    for m in members:
        while len(assigned[m]) > want[m]:
            assigned[m].pop(0)
    owners: dict[TopicPartition, list[str]] = {tp: [] for tp in partitions}
    for m in members:
        for tp in assigned[m]:
            owners[tp].append(m)
    # revoke overshared partitions, first owners first
    for tp in partitions:
        while len(owners[tp]) > sharing:
            assigned[owners[tp].pop(0)].remove(tp)
    # assign the remaining partitions
    unfilled = [m for m in members if len(assigned[m]) < want[m]]
    if unfilled:
        iterator = _Iterator(unfilled)
        assigned_this_pass = False
        for tp in partitions:
            holders = owners[tp]
            need = sharing - len(holders)
            while need > 0:
                if not iterator.has_next():
                    if not assigned_this_pass:
                        break
                    iterator = _Iterator(unfilled)
                    assigned_this_pass = False
                member = iterator.next()
                # Kafka checks the partition's holders from before this step only: a member
                # that took the partition earlier in this loop takes it again (a no-op for
                # its set of partitions) and still counts towards the partition's need
                if member not in holders:
                    if tp not in assigned[member]:
                        assigned[member].append(tp)
                    need -= 1
                    assigned_this_pass = True
                    if len(assigned[member]) >= want[member]:
                        iterator.remove()
            if not unfilled:
                break
    return assigned


def resolved_subscriptions(
    members: list[MemberSpec], topics: list[TopicMetadata]
) -> dict[str, frozenset[Hashable]]:
    """Each member's subscribed topic ids that exist in ``topics``."""
    known = {t.topic_id for t in topics}
    return {m.member_id: frozenset(t for t in m.subscribed_topic_ids if t in known)
            for m in members}


def pools(
    members: list[MemberSpec], topics: list[TopicMetadata]
) -> list[tuple[list[str], list[TopicPartition]]]:
    """The runs of the algorithm: (member ids in order, partitions in order).

    One run over every subscribed partition if all members subscribe to the same topics,
    otherwise one run per subscribed topic over the members subscribed to it.
    """
    ordered = sorted(topics, key=lambda t: t.name)
    ids = sorted(m.member_id for m in members)
    subs = resolved_subscriptions(members, topics)
    if not ids:
        return []
    if len(set(subs.values())) == 1:
        chosen = [t for t in ordered if t.topic_id in subs[ids[0]]]
        groups = [(ids, chosen)] if chosen else []
    else:
        groups = [
            ([m for m in ids if t.topic_id in subs[m]], [t])
            for t in ordered if any(t.topic_id in subs[m] for m in ids)
        ]
    return [
        (pool_members, [(t.topic_id, p) for t in pool_topics for p in range(t.partition_count)])
        for pool_members, pool_topics in groups
    ]


def reference_assign(
    members: list[MemberSpec], topics: list[TopicMetadata]
) -> dict[str, dict[Hashable, tuple[int, ...]]]:
    """member id -> topic id -> ascending partitions (members with nothing map to {})."""
    count = {t.topic_id: t.partition_count for t in topics}
    spec = {m.member_id: m for m in members}

    def current(member: str, topic_ids: set[Hashable]) -> list[TopicPartition]:
        return [
            (t, p)
            for t, parts in spec[member].assignment.items() if t in topic_ids
            for p in set(parts) if 0 <= p < count[t]
        ]

    result: dict[str, set[TopicPartition]] = {m: set() for m in spec}
    for pool_members, partitions in pools(members, topics):
        topic_ids = {t for t, _ in partitions}
        got = _pool(pool_members, partitions, {m: current(m, topic_ids) for m in pool_members})
        for m, tps in got.items():
            result[m].update(tps)
    out: dict[str, dict[Hashable, tuple[int, ...]]] = {}
    for m, held in result.items():
        by_topic: dict[Hashable, list[int]] = {}
        for t, p in held:
            by_topic.setdefault(t, []).append(p)
        out[m] = {t: tuple(sorted(ps)) for t, ps in by_topic.items()}
    return out
