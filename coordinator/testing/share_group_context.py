"""A virtual-time context for share group handler tests: ``ShardContext`` (a shard, a manual
clock, records replayed through the codec) with topics, a data plane of record batches, and
the share group handlers at hand. No asyncio, no files."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.groups.share import env as share_env
from coordinator.groups.share.env import ShareGroupEnv, ShareGroupSettings
from coordinator.groups.share.fetch import (
    FetchRequest,
    FetchResult,
    PartitionRequest,
    acknowledge,
    acquire_more,
    fetch,
)
from coordinator.groups.share.heartbeat import HeartbeatRequest, HeartbeatResponse, heartbeat
from coordinator.groups.share.model import ShareGroup
from coordinator.groups.share.partition import SharePartition

from .consumer_group_context import ManualOffloader, Topic, Topics
from .shard_context import ShardContext


@dataclass(slots=True)
class _Log:
    start: int = 0
    batches: list[tuple[int, int]] | None = None

    @property
    def end(self) -> int:
        return self.batches[-1][1] + 1 if self.batches else self.start


RECORD_BYTES = 10
"""What one record weighs in a batch here (for byte limits)."""


class Logs:
    """The data plane as share partitions see it: record batches per partition, of
    ``RECORD_BYTES`` bytes a record."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], _Log] = {}

    def produce(self, topic: str, partition: int, records: int) -> tuple[int, int]:
        """Append one batch of ``records`` records; its (base, last) offsets."""
        log = self.logs.setdefault((topic, partition), _Log(batches=[]))
        assert log.batches is not None
        base = log.end
        log.batches.append((base, base + records - 1))
        return base, base + records - 1

    def offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        log = self.logs.get((topic, partition))
        return None if log is None else (log.start, log.end)

    def batches(self, topic: str, partition: int, offset: int, max_records: int,
                max_bytes: int) -> list[tuple[int, int]]:
        log = self.logs.get((topic, partition))
        out: list[tuple[int, int]] = []
        size = 0
        for base, last in (log.batches or []) if log else []:
            if last < offset:
                continue
            size += (last - base + 1) * RECORD_BYTES
            if out and size > max_bytes:  # the first batch comes whatever its size (KIP-74)
                break
            out.append((base, last))
            if last >= offset + max_records - 1:
                break
        return out

    def read(self, topic: str, partition: int, first: int, last: int) -> bytes:
        return f"{topic}-{partition}:{first}-{last}".encode()


class ShareGroupContext(ShardContext):
    def __init__(self, settings: ShareGroupSettings | None = None, *, now_ms: int = 1_000_000,
                 overrides: Mapping[str, Any] | None = None, offload: bool = False) -> None:
        super().__init__(overrides, now_ms=now_ms)
        self.topics = Topics()
        self.logs = Logs()
        self.offloader = ManualOffloader() if offload else None
        self.env = ShareGroupEnv(settings or ShareGroupSettings(assignment_interval_ms=0,
                                                                assignor_offload=False),
                                 self.topics, self.logs, self.offloader)
        share_env.install(self.env)  # the load hooks read the installed environment

    # --- topics and records ------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        topic_id = uuid.UUID(int=len(self.topics.by_name) + 1)
        self.topics.by_name[name] = Topic(name, topic_id, partitions)
        for p in range(partitions):
            self.logs.logs.setdefault((name, p), _Log(batches=[]))
        return topic_id

    def add_partitions(self, name: str, partitions: int) -> None:
        old = self.topics.by_name[name]
        self.topics.by_name[name] = Topic(name, old.topic_id, partitions)
        for p in range(partitions):
            self.logs.logs.setdefault((name, p), _Log(batches=[]))

    def topic_id(self, name: str) -> uuid.UUID:
        return self.topics.by_name[name].topic_id

    # --- requests ----------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, epoch: int,
                  topics: Sequence[str] | None = None) -> HeartbeatResponse:
        request = HeartbeatRequest(group_id, member_id, epoch, subscribed_topic_names=topics)
        response: HeartbeatResponse = self.run(
            lambda shard, now: heartbeat(shard, now, self.env, request))
        return response

    def fetch(self, group_id: str, member_id: str, epoch: int,
              partitions: Sequence[PartitionRequest] = (), *, max_records: int = 500,
              batch_size: int = 500, max_bytes: int = 2**31 - 1,
              forgotten: Sequence[tuple[uuid.UUID, int]] = ()) -> FetchResult:
        request = FetchRequest(group_id, member_id, epoch, max_records, batch_size, max_bytes,
                               partitions=tuple(partitions), forgotten=tuple(forgotten))
        result: FetchResult = self.run(lambda shard, now: fetch(shard, now, self.env, request))
        return result

    def fetch_again(self, group_id: str, member_id: str, epoch: int) -> FetchResult:
        """A waiting fetch tries again; ``epoch`` is the session's epoch after the fetch."""
        request = FetchRequest(group_id, member_id, epoch - 1)
        result: FetchResult = self.run(
            lambda shard, now: acquire_more(shard, now, self.env, request, epoch))
        return result

    def acknowledge(self, group_id: str, member_id: str, epoch: int,
                    partitions: Sequence[PartitionRequest]) -> FetchResult:
        request = FetchRequest(group_id, member_id, epoch, 0, 1, partitions=tuple(partitions))
        result: FetchResult = self.run(
            lambda shard, now: acknowledge(shard, now, self.env, request))
        return result

    # --- state -------------------------------------------------------------------------------
    def group(self, group_id: str) -> ShareGroup:
        group = self.shard.groups[group_id]
        assert isinstance(group, ShareGroup)
        return group

    def share_partition(self, group_id: str, topic: str, partition: int) -> SharePartition:
        sp: SharePartition = self.shard.share_partitions[group_id][(self.topic_id(topic),
                                                                     partition)]
        return sp

    def restarted(self, *, advance_ms: int = 0) -> ShareGroupContext:
        """The shard rebuilt from the records written here (a server restart)."""
        other = ShareGroupContext(self.env.settings, now_ms=self.now + advance_ms,
                                  overrides=self.overrides)
        other.topics, other.logs = self.topics, self.logs
        other.keep_group_configs(self)
        other.env.topics, other.env.logs = self.topics, self.logs
        for record in self.written:
            other.shard.replay(record.offset, record.key, record.value)
            other.written.append(record)
        other.load()
        return other
