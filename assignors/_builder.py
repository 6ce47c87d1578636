"""Turns member and topic records into the compact :class:`AssignmentSpec`, and checks one."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from assignors.spec import (
    NO_RACK,
    AssignmentSpecError,
    MemberSpec,
    PartitionOffsets,
    Partitions,
    TopicId,
    TopicMetadata,
)

if TYPE_CHECKING:
    from assignors.spec import AssignmentSpec

V = TypeVar("V")


class _Interner:
    """Hands out one shared instance per distinct value (smaller pickles, identity checks)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        # value -> the first equal value seen, the same type as its key
        self._seen: dict[Any, Any] = {}

    def __call__(self, value: V) -> V:
        return self._seen.setdefault(value, value)


def _partition_rack_names(
    topic: TopicMetadata,
) -> list[Collection[str]] | None:
    racks = topic.partition_racks
    if racks is None:
        return None
    count = topic.partition_count
    if isinstance(racks, Mapping):
        return [racks.get(p, ()) for p in range(count)]
    listed = list(racks)[:count]
    return listed + [()] * (count - len(listed))


def build_spec(
    cls: type[AssignmentSpec],
    members: Iterable[MemberSpec],
    topics: Iterable[TopicMetadata],
    *,
    lags: Mapping[TopicId, Sequence[int]] | None,
    offsets: Mapping[TopicId, PartitionOffsets] | None,
    options: Mapping[str, object] | None,
    shared: bool = False,
) -> AssignmentSpec:
    topic_list = sorted(topics, key=lambda t: t.name)
    member_list = sorted(members, key=lambda m: m.member_id)
    topic_index: dict[TopicId, int] = {}
    for index, topic in enumerate(topic_list):
        if topic.topic_id in topic_index:
            raise AssignmentSpecError(f"topic id {topic.topic_id!r} listed twice")
        if topic.partition_count < 0:
            raise AssignmentSpecError(f"topic {topic.name!r} has a negative partition count")
        topic_index[topic.topic_id] = index
    counts = tuple(t.partition_count for t in topic_list)
    intern = _Interner()

    rack_index: dict[str, int] = {}
    rack_set_index: dict[frozenset[int], int] = {}

    def rack_of(name: str) -> int:
        return rack_index.setdefault(name, len(rack_index))

    partition_racks: list[tuple[int, ...] | None] = []
    common_racks: list[frozenset[int] | None] = []
    for topic in topic_list:
        names = _partition_rack_names(topic)
        if names is None:
            partition_racks.append(None)
            common_racks.append(None)
            continue
        per_partition = []
        common: frozenset[int] | None = None
        for rack_names in names:
            racks = frozenset(rack_of(r) for r in rack_names)
            per_partition.append(rack_set_index.setdefault(racks, len(rack_set_index)))
            common = racks if common is None else common & racks
        partition_racks.append(intern(tuple(per_partition)))
        common_racks.append(common if common is not None else frozenset())

    subscription_index: dict[tuple[int, ...], int] = {}
    member_subscriptions = []
    member_racks = []
    current_topics: list[tuple[int, ...]] = []
    current_partitions: list[tuple[Partitions, ...]] = []
    claimed: dict[int, set[int]] = {}
    seen_members: set[str] = set()
    indexed: dict[int, tuple[Collection[TopicId], tuple[int, ...]]] = {}
    for member in member_list:
        if member.member_id in seen_members:
            raise AssignmentSpecError(f"member id {member.member_id!r} listed twice")
        seen_members.add(member.member_id)
        raw = member.subscribed_topic_ids
        seen = indexed.get(id(raw))  # members often share one subscription object
        if seen is not None and seen[0] is raw:
            subscribed = seen[1]
        else:
            subscribed = tuple(sorted({topic_index[t] for t in raw if t in topic_index}))
            indexed[id(raw)] = (raw, subscribed)
        sub = subscription_index.setdefault(subscribed, len(subscription_index))
        member_subscriptions.append(sub)
        member_racks.append(NO_RACK if member.rack is None else rack_of(member.rack))
        held: list[tuple[int, Partitions]] = []
        for topic_id, parts in member.assignment.items():
            t = topic_index.get(topic_id)
            if t is None:
                continue
            if shared:
                kept = sorted(parts if isinstance(parts, (set, frozenset)) else set(parts))
                if kept and (kept[0] < 0 or kept[-1] >= counts[t]):
                    kept = [p for p in kept if 0 <= p < counts[t]]
            else:
                taken = claimed.setdefault(t, set())
                kept = sorted({p for p in parts if 0 <= p < counts[t]} - taken)
                taken.update(kept)
            if kept:
                held.append((t, intern(tuple(kept))))
        held.sort()
        current_topics.append(intern(tuple(t for t, _ in held)))
        current_partitions.append(tuple(p for _, p in held))

    rack_sets: list[frozenset[int]] = [frozenset()] * len(rack_set_index)
    for racks, index in rack_set_index.items():
        rack_sets[index] = racks

    lag_column: tuple[tuple[int, ...] | None, ...] = ()
    if lags:
        lag_column = tuple(
            _lag_row(lags.get(t.topic_id), t.partition_count) for t in topic_list
        )
    offset_column: tuple[PartitionOffsets | None, ...] = ()
    if offsets:
        offset_column = tuple(offsets.get(t.topic_id) for t in topic_list)

    has_racks = any(r is not None for r in partition_racks)
    return cls(
        member_ids=tuple(m.member_id for m in member_list),
        instance_ids=tuple(m.instance_id for m in member_list),
        member_racks=tuple(member_racks),
        member_subscriptions=tuple(member_subscriptions),
        subscriptions=tuple(subscription_index),
        current_topics=tuple(current_topics),
        current_partitions=tuple(current_partitions),
        topic_ids=tuple(t.topic_id for t in topic_list),
        topic_names=tuple(t.name for t in topic_list),
        partition_counts=counts,
        racks=tuple(rack_index),
        rack_sets=tuple(rack_sets),
        partition_racks=tuple(partition_racks) if has_racks else (),
        topic_common_racks=tuple(common_racks) if has_racks else (),
        lags=lag_column,
        offsets=offset_column,
        options=tuple(sorted((k, str(v)) for k, v in (options or {}).items())),
        shared=shared,
    )


def _lag_row(row: Sequence[int] | None, count: int) -> tuple[int, ...] | None:
    if row is None:
        return None
    values = [max(0, int(v)) for v in list(row)[:count]]
    return tuple(values + [0] * (count - len(values)))


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AssignmentSpecError(message)


def validate_spec(spec: AssignmentSpec) -> None:
    members = spec.member_count
    topics = spec.topic_count
    for name in ("instance_ids", "member_racks", "member_subscriptions", "current_topics",
                 "current_partitions"):
        _check(len(getattr(spec, name)) == members, f"{name} must have one entry per member")
    for name in ("topic_names", "partition_counts"):
        _check(len(getattr(spec, name)) == topics, f"{name} must have one entry per topic")
    for name in ("partition_racks", "topic_common_racks", "lags", "offsets"):
        column = getattr(spec, name)
        _check(not column or len(column) == topics, f"{name} must be empty or per topic")
    _check(list(spec.member_ids) == sorted(spec.member_ids), "members must be sorted by id")
    _check(len(set(spec.member_ids)) == members, "member ids must be unique")
    for sub in spec.subscriptions:
        _check(list(sub) == sorted(set(sub)), "subscriptions must be ascending and unique")
        _check(all(0 <= t < topics for t in sub), "subscription names an unknown topic")
    _check(
        all(0 <= s < len(spec.subscriptions) for s in spec.member_subscriptions),
        "member subscription index out of range",
    )
    _check(
        all(NO_RACK <= r < len(spec.racks) for r in spec.member_racks),
        "member rack index out of range",
    )
    held: set[tuple[int, int]] = set()
    for ts, ps in zip(spec.current_topics, spec.current_partitions, strict=True):
        _check(len(ts) == len(ps), "current topics and partitions must be parallel")
        _check(list(ts) == sorted(set(ts)), "current topics must be ascending and unique")
        for t, parts in zip(ts, ps, strict=True):
            _check(0 <= t < topics, "current assignment names an unknown topic")
            _check(bool(parts), "current partition tuples must not be empty")
            _check(list(parts) == sorted(set(parts)), "partitions must be ascending, unique")
            _check(parts[0] >= 0 and parts[-1] < spec.partition_counts[t], "partition range")
            if spec.shared:
                continue
            for p in parts:
                _check((t, p) not in held, f"partition {t}:{p} held twice")
                held.add((t, p))
    for t, racks in enumerate(spec.partition_racks):
        if racks is None:
            continue
        _check(len(racks) == spec.partition_counts[t], "partition racks must be per partition")
        _check(all(0 <= r < len(spec.rack_sets) for r in racks), "rack set index out of range")
        common = frozenset.intersection(*(spec.rack_sets[r] for r in racks)) if racks else None
        expected = common if common is not None else frozenset()
        _check(spec.topic_common_racks[t] == expected, "topic_common_racks is stale")
    for t, lag in enumerate(spec.lags):
        if lag is not None:
            _check(len(lag) == spec.partition_counts[t], "lags must be per partition")
