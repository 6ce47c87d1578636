"""What share group handlers need besides the shard: broker settings, topics, the assignor, the
offloader and the data plane's logs."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

from assignors import PartitionAssignor
from coordinator.groups.modern.env import Installed, NoTopics, TopicLookup, cached_assignor
from coordinator.groups.modern.settings import broker_configs


class ShareLogs(Protocol):
    """The part of the data plane share partitions read: offsets and record-batch bounds."""

    def offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(log start offset, log end offset), or None when the partition has no log."""

    def batches(self, topic: str, partition: int, offset: int, max_records: int,
                max_bytes: int) -> list[tuple[int, int]]:
        """(base offset, last offset) of the record batches from the one holding ``offset``,
        until they cover ``max_records`` offsets past it or ``max_bytes`` (or the log ends)."""

    def read(self, topic: str, partition: int, first: int, last: int) -> bytes:
        """The stored record batches holding offsets ``first`` to ``last``, whole."""


@dataclass(frozen=True, slots=True)
class ShareGroupSettings:
    """The broker's share group configs (Kafka's names and defaults)."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 200
    assignors: tuple[str, ...] = ("simple",)
    assignment_interval_ms: int = 1000
    assignor_offload: bool = True
    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2000
    max_share_sessions: int = 2000
    updates_per_snapshot: int = 500

    @classmethod
    def from_config(cls, config: Any) -> ShareGroupSettings:
        return cls(
            **broker_configs(config, "share"),
            assignors=tuple(config["group.share.assignors"]),
            record_lock_duration_ms=config["group.share.record.lock.duration.ms"],
            delivery_count_limit=config["group.share.delivery.count.limit"],
            partition_max_record_locks=config["group.share.partition.max.record.locks"],
            max_share_sessions=config["group.share.max.share.sessions"],
            updates_per_snapshot=config[
                "share.coordinator.snapshot.update.records.per.snapshot"],
        )

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]


class Wakeup:
    """An event that is set once and replaced: ``set`` wakes every current waiter; waiters
    that come later wait for the next ``set``."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None

    def set(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None

    def event(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
        return self._event


class _NoLogs:
    def offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        return None

    def batches(self, topic: str, partition: int, offset: int, max_records: int,
                max_bytes: int) -> list[tuple[int, int]]:
        return []

    def read(self, topic: str, partition: int, first: int, last: int) -> bytes:
        return b""


class DataPlaneLogs:
    """``ShareLogs`` over the data plane's topic logs (``coordinator.topiclog``)."""

    def __init__(self, logs: Any) -> None:
        self.logs = logs

    def offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        result: tuple[int, int] | None = self.logs.log_offsets(topic, partition)
        return result

    def batches(self, topic: str, partition: int, offset: int, max_records: int,
                max_bytes: int) -> list[tuple[int, int]]:
        plog = self.logs.get(topic, partition)
        if plog is None:
            return []
        bounds: list[tuple[int, int]] = plog.batch_bounds(offset, max_records, max_bytes)
        return bounds

    def read(self, topic: str, partition: int, first: int, last: int) -> bytes:
        plog = self.logs.get(topic, partition)
        data: bytes = b"" if plog is None else plog.read_range(first, last)
        return data


@dataclass(slots=True)
class ShareGroupEnv:
    settings: ShareGroupSettings = field(default_factory=ShareGroupSettings)
    topics: TopicLookup = field(default_factory=NoTopics)
    logs: ShareLogs = field(default_factory=_NoLogs)
    offloader: Any = None
    """Where offloaded assignor runs go (``common.offload.Offloader``); None runs inline."""
    released: Wakeup = field(default_factory=lambda: Wakeup())
    """Set when records become available again (released, lock expired): share fetches
    waiting for records wake up."""
    sessions: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)
    """Share sessions open on this node (``group.share.max.share.sessions`` bounds them). The
    shards hold them; a session goes from here with its shard (a reloaded partition)."""
    _assignors: dict[str, PartitionAssignor] = field(default_factory=dict)

    def assignor(self, name: str) -> PartitionAssignor:
        return cached_assignor(self._assignors, name)


_ENV: Installed[ShareGroupEnv] = Installed(ShareGroupEnv)
install = _ENV.install
installed = _ENV.installed


def env_for(broker: Any) -> ShareGroupEnv:
    """The installed environment, or one made from ``broker`` (and installed) if none is."""
    def make(broker: Any) -> ShareGroupEnv:
        from coordinator import topiclog

        return ShareGroupEnv(ShareGroupSettings.from_config(broker.config), broker.image,
                             DataPlaneLogs(topiclog.of(broker)))

    return _ENV.env_for(broker, make)
