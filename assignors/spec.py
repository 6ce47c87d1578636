"""Assignment input and output, modelled on KIP-848's ``PartitionAssignor``.

The spec is columnar: members and topics are addressed by dense indexes, every per-member
or per-topic field is a tuple, and no object exists per partition. That makes it cheap to
pickle into a worker process and lets the assignors work on counts and slices.

Build one with :meth:`AssignmentSpec.build` from :class:`MemberSpec` and
:class:`TopicMetadata` records. The builder establishes the invariants the assignors rely
on (see :class:`AssignmentSpec`); a spec made any other way should pass :meth:`validate`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

TopicId: TypeAlias = Hashable
"""A topic id: ``uuid.UUID`` in the coordinator, any hashable value here."""

Partitions: TypeAlias = tuple[int, ...]
"""Partition numbers, ascending, no duplicates."""

NO_RACK = -1
"""Index used in :attr:`AssignmentSpec.member_racks` for a member without a rack."""

NO_OFFSET = -1
"""Value used in :attr:`PartitionOffsets.committed` for a partition without a committed offset."""


class AssignmentSpecError(ValueError):
    """The spec breaks one of its invariants."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member, as the coordinator knows it (KIP-848 ``AssignmentMemberSpec``)."""

    member_id: str
    subscribed_topic_ids: Collection[TopicId]
    instance_id: str | None = None
    rack: str | None = None
    assignment: Mapping[TopicId, Iterable[int]] = field(default_factory=dict)
    """The member's current target partitions, by topic id."""


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic (KIP-848 ``AssignmentTopicMetadata`` plus the partition racks)."""

    topic_id: TopicId
    name: str
    partition_count: int
    partition_racks: Mapping[int, Collection[str]] | Sequence[Collection[str]] | None = None
    """Racks holding a replica of each partition, by partition number; ``None`` if unknown."""


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """Offsets of one topic's partitions, indexed by partition number (for the lag assignor)."""

    log_start: Sequence[int]
    log_end: Sequence[int]
    committed: Sequence[int]
    """The group's committed offset, or :data:`NO_OFFSET`."""


class GroupAssignment:
    """The assignor's answer: member id -> topic id -> ascending partitions.

    Stored compactly, like the spec: for member index ``m`` (the spec's member order),
    ``member_topics[m]`` are topic indexes (into ``topic_ids``) and ``member_partitions[m]``
    the matching partition tuples. Tuples may be shared between members and topics (they
    are immutable) and with the spec's current assignment. The dict view is built on first
    use: :attr:`members` for the whole group, :meth:`member` for one member.
    """

    __slots__ = ("_members", "member_ids", "member_partitions", "member_topics", "topic_ids")

    def __init__(
        self,
        member_ids: Sequence[str],
        topic_ids: Sequence[TopicId],
        member_topics: Sequence[Sequence[int]],
        member_partitions: Sequence[Sequence[Partitions]],
    ) -> None:
        self.member_ids = member_ids
        self.topic_ids = topic_ids
        self.member_topics = member_topics
        self.member_partitions = member_partitions
        self._members: dict[str, dict[TopicId, Partitions]] | None = None

    @classmethod
    def from_dict(
        cls, members: Mapping[str, Mapping[TopicId, Iterable[int]]]
    ) -> GroupAssignment:
        """A compact assignment from the dict form (handy in tests)."""
        member_ids = sorted(members)
        topic_ids = sorted({t for m in members.values() for t in m}, key=repr)
        index = {t: i for i, t in enumerate(topic_ids)}
        topics = []
        parts = []
        for mid in member_ids:
            pairs = [(index[t], tuple(sorted(p))) for t, p in members[mid].items() if p]
            topics.append(tuple(t for t, _ in pairs))
            parts.append(tuple(p for _, p in pairs))
        return cls(tuple(member_ids), tuple(topic_ids), topics, parts)

    def member(self, member_id: str) -> dict[TopicId, Partitions]:
        """One member's assignment (empty if the member is unknown)."""
        if self._members is not None:
            return self._members.get(member_id, {})
        ids = self.member_ids
        m = bisect_left(ids, member_id)
        if m == len(ids) or ids[m] != member_id:
            if member_id not in ids:
                return {}
            m = list(ids).index(member_id)
        topic_id = self.topic_ids.__getitem__
        return dict(zip(map(topic_id, self.member_topics[m]), self.member_partitions[m],
                        strict=True))

    @property
    def members(self) -> dict[str, dict[TopicId, Partitions]]:
        """Every member of the spec, with an empty mapping if it got nothing."""
        if self._members is None:
            topic_id = self.topic_ids.__getitem__
            self._members = {
                mid: dict(zip(map(topic_id, ts), ps, strict=True))
                for mid, ts, ps in zip(
                    self.member_ids, self.member_topics, self.member_partitions, strict=True
                )
            }
        return self._members

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GroupAssignment):
            return NotImplemented
        return self.members == other.members

    __hash__ = None  # type: ignore[assignment]  # the way to declare a class unhashable

    def __repr__(self) -> str:
        return f"GroupAssignment({self.members!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (
            GroupAssignment,
            (self.member_ids, self.topic_ids, self.member_topics, self.member_partitions),
        )


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    """Compact assignment input. Index ``m`` is a member, index ``t`` a topic.

    Invariants (established by :meth:`build`, checked by :meth:`validate`):

    * members are ordered by member id and topics by name;
    * ``subscriptions`` holds each distinct subscription once, as ascending topic indexes;
      ``member_subscriptions[m]`` points into it;
    * ``current_topics[m]`` are ascending topic indexes and ``current_partitions[m]`` the
      matching ascending, in-range, non-empty partition tuples; no partition is held twice,
      unless ``shared`` (a share group's target, where a partition may go to several members);
    * ``partition_racks`` is empty or has one entry per topic: ``None`` (no rack data) or a
      tuple of indexes into ``rack_sets``, one per partition; ``topic_common_racks[t]`` is
      the set of racks holding every partition of ``t`` (``None`` without rack data);
    * ``lags`` and ``offsets`` are empty or have one (possibly ``None``) entry per topic.
    """

    member_ids: tuple[str, ...]
    instance_ids: tuple[str | None, ...]
    member_racks: tuple[int, ...]
    member_subscriptions: tuple[int, ...]
    subscriptions: tuple[tuple[int, ...], ...]
    current_topics: tuple[tuple[int, ...], ...]
    current_partitions: tuple[tuple[Partitions, ...], ...]
    topic_ids: tuple[TopicId, ...]
    topic_names: tuple[str, ...]
    partition_counts: tuple[int, ...]
    racks: tuple[str, ...] = ()
    rack_sets: tuple[frozenset[int], ...] = ()
    partition_racks: tuple[tuple[int, ...] | None, ...] = ()
    topic_common_racks: tuple[frozenset[int] | None, ...] = ()
    lags: tuple[tuple[int, ...] | None, ...] = ()
    offsets: tuple[PartitionOffsets | None, ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    """Per-call assignor options (broker or group config name -> value)."""
    shared: bool = False
    """A share group's spec (KIP-932): a current partition may be held by several members.

    Only the share assignor (``simple``) reads such a spec; the consumer group assignors
    expect every partition held at most once."""

    @property
    def member_count(self) -> int:
        return len(self.member_ids)

    @property
    def topic_count(self) -> int:
        return len(self.topic_ids)

    def option(self, name: str, default: str | None = None) -> str | None:
        for key, value in self.options:
            if key == name:
                return value
        return default

    @classmethod
    def build(
        cls,
        members: Iterable[MemberSpec],
        topics: Iterable[TopicMetadata],
        *,
        lags: Mapping[TopicId, Sequence[int]] | None = None,
        offsets: Mapping[TopicId, PartitionOffsets] | None = None,
        options: Mapping[str, object] | None = None,
        shared: bool = False,
    ) -> AssignmentSpec:
        """Index members and topics, drop what cannot be valid, and intern shared tuples.

        Subscriptions to unknown topics are ignored. Current partitions of unknown topics or
        beyond the partition count are dropped, and a partition claimed by two members stays
        with the first one in member-id order, unless ``shared`` (a share group: every
        member keeps its current partitions; see :attr:`shared`).
        """
        from assignors._builder import build_spec

        return build_spec(cls, members, topics, lags=lags, offsets=offsets, options=options,
                          shared=shared)

    def validate(self) -> None:
        """Raise :class:`AssignmentSpecError` if an invariant does not hold."""
        from assignors._builder import validate_spec

        validate_spec(self)
