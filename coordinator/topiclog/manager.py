"""Every topic partition's log, kept in step with the metadata image.

A created topic (or added partition) gets its logs at once; a deleted topic's logs are removed.
On start, a partition directory whose ``partition.metadata`` names a topic id the image no longer
has (the topic was deleted, or deleted and re-created) is removed.

Flush policy (``coordinator.log.flush.interval.ms``, shared with the coordinator's store): 0
means an ``acks=-1`` produce is answered after its records are fsynced; above 0, logs are fsynced
by a background task that often and acks=-1 does not wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from coordinator.config import ServerConfig
from coordinator.metadata.image import ChangeKind, MetadataImage, TopicChange, TopicImage
from coordinator.metadata.topic_configs import effective
from coordinator.metadata.topic_names import INTERNAL_TOPICS
from coordinator.observability.logs import get_logger
from coordinator.runtime.clock import Clock, SystemClock
from protocol import ErrorCode

from . import cleaner
from .internal import InternalPartitionLog, internal_log
from .partition import (
    LogConfig,
    PartitionLog,
    delete_directory,
    kafka_uuid,
    read_partition_topic_id,
)
from .producers import ProducerIdManager

log = get_logger("coordinator.topiclog")

PARTITIONS_PER_TURN = 100  # a pass over every partition yields to the loop this often (~1 ms)
_PARTITION_DIR_RE = re.compile(r"^(.+)-(\d+)$")


async def _either(first: asyncio.Event, second: asyncio.Event, timeout_s: float) -> bool:
    waits = [asyncio.ensure_future(first.wait()), asyncio.ensure_future(second.wait())]
    done, pending = await asyncio.wait(waits, timeout=timeout_s,
                                       return_when=asyncio.FIRST_COMPLETED)
    for wait in pending:
        wait.cancel()
    return bool(done)


class TopicLogs:
    def __init__(self, log_dir: Path, image: MetadataImage, config: ServerConfig,
                 clock: Clock | None = None) -> None:
        self.log_dir = log_dir
        self.image = image
        self.config = config
        self.clock = clock or SystemClock()
        self.flush_interval_ms: int = config["coordinator.log.flush.interval.ms"]
        self.producer_ids = ProducerIdManager(log_dir)
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self.runtime: Any = None
        """The coordinator runtime, whose store the internal topics are read from."""
        self._appended: asyncio.Event | None = None
        self._internal_appended: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._remove_stale_directories()
        for topic in image.topics():
            self._open_partitions(topic, 0)
        self._unsubscribe = image.subscribe(self._on_change)

    # ------------------------------------------------------------------ metadata changes
    def _remove_stale_directories(self) -> None:
        live = {kafka_uuid(t.topic_id): t for t in self.image.topics()}
        for entry in self.log_dir.iterdir():
            m = _PARTITION_DIR_RE.match(entry.name)
            if not entry.is_dir() or m is None:
                continue
            if entry.name.endswith("-delete"):
                delete_directory(entry)
                continue
            topic_id = read_partition_topic_id(entry)
            if topic_id is None:
                continue  # not a topic log of ours (the coordinator's store, for one)
            topic = live.get(topic_id)
            if topic is None or topic.name != m.group(1) or int(m.group(2)) >= topic.partitions:
                log.info("removing the log of a deleted topic", directory=str(entry))
                delete_directory(entry)

    def _open_partitions(self, topic: TopicImage, first: int) -> None:
        if topic.is_internal:
            return
        for partition in range(first, topic.partitions):
            directory = self.log_dir / f"{topic.name}-{partition}"
            self._logs[(topic.name, partition)] = PartitionLog.open(
                directory, topic.name, partition, topic.topic_id)

    def _on_change(self, change: TopicChange) -> None:
        topic = change.topic
        if change.kind is ChangeKind.CREATED:
            self._open_partitions(topic, 0)
        elif change.kind is ChangeKind.PARTITIONS_ADDED:
            first = change.previous.partitions if change.previous else 0
            self._open_partitions(topic, first)
        elif change.kind is ChangeKind.DELETED:
            for partition in range(topic.partitions):
                plog = self._logs.pop((topic.name, partition), None)
                if plog is not None:
                    plog.delete()
            log.info("topic logs deleted", topic=topic.name, partitions=topic.partitions)

    # ------------------------------------------------------------------ reads
    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def readable(self, topic: str, partition: int) -> PartitionLog | InternalPartitionLog | None:
        """What Fetch and ListOffsets read: a data topic's log, or an internal topic's
        partition served from the coordinator store (None while it loads)."""
        plog = self._logs.get((topic, partition))
        if plog is not None or topic not in INTERNAL_TOPICS:
            return plog
        view = internal_log(self.runtime, topic, partition)
        return view if view is not None and view.available else None

    def unreadable(self, topic: str, partition: int) -> ErrorCode:
        """Why :meth:`readable` gave None: an internal topic's partition that exists but is
        not served yet (its coordinator partition loads) is NOT_LEADER_OR_FOLLOWER, as Kafka's
        broker answers for a partition the metadata has and the broker does not host (clients
        retry it); anything else is UNKNOWN_TOPIC_OR_PARTITION."""
        if internal_log(self.runtime, topic, partition) is not None:
            return ErrorCode.not_leader_or_follower
        return ErrorCode.unknown_topic_or_partition

    def log_end_offset(self, topic: str, partition: int) -> int | None:
        """The log end offset (= high watermark) of a partition, or None if it has no log."""
        plog = self._logs.get((topic, partition))
        return None if plog is None else plog.log_end_offset

    def log_offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(log start offset, log end offset) of a partition, or None if it has no log."""
        plog = self._logs.get((topic, partition))
        return None if plog is None else (plog.log_start_offset, plog.log_end_offset)

    def log_end_offsets(self, topic: str) -> Mapping[int, int]:
        """Log end offset of each partition of ``topic`` that has a log."""
        return {p: plog.log_end_offset for (t, p), plog in self._logs.items() if t == topic}

    def log_config(self, topic: TopicImage) -> LogConfig:
        def setting(name: str) -> Any:
            return effective(name, topic.configs, self.config)

        return LogConfig(
            segment_bytes=setting("segment.bytes"),
            retention_ms=setting("retention.ms"),
            retention_bytes=setting("retention.bytes"),
            log_append_time=setting("message.timestamp.type") == "LogAppendTime",
            max_message_bytes=setting("max.message.bytes"),
            min_insync_replicas=setting("min.insync.replicas"),
            segment_ms=setting("segment.ms"),
            delete="delete" in setting("cleanup.policy"),
            compact="compact" in setting("cleanup.policy"),
            delete_retention_ms=setting("delete.retention.ms"),
            min_cleanable_dirty_ratio=setting("min.cleanable.dirty.ratio"),
        )

    # ------------------------------------------------------------------ appends and waiters
    def notify_appended(self) -> None:
        if self._appended is not None:
            self._appended.set()
            self._appended = None

    def notify_internal_appended(self) -> None:
        """Records of the coordinator store became durable: readable in the internal topics."""
        if self._internal_appended is not None:
            self._internal_appended.set()
            self._internal_appended = None

    async def wait_for_append(self, timeout_s: float, internal: bool = False) -> bool:
        """Wait until the next append to any partition (or, with ``internal``, records of the
        internal topics becoming readable), for at most ``timeout_s``."""
        if timeout_s <= 0:
            return False
        if self._appended is None:
            self._appended = asyncio.Event()
        event = self._appended
        if internal:
            if self._internal_appended is None:
                self._internal_appended = asyncio.Event()
            return await _either(event, self._internal_appended, timeout_s)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await event.wait()
                return True
        return False

    async def make_durable(self, plog: PartitionLog, upto: int) -> None:
        """What acks=-1 waits for: the fsync, unless the flush policy batches fsyncs."""
        if self.flush_interval_ms == 0:
            await plog.sync(upto)

    def now_ms(self) -> int:
        return self.clock.now_ms()

    # ------------------------------------------------------------------ background work
    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self._retention_loop()))
        if self.config["log.cleaner.enable"]:
            self._tasks.append(asyncio.create_task(self._cleaner_loop()))
        if self.flush_interval_ms > 0:
            self._tasks.append(asyncio.create_task(self._flush_loop()))

    def _retention_pass(self) -> Iterator[int]:
        """One retention pass over every partition, ``PARTITIONS_PER_TURN`` partitions at a time
        (each topic's settings read once): yields the segments deleted by each slice."""
        now = self.now_ms()
        configs: dict[str, LogConfig | None] = {}
        deleted = 0
        for i, ((name, _), plog) in enumerate(list(self._logs.items()), start=1):
            if name not in configs:
                topic = self.image.topic(name)
                configs[name] = None if topic is None else self.log_config(topic)
            config = configs[name]
            if config is not None and not plog.closed:
                deleted += plog.delete_old_segments(now, config)
            if i % PARTITIONS_PER_TURN == 0:
                yield deleted
                deleted = 0
        yield deleted

    def enforce_retention(self) -> int:
        return sum(self._retention_pass())

    async def _retention_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config["log.retention.check.interval.ms"] / 1000.0)
            try:
                for _ in self._retention_pass():
                    await asyncio.sleep(0)  # 50,000 partitions must not stop the event loop
            except OSError:
                log.exception("retention failed")

    async def clean_logs(self) -> int:
        """One pass of the log cleaner over every compacted partition that needs it; returns
        how many were cleaned."""
        now = self.now_ms()
        cleaned = 0
        configs: dict[str, LogConfig | None] = {}
        for i, ((name, _), plog) in enumerate(list(self._logs.items()), start=1):
            if i % PARTITIONS_PER_TURN == 0:
                await asyncio.sleep(0)
            if name not in configs:
                topic = self.image.topic(name)
                configs[name] = None if topic is None else self.log_config(topic)
            config = configs[name]
            if config is None or not config.compact or plog.closed:
                continue
            try:
                if await cleaner.clean(plog, config, now,
                                       self.config["log.cleaner.dedupe.buffer.size"]) is not None:
                    cleaned += 1
            except OSError:
                log.exception("topic log cleaning failed", topic=plog.topic,
                              partition=plog.partition)
        return cleaned

    async def _cleaner_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config["log.cleaner.backoff.ms"] / 1000.0)
            await self.clean_logs()

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval_ms / 1000.0)
            for i, plog in enumerate(list(self._logs.values()), start=1):
                if i % PARTITIONS_PER_TURN == 0:
                    await asyncio.sleep(0)  # a pass over 50,000 partitions takes turns
                if plog.dirty and not plog.closed:
                    try:
                        await plog.sync(plog.log_end_offset)
                    except OSError:
                        log.exception("topic log flush failed", topic=plog.topic,
                                      partition=plog.partition)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for plog in list(self._logs.values()):
            if plog.dirty and not plog.closed:  # logs with nothing unsynced are not reopened
                with contextlib.suppress(OSError):
                    await plog.sync(plog.log_end_offset)
        self.close()

    def close(self) -> None:
        self._unsubscribe()
        for plog in self._logs.values():
            plog.close()
