"""What the handlers of a group type need besides the shard (broker settings, topics, the
offloader...) is its environment; the app installs one per type before partitions load, and
load hooks and timers read the installed one. ``Installed`` holds it; ``TopicLookup`` is the
part of ``MetadataImage`` handlers read."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from assignors import PartitionAssignor, get_assignor

E = TypeVar("E")


class TopicLookup(Protocol):
    """The part of ``MetadataImage`` the handlers read."""

    def topic(self, name: str) -> Any: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> Any: ...


class NoTopics:
    """A metadata image without topics (an environment made before the app installs one)."""

    def topic(self, name: str) -> Any:
        return None

    def topic_by_id(self, topic_id: uuid.UUID) -> Any:
        return None


class Installed(Generic[E]):
    """A group type's installed environment; ``default()`` makes one while none is."""

    def __init__(self, default: Callable[[], E]) -> None:
        self._default = default
        self.env: E | None = None

    def install(self, env: E) -> None:
        """Make ``env`` the one load hooks and timers use (the app calls this before
        partitions load)."""
        self.env = env

    def installed(self) -> E:
        return self.env or self._default()

    def env_for(self, broker: Any, make: Callable[[Any], E]) -> E:
        """The installed environment, or ``make(broker)`` (and installed) if none is."""
        if self.env is None:
            self.env = make(broker)
        return self.env


def cached_assignor(cache: dict[str, PartitionAssignor], name: str) -> PartitionAssignor:
    """The server assignor ``name``, made once per environment (``cache``)."""
    found = cache.get(name)
    if found is None:
        found = cache[name] = get_assignor(name)
    return found
