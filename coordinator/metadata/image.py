"""The metadata image: every topic, its id and partition count, and who wants to hear of changes;
and the config resources the metadata log keeps (``configs``: GROUP and CLIENT_METRICS).

It is the one place topic metadata lives. Groups subscribe to changes (a topic created or
deleted, partitions added) to bump their epochs; the store (later) persists the same changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

from .config_resources import ConfigResources
from .topic_names import INTERNAL_TOPICS, unify_collision_chars


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class ChangeKind(Enum):
    CREATED = "created"
    DELETED = "deleted"
    PARTITIONS_ADDED = "partitions_added"


@dataclass(frozen=True, slots=True)
class TopicChange:
    kind: ChangeKind
    topic: TopicImage
    previous: TopicImage | None = None


Listener = Callable[[TopicChange], None]


class TopicExists(ValueError):
    pass


class TopicCollision(ValueError):
    pass


class MetadataImage:
    def __init__(self, topics: Iterable[TopicImage] = ()) -> None:
        self._by_name: dict[str, TopicImage] = {}
        self._by_id: dict[uuid.UUID, TopicImage] = {}
        self._unified: dict[str, str] = {}
        self._listeners: list[Listener] = []
        self.configs = ConfigResources()
        """The GROUP and CLIENT_METRICS config resources (their ConfigRecords replayed)."""
        for topic in topics:
            self._put(topic)

    # --- reads -------------------------------------------------------------------------------
    def topic(self, name: str) -> TopicImage | None:
        return self._by_name.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicImage | None:
        return self._by_id.get(topic_id)

    def topics(self) -> list[TopicImage]:
        return sorted(self._by_name.values(), key=lambda t: t.name)

    def __len__(self) -> int:
        return len(self._by_name)

    def colliding_topic(self, name: str) -> str | None:
        """The existing topic whose name collides with ``name`` ('.' vs '_'), if any."""
        existing = self._unified.get(unify_collision_chars(name))
        return existing if existing is not None and existing != name else None

    # --- listeners ---------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _publish(self, change: TopicChange) -> None:
        for listener in list(self._listeners):
            listener(change)

    # --- writes ------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                     topic_id: uuid.UUID | None = None) -> TopicImage:
        if name in self._by_name:
            raise TopicExists(f"Topic '{name}' already exists.")
        collision = self.colliding_topic(name)
        if collision is not None:
            raise TopicCollision(f"Topic '{name}' collides with existing topic: {collision}")
        topic = TopicImage(name, topic_id or uuid.uuid4(), partitions, dict(configs or {}))
        self._put(topic)
        self._publish(TopicChange(ChangeKind.CREATED, topic))
        return topic

    def delete_topic(self, name: str) -> TopicImage:
        topic = self._by_name.pop(name)
        del self._by_id[topic.topic_id]
        del self._unified[unify_collision_chars(name)]
        self._publish(TopicChange(ChangeKind.DELETED, topic))
        return topic

    def add_partitions(self, name: str, count: int) -> TopicImage:
        previous = self._by_name[name]
        if count <= previous.partitions:
            raise ValueError("partitions can only be added")
        topic = replace(previous, partitions=count)
        self._put(topic)
        self._publish(TopicChange(ChangeKind.PARTITIONS_ADDED, topic, previous))
        return topic

    def set_configs(self, name: str, configs: Mapping[str, str]) -> TopicImage:
        """Replace a topic's config overrides. Not published: the data plane reads a topic's
        configs on each append and retention pass, and groups do not depend on them."""
        topic = replace(self._by_name[name], configs=dict(configs))
        self._put(topic)
        return topic

    def _put(self, topic: TopicImage) -> None:
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self._unified[unify_collision_chars(topic.name)] = topic.name
