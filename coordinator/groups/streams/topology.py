"""A streams group's topology (KIP-1071) and its configuration against the topic metadata.

Pure: no I/O. The model mirrors the ``StreamsGroupTopology`` record (type 23): the first joiner's
topology is stored as received (list order kept) and never changes while the group exists.

``configure`` is Kafka 4.3's ``InternalTopicManager.configureTopics``: it checks that the source
topics exist, decides the partition count of every repartition topic (fixed by the topology, or
the largest input of the subtopology writing it), enforces co-partitioning, gives changelog
topics one partition per task, and reports the internal topics that are missing (to be created)
or exist with another partition count. The outcome is a ``ConfiguredTopology``, in memory only,
whose ``status`` is the heartbeat's topic-configuration status (codes 1, 2 or 3) or None when
the topology is ready. A topology that cannot be configured at all (loops, a repartition topic
no subtopology writes, ...) raises STREAMS_INVALID_TOPOLOGY with Kafka's message; states Kafka
answers with an ``IllegalStateException`` / ``IllegalArgumentException`` (UNKNOWN_SERVER_ERROR,
no message) raise UNKNOWN_SERVER_ERROR without a message.

Kafka keeps the subtopologies in a ``HashMap`` by id, and the order it visits them in shows: a
repartition topic's count is decided from the inputs of its writer that are decided *at that
moment* (a reader visited before the writer of its input gets a count from its other inputs),
and later co-partition groups see earlier groups' decisions. This module visits them in that
same order (``kafka_order``: Java's ``HashMap`` iteration order of the ids, for the usual ids
"0".."9" simply ascending). Where Kafka iterates a hash set or map of topic names and the order
shows (which topic an error names, the order of names in a message), it uses Java's order too
(``java_hash_order``), except for MISSING_INTERNAL_TOPICS, whose names are sorted (spec §1.3).
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from kio.schema.streams_group_heartbeat.v0.request import (
    CopartitionGroup as RequestCopartitionGroup,
)
from kio.schema.streams_group_heartbeat.v0.request import Subtopology as RequestSubtopology
from kio.schema.streams_group_heartbeat.v0.request import TopicInfo as RequestTopicInfo
from kio.schema.streams_group_heartbeat.v0.request import Topology as RequestTopology

from coordinator.metadata.topic_names import INTERNAL_TOPICS, InvalidTopicName, validate_topic_name
from coordinator.runtime import CoordinatorError
from coordinator.runtime.partitioner import java_string_hash
from protocol import ErrorCode
from storage.records.streams import CopartitionGroup as CopartitionGroupRecord
from storage.records.streams import StreamsGroupTopologyValue, StreamsTopicInfo, TopicConfig
from storage.records.streams import Subtopology as SubtopologyRecord

# --- the heartbeat's topic-configuration status codes (StreamsGroupHeartbeatResponse.Status) ---
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3

Status = tuple[int, str]
"""(StatusCode, StatusDetail) of the heartbeat response."""


# --- the topics this module reads ----------------------------------------------------------------
class TopicMeta(Protocol):
    """A topic of the metadata image (``coordinator.metadata.image.TopicImage`` has this shape)."""

    @property
    def name(self) -> str: ...

    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> int: ...


class TopicLookup(Protocol):
    """The metadata image, or anything that finds a topic by name."""

    def topic(self, name: str) -> TopicMeta | None: ...


# --- the model -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A changelog or repartition source topic: ``partitions`` 0 = not fixed (always 0 for
    changelogs), ``replication_factor`` 0 (or -1, as the real client sends) = broker default."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_request(cls, info: RequestTopicInfo) -> TopicInfo:
        return cls(str(info.name), int(info.partitions), int(info.replication_factor),
                   tuple((kv.key, kv.value) for kv in info.topic_configs))

    @classmethod
    def from_record(cls, info: StreamsTopicInfo) -> TopicInfo:
        return cls(info.name, info.partitions, info.replication_factor,
                   tuple((c.key, c.value) for c in info.topic_configs))

    def to_record(self) -> StreamsTopicInfo:
        return StreamsTopicInfo(
            name=self.name, partitions=self.partitions,
            replication_factor=self.replication_factor,
            topic_configs=tuple(TopicConfig(key=k, value=v) for k, v in self.configs),
        )


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's ``source_topics``, ``source_topic_regex`` and
    ``repartition_source_topics``."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()

    @classmethod
    def from_request(cls, group: RequestCopartitionGroup) -> CopartitionGroup:
        return cls(tuple(int(i) for i in group.source_topics),
                   tuple(int(i) for i in group.source_topic_regex),
                   tuple(int(i) for i in group.repartition_source_topics))

    @classmethod
    def from_record(cls, group: CopartitionGroupRecord) -> CopartitionGroup:
        return cls(tuple(group.source_topics), tuple(group.source_topic_regex),
                   tuple(group.repartition_source_topics))

    def to_record(self) -> CopartitionGroupRecord:
        return CopartitionGroupRecord(source_topics=self.source_topics,
                                      source_topic_regex=self.source_topic_regex,
                                      repartition_source_topics=self.repartition_source_topics)


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    @classmethod
    def from_request(cls, sub: RequestSubtopology) -> Subtopology:
        return cls(
            subtopology_id=sub.subtopology_id,
            source_topics=tuple(str(t) for t in sub.source_topics),
            source_topic_regex=tuple(sub.source_topic_regex),
            state_changelog_topics=tuple(TopicInfo.from_request(t)
                                         for t in sub.state_changelog_topics),
            repartition_sink_topics=tuple(str(t) for t in sub.repartition_sink_topics),
            repartition_source_topics=tuple(TopicInfo.from_request(t)
                                            for t in sub.repartition_source_topics),
            copartition_groups=tuple(CopartitionGroup.from_request(g)
                                     for g in sub.copartition_groups),
        )

    @classmethod
    def from_record(cls, sub: SubtopologyRecord) -> Subtopology:
        return cls(
            subtopology_id=sub.subtopology_id,
            source_topics=tuple(sub.source_topics),
            source_topic_regex=tuple(sub.source_topic_regex),
            state_changelog_topics=tuple(TopicInfo.from_record(t)
                                         for t in sub.state_changelog_topics),
            repartition_sink_topics=tuple(sub.repartition_sink_topics),
            repartition_source_topics=tuple(TopicInfo.from_record(t)
                                            for t in sub.repartition_source_topics),
            copartition_groups=tuple(CopartitionGroup.from_record(g)
                                     for g in sub.copartition_groups),
        )

    def to_record(self) -> SubtopologyRecord:
        return SubtopologyRecord(
            subtopology_id=self.subtopology_id,
            source_topics=self.source_topics,
            source_topic_regex=self.source_topic_regex,
            state_changelog_topics=tuple(t.to_record() for t in self.state_changelog_topics),
            repartition_sink_topics=self.repartition_sink_topics,
            repartition_source_topics=tuple(t.to_record()
                                            for t in self.repartition_source_topics),
            copartition_groups=tuple(g.to_record() for g in self.copartition_groups),
        )

    def input_topics(self) -> tuple[str, ...]:
        """Source topics, then repartition source topics (what a task of it reads)."""
        return self.source_topics + tuple(t.name for t in self.repartition_source_topics)


@dataclass(frozen=True, slots=True, eq=False)
class Topology:
    """The stored topology. Two topologies are equal as Kafka compares them when a member
    rejoins (``StreamsTopology.equals``): same epoch and the same subtopology per id (the order
    of the subtopologies does not matter, the order of the lists inside each does)."""

    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()
    by_id: Mapping[str, Subtopology] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", MappingProxyType(
            {s.subtopology_id: s for s in self.subtopologies}))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Topology):
            return NotImplemented
        return self.epoch == other.epoch and dict(self.by_id) == dict(other.by_id)

    def __hash__(self) -> int:
        return hash((self.epoch, frozenset(self.by_id.items())))

    @classmethod
    def from_request(cls, topology: RequestTopology) -> Topology:
        return cls(int(topology.epoch),
                   tuple(Subtopology.from_request(s) for s in topology.subtopologies))

    @classmethod
    def from_record(cls, value: StreamsGroupTopologyValue) -> Topology:
        return cls(value.epoch, tuple(Subtopology.from_record(s) for s in value.subtopologies))

    def to_record(self) -> StreamsGroupTopologyValue:
        """The ``StreamsGroupTopology`` value, lists in the order received."""
        return StreamsGroupTopologyValue(
            epoch=self.epoch, subtopologies=tuple(s.to_record() for s in self.subtopologies))

    def has_duplicate_ids(self) -> bool:
        return len(self.by_id) != len(self.subtopologies)

    def required_topics(self) -> frozenset[str]:
        """Source, repartition source and changelog topic names (not the repartition sinks):
        the topics the metadata hash covers and whose changes concern the group."""
        out: set[str] = set()
        for s in self.subtopologies:
            out.update(s.source_topics)
            out.update(t.name for t in s.repartition_source_topics)
            out.update(t.name for t in s.state_changelog_topics)
        return frozenset(out)

    def source_topic_map(self) -> dict[str, str]:
        """Source and repartition source topic -> the id of the subtopology reading it (offset
        commit validation); a topic read by several subtopologies maps to the last one in
        Kafka's order (``kafka_order``)."""
        out: dict[str, str] = {}
        for s in kafka_order(self.subtopologies):
            for name in s.input_topics():
                out[name] = s.subtopology_id
        return out


def _java_hash_positions(keys: list[str]) -> list[int]:
    """The positions of distinct ``keys`` (in insertion order) in the order a Java ``HashMap`` /
    ``HashSet`` built by inserting them one by one iterates them: bucket by bucket, a key's
    bucket being its ``String.hashCode`` spread (``h ^ h >>> 16``) masked by the table size (16,
    doubled while more than three quarters full); insertion order within a bucket."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(range(len(keys)), key=lambda i: (bucket(keys[i]), i))


def java_hash_order(keys: Iterable[str]) -> list[str]:
    """Distinct ``keys`` in a Java ``HashMap``'s iteration order (first insertion counts)."""
    distinct = list(dict.fromkeys(keys))
    return [distinct[i] for i in _java_hash_positions(distinct)]


def kafka_order(subtopologies: Iterable[Subtopology]) -> list[Subtopology]:
    """The subtopologies in the order Kafka iterates them: ``Collectors.toMap`` puts them in a
    ``HashMap`` by id, in list order (``java_hash_order``)."""
    subs = list(subtopologies)
    return [subs[i] for i in _java_hash_positions([s.subtopology_id for s in subs])]


# --- validation before the group is touched (spec §1.4 items 3 and 6) ----------------------------
def _topology_topic_names(topology: Topology) -> list[str]:
    """KafkaApis' ``requiredTopics`` of a request topology: per subtopology its source,
    repartition sink, repartition source and changelog topics, each name once, in that order."""
    names: dict[str, None] = {}
    for s in topology.subtopologies:
        for name in (*s.source_topics, *s.repartition_sink_topics,
                     *(t.name for t in s.repartition_source_topics),
                     *(t.name for t in s.state_changelog_topics)):
            names.setdefault(name, None)
    return list(names)


def _is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except InvalidTopicName:
        return False
    return True


def validate_topic_names(topology: Topology) -> None:
    """KafkaApis' checks of a heartbeat's topology (§1.4 item 3): STREAMS_INVALID_TOPOLOGY for
    Kafka-internal topics, then for invalid topic names (names in topology order)."""
    names = _topology_topic_names(topology)
    prohibited = [n for n in names if n in INTERNAL_TOPICS]
    if prohibited:
        raise CoordinatorError(
            ErrorCode.streams_invalid_topology,
            f"Use of Kafka internal topics {','.join(prohibited)} in a Kafka Streams topology "
            "is prohibited.")
    invalid = [n for n in names if not _is_valid_topic_name(n)]
    if invalid:
        raise CoordinatorError(
            ErrorCode.streams_invalid_topology,
            f"Topic names {','.join(invalid)} are not valid topic names.")


def validate_changelog_partitions(topology: Topology) -> None:
    """The coordinator's check of a joining member's topology (§1.4 item 6): a changelog topic
    must leave its partition count undefined (0)."""
    for s in topology.subtopologies:
        for t in s.state_changelog_topics:
            if t.partitions != 0:
                raise CoordinatorError(
                    ErrorCode.streams_invalid_topology,
                    f"Changelog topic {t.name} must have an undefined partition count, but it "
                    f"is set to {t.partitions}.")


def validate(topology: Topology) -> None:
    """Both checks, in Kafka's order. Kafka runs the INVALID_REQUEST checks of §1.4 items 5
    and 6 between them; a handler that wants that exact order calls the two parts itself."""
    validate_topic_names(topology)
    validate_changelog_partitions(topology)


# --- the configured topology ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class InternalTopic:
    """An internal topic to create (Kafka's ``CreatableTopic``): ``replication_factor`` -1
    means the broker default (the topology said 0 or -1)."""

    name: str
    partitions: int
    replication_factor: int = -1
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ConfiguredSubtopology:
    """A subtopology with its partition counts decided.

    ``repartition_source_topics`` / ``state_changelog_topics`` are ``TopicInfo`` with the
    decided partition count, the replication factor as the topology gave it and the configs by
    key (StreamsGroupDescribe shows them so). ``input_partitions`` is every source and
    repartition source topic with its partition count as configured (actual if the topic exists,
    else decided); a task p reads partition p of each input that has more than p partitions."""

    subtopology_id: str
    num_tasks: int
    source_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    input_partitions: Mapping[str, int]

    @property
    def stateful(self) -> bool:
        """Kafka's ``TopologyMetadata.isStateful``: the subtopology has a changelog topic."""
        return bool(self.state_changelog_topics)

    def input_topics(self) -> tuple[str, ...]:
        return tuple(self.input_partitions)


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """The outcome of ``configure`` (in memory only). ``subtopologies`` (by id, in id order) is
    present when the topology is ready or only internal topics are missing; ``status`` is None
    when ready, else the heartbeat's (code, detail)."""

    topology_epoch: int
    subtopologies: Mapping[str, ConfiguredSubtopology] | None
    internal_topics_to_create: tuple[InternalTopic, ...] = ()
    status: Status | None = None
    metadata_hash: int = 0

    @property
    def is_ready(self) -> bool:
        return self.status is None

    def subtopology(self, subtopology_id: str) -> ConfiguredSubtopology | None:
        return None if self.subtopologies is None else self.subtopologies.get(subtopology_id)

    def number_of_tasks(self, subtopology_id: str) -> int:
        """The subtopology's task count; 0 if it is unknown or the topology not configured."""
        sub = self.subtopology(subtopology_id)
        return 0 if sub is None else sub.num_tasks


def summarize(topics: Iterable[str]) -> str:
    """Kafka's ``summarizeTopics``: up to three names, then how many more; ``<none>``."""
    names = list(topics)
    if not names:
        return "<none>"
    text = ", ".join(names[:3])
    if len(names) > 3:
        text += f" and {len(names) - 3} additional topics"
    return text


class _TopicConfigurationError(Exception):
    """Kafka's ``TopicConfigurationException``: the topology is not ready (a status)."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(detail)
        self.status: Status = (code, detail)


def _invalid(message: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.streams_invalid_topology, message)


def _internal() -> CoordinatorError:
    """What Kafka answers for an IllegalStateException / IllegalArgumentException while
    configuring: UNKNOWN_SERVER_ERROR without a message."""
    return CoordinatorError(ErrorCode.unknown_server_error)


def _java_map(counts: Mapping[str, int]) -> str:
    """``TreeMap.toString``: ``{a=1, b=2}``."""
    return "{" + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)) + "}"


class _Counts:
    """Kafka's ``topicPartitionCountProvider``: a topic's actual partition count if it exists,
    else the count decided for it so far."""

    def __init__(self, topics: TopicLookup) -> None:
        self.topics = topics
        self.decided: dict[str, int] = {}

    def get(self, name: str) -> int | None:
        topic = self.topics.topic(name)
        if topic is not None:
            return topic.partitions
        return self.decided.get(name)

    def require(self, name: str) -> int:
        count = self.get(name)
        if count is None:
            raise _internal()
        return count


def _check_missing_source_topics(topology: Topology, topics: TopicLookup) -> None:
    missing = sorted({name for s in topology.subtopologies for name in s.source_topics
                      if topics.topic(name) is None})
    if missing:
        raise _TopicConfigurationError(MISSING_SOURCE_TOPICS,
                                       f"Source topics {summarize(missing)} are missing.")


def _repartition_counts(subs: list[Subtopology], counts: _Counts) -> dict[str, int]:
    """``RepartitionTopics.setup``: fixed counts first, then each repartition sink topic gets
    the largest input of the subtopology writing it, repeated until all are decided."""
    decided: dict[str, int] = {}
    for s in subs:
        for t in s.repartition_source_topics:
            if t.partitions != 0:
                decided[t.name] = t.partitions

    def writer_inputs(s: Subtopology) -> int | None:
        best: int | None = None
        for t in s.repartition_source_topics:
            candidate = decided.get(t.name)
            if candidate is not None and (best is None or candidate > best):
                best = candidate
        for name in s.source_topics:
            actual = counts.get(name)
            if actual is not None and (best is None or actual > best):
                best = actual
        return best

    while True:
        needed = False
        progress = False
        for s in subs:
            for sink in s.repartition_sink_topics:
                if sink in decided:
                    continue
                count = writer_inputs(s)
                if count is None:
                    needed = True
                else:
                    decided[sink] = count
                    progress = True
        if needed and not progress:
            raise _invalid("Failed to compute number of partitions for all repartition topics. "
                           "There may be loops in the topology that cannot be resolved.")
        if not needed:
            break

    for s in subs:
        if any(t.name not in decided for t in s.repartition_source_topics):
            raise _invalid("Failed to compute number of partitions for all repartition topics, "
                           "because a repartition source topic is never used as a sink topic.")
    return decided


def _copartition_sets(s: Subtopology) -> list[list[str]]:
    """The subtopology's co-partition groups as Kafka's ``HashSet`` of names (in its order)."""
    out = []
    for group in s.copartition_groups:
        names: list[str] = []
        for i in group.source_topics:
            if not 0 <= i < len(s.source_topics):
                raise _internal()  # Kafka: IndexOutOfBoundsException
            names.append(s.source_topics[i])
        for i in group.repartition_source_topics:
            if not 0 <= i < len(s.repartition_source_topics):
                raise _internal()
            names.append(s.repartition_source_topics[i].name)
        out.append(java_hash_order(names))
    return out


def _enforce_copartitioning(group: list[str], fixed: set[str], flexible: set[str],
                            counts: _Counts) -> dict[str, int]:
    """``CopartitionedTopicsEnforcer.enforce`` for one co-partition group."""
    if not group:
        return {}
    repartition = {t: counts.require(t) for t in group if t in fixed or t in flexible}
    others = {t: counts.require(t) for t in group if t not in repartition}

    if not others:
        if fixed:
            # Every fixed repartition topic of the whole topology must agree.
            fixed_counts = {counts.require(t) for t in fixed}
            if len(fixed_counts) > 1:
                raise _TopicConfigurationError(
                    INCORRECTLY_PARTITIONED_TOPICS,
                    "Following topics do not have the same number of partitions: "
                    f"[{_java_map(repartition)}]")
            target = fixed_counts.pop()
        else:
            target = max(repartition.values(), default=0)
            if target <= 0:
                # Kafka prints the key set of a HashMap filled in the group's order
                raise _invalid("All topics in the copartition group had undefined partition "
                               f"number: [{', '.join(java_hash_order(repartition))}]")
    else:
        if len(set(others.values())) > 1:
            raise _TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                "Following topics do not have the same number of partitions: "
                f"[{_java_map(others)}]")
        target = next(iter(others.values()))

    for name in java_hash_order(repartition):
        if name in fixed and repartition[name] != target:
            raise _TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{repartition[name]}] of repartition topic [{name}] "
                f"doesn't match number of partitions [{target}] of the source topic.")
    return dict.fromkeys(repartition, target)


def _changelog_counts(subs: list[Subtopology], counts: _Counts) -> dict[str, int]:
    """``ChangelogTopics.setup``: a changelog topic has one partition per task."""
    out: dict[str, int] = {}
    for s in subs:
        inputs = [counts.require(name) for name in s.input_topics()]
        if not inputs:
            raise _invalid(f"No source topics found for subtopology {s.subtopology_id}")
        for t in s.state_changelog_topics:
            out[t.name] = max(inputs)
    return out


def _decide_partition_counts(subs: list[Subtopology], counts: _Counts) -> None:
    counts.decided.update(_repartition_counts(subs, counts))

    fixed = {t.name for s in subs for t in s.repartition_source_topics if t.partitions != 0}
    flexible = {t.name for s in subs for t in s.repartition_source_topics if t.partitions == 0}
    for s in subs:
        for group in _copartition_sets(s):
            counts.decided.update(_enforce_copartitioning(group, fixed, flexible, counts))

    counts.decided.update(_changelog_counts(subs, counts))


def _configured_topic(info: TopicInfo, counts: _Counts) -> TopicInfo:
    if info.partitions != 0:
        partitions = info.partitions
    elif info.name in counts.decided:
        partitions = counts.decided[info.name]
    else:
        raise _internal()
    if partitions < 1:
        raise _internal()
    return TopicInfo(info.name, partitions, info.replication_factor,
                     tuple(sorted(dict(info.configs).items())))


def _configured_topics(infos: tuple[TopicInfo, ...], counts: _Counts) -> tuple[TopicInfo, ...]:
    if len({t.name for t in infos}) != len(infos):
        raise _internal()  # Kafka's Collectors.toMap: duplicate key
    return tuple(_configured_topic(t, counts) for t in infos)


def _configure_subtopology(s: Subtopology, counts: _Counts) -> ConfiguredSubtopology:
    inputs = {name: counts.require(name) for name in s.input_topics()}
    num_tasks = max(inputs.values(), default=0)
    if num_tasks <= 0:
        raise _internal()
    return ConfiguredSubtopology(
        subtopology_id=s.subtopology_id,
        num_tasks=num_tasks,
        source_topics=s.source_topics,
        repartition_source_topics=_configured_topics(s.repartition_source_topics, counts),
        repartition_sink_topics=s.repartition_sink_topics,
        state_changelog_topics=_configured_topics(s.state_changelog_topics, counts),
        input_partitions=MappingProxyType(inputs),
    )


def _to_create(info: TopicInfo) -> InternalTopic:
    rf = info.replication_factor if info.replication_factor != 0 else -1
    return InternalTopic(info.name, info.partitions, rf, info.configs)


def _missing_internal_topics(subtopologies: Mapping[str, ConfiguredSubtopology],
                             topology: Topology, topics: TopicLookup) -> list[InternalTopic]:
    candidates: dict[str, InternalTopic] = {}
    for sub in subtopologies.values():
        for info in (*sub.repartition_source_topics, *sub.state_changelog_topics):
            candidates[info.name] = _to_create(info)
    # Kafka walks ``requiredTopics()``, a HashSet filled subtopology by subtopology
    required = [name for sub in kafka_order(topology.subtopologies) for name in sub.input_topics()
                + tuple(t.name for t in sub.state_changelog_topics)]
    for name in java_hash_order(required):
        existing = topics.topic(name)
        if existing is None:
            continue
        expected = candidates.pop(name, None)
        if expected is not None and existing.partitions != expected.partitions:
            raise _TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {name} has different number of partitions: expected "
                f"{expected.partitions}, found {existing.partitions}")
    return [candidates[name] for name in sorted(candidates)]


def configure(topology: Topology, topics: TopicLookup, *,
              metadata_hash: int = 0) -> ConfiguredTopology:
    """Configure ``topology`` against ``topics`` (Kafka's ``configureTopics``).

    Returns the configured topology, ready or with a status; raises STREAMS_INVALID_TOPOLOGY
    when the repartition counts cannot be decided or a co-partition group has no defined count,
    UNKNOWN_SERVER_ERROR (no message) where Kafka fails on an internal check (duplicate
    subtopology ids, co-partition indexes out of range, partition counts below 1).
    ``metadata_hash`` is kept on the result, as Kafka keeps the hash it configured against."""
    if topology.has_duplicate_ids():
        raise _internal()
    counts = _Counts(topics)
    try:
        _check_missing_source_topics(topology, topics)
        _decide_partition_counts(kafka_order(topology.subtopologies), counts)
        ordered = sorted(topology.subtopologies, key=lambda s: s.subtopology_id)
        subtopologies = MappingProxyType(
            {s.subtopology_id: _configure_subtopology(s, counts) for s in ordered})
        missing = _missing_internal_topics(subtopologies, topology, topics)
    except _TopicConfigurationError as exc:
        return ConfiguredTopology(topology.epoch, None, (), exc.status, metadata_hash)
    status = None
    if missing:
        status = (MISSING_INTERNAL_TOPICS,
                  f"Internal topics are missing: {summarize(t.name for t in missing)}")
    return ConfiguredTopology(topology.epoch, subtopologies, tuple(missing), status,
                              metadata_hash)


# --- the metadata hash ---------------------------------------------------------------------------
def metadata_hash(topology: Topology | None, topics: TopicLookup) -> int:
    """A signed 64-bit hash of the required topics that exist (id, name, partition count), in
    name order; 0 if none exists. Deterministic across processes (BLAKE2b), not Kafka's XXH3."""
    if topology is None:
        return 0
    digest = hashlib.blake2b(digest_size=8)
    found = False
    for name in sorted(topology.required_topics()):
        topic = topics.topic(name)
        if topic is None:
            continue
        found = True
        encoded = name.encode()
        digest.update(b"\x00" + topic.topic_id.bytes + struct.pack(">I", len(encoded))
                      + encoded + struct.pack(">i", topic.partitions))
    if not found:
        return 0
    return int.from_bytes(digest.digest(), "big", signed=True)


# --- endpoints (interactive queries) -------------------------------------------------------------
def endpoint_partitions(configured: ConfiguredTopology | None,
                        tasks: Mapping[str, Iterable[int]],
                        topics: TopicLookup) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The topic partitions behind ``tasks`` (EndpointToPartitionsManager): for each task
    subtopology (id order), each of its input topics (name order) with the task partitions
    below the topic's current partition count. Unlike Kafka, which fails on them, an
    unconfigured topology, an unknown subtopology or a topic absent from the metadata
    contribute nothing."""
    out: list[tuple[str, tuple[int, ...]]] = []
    if configured is None:
        return ()
    for subtopology_id in sorted(tasks):
        sub = configured.subtopology(subtopology_id)
        if sub is None:
            continue
        partitions = sorted(set(tasks[subtopology_id]))
        for name in sorted(set(sub.input_topics())):
            topic = topics.topic(name)
            if topic is None:
                continue
            owned = tuple(p for p in partitions if p < topic.partitions)
            if owned:
                out.append((name, owned))
    return tuple(out)


# --- StreamsGroupDescribe ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DescribedSubtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    repartition_source_topics: tuple[TopicInfo, ...]


@dataclass(frozen=True, slots=True)
class DescribedTopology:
    epoch: int
    subtopologies: tuple[DescribedSubtopology, ...]


def _by_name(infos: Iterable[TopicInfo]) -> tuple[TopicInfo, ...]:
    return tuple(sorted(infos, key=lambda t: t.name))


def describe_view(topology: Topology, configured: ConfiguredTopology | None) -> DescribedTopology:
    """What StreamsGroupDescribe shows (§7): the configured view when it is ready (decided
    partition counts; source and sink names deduplicated), else the stored topology as sent;
    either way subtopologies by id, names and topic infos sorted by name. The replication
    factor is shown as the topology gave it (0 = default)."""
    if configured is not None and configured.is_ready and configured.subtopologies is not None:
        return DescribedTopology(configured.topology_epoch, tuple(
            DescribedSubtopology(
                subtopology_id=sid,
                source_topics=tuple(sorted(set(sub.source_topics))),
                repartition_sink_topics=tuple(sorted(set(sub.repartition_sink_topics))),
                state_changelog_topics=_by_name(sub.state_changelog_topics),
                repartition_source_topics=_by_name(sub.repartition_source_topics),
            )
            for sid, sub in sorted(configured.subtopologies.items())))
    return DescribedTopology(topology.epoch, tuple(
        DescribedSubtopology(
            subtopology_id=s.subtopology_id,
            source_topics=tuple(sorted(s.source_topics)),
            repartition_sink_topics=tuple(sorted(s.repartition_sink_topics)),
            state_changelog_topics=_by_name(s.state_changelog_topics),
            repartition_source_topics=_by_name(s.repartition_source_topics),
        )
        for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id)))
