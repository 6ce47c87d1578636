"""The storm benchmark's load generator side: an asyncio wire client speaking our codec, and
consumer-protocol members that heartbeat, reconcile at once, leave and rejoin.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import Sequence
from typing import Any

import protocol
from protocol import ErrorCode

from .wire import Wire, message

__all__ = ["Member", "Wire", "create_topics", "describe_group", "message", "set_group_configs",
           "topic_ids"]

HB_REQUEST = message("consumer_group_heartbeat", 1, "ConsumerGroupHeartbeatRequest")
HB_TOPIC = message("consumer_group_heartbeat", 1, "TopicPartitions")
DESCRIBE = message("consumer_group_describe", 1, "ConsumerGroupDescribeRequest")
CREATE = message("create_topics", 7, "CreateTopicsRequest")
CREATABLE = message("create_topics", 7, "CreatableTopic")
ALTER = message("incremental_alter_configs", 1, "IncrementalAlterConfigsRequest")
ALTER_RESOURCE = message("incremental_alter_configs", 1, "AlterConfigsResource")
ALTERABLE = message("incremental_alter_configs", 1, "AlterableConfig")
METADATA = message("metadata", 12, "MetadataRequest")
METADATA_TOPIC = message("metadata", 12, "MetadataRequestTopic")
GROUP_RESOURCE = 32


# ------------------------------------------------------------------------------ admin
async def create_topics(wire: Wire, names: Sequence[str], partitions: int,
                        batch: int = 100) -> None:
    for start in range(0, len(names), batch):
        topics = tuple(protocol.make(CREATABLE, name=n, num_partitions=partitions,
                                     replication_factor=1, assignments=(), configs=())
                       for n in names[start:start + batch])
        response, _ = await wire.request(protocol.make(
            CREATE, topics=topics, timeout=datetime.timedelta(seconds=60), validate_only=False))
        for topic in response.topics:
            if topic.error_code not in (ErrorCode.none, ErrorCode.topic_already_exists):
                raise RuntimeError(f"create {topic.name}: {topic.error_code!r}")


async def topic_ids(wire: Wire, names: Sequence[str]) -> dict[str, uuid.UUID]:
    response, _ = await wire.request(protocol.make(
        METADATA, topics=tuple(protocol.make(METADATA_TOPIC, name=n, topic_id=None)
                               for n in names),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return {t.name: t.topic_id for t in response.topics}


async def set_group_configs(wire: Wire, group_id: str, configs: dict[str, str]) -> None:
    resource = protocol.make(ALTER_RESOURCE, resource_type=GROUP_RESOURCE,
                             resource_name=group_id, configs=tuple(
                                 protocol.make(ALTERABLE, name=k, config_operation=0, value=v)
                                 for k, v in configs.items()))
    response, _ = await wire.request(protocol.make(ALTER, resources=(resource,),
                                                   validate_only=False))
    for result in response.responses:
        if result.error_code != ErrorCode.none:
            raise RuntimeError(f"alter {group_id}: {result.error_code!r} "
                               f"{result.error_message}")


async def describe_group(wire: Wire, group_id: str) -> Any:
    response, _ = await wire.request(protocol.make(DESCRIBE, group_ids=(group_id,),
                                                   include_authorized_operations=False))
    return response.groups[0]


# ------------------------------------------------------------------------------ members
class Member:
    """A consumer-protocol member: joins, heartbeats at the interval the server gives, takes
    (and acknowledges at once) every assignment it is sent, rejoins when fenced. Like Kafka's
    Java consumer it sends its subscription only when joining and its owned partitions only
    when they changed since the last heartbeat the server answered; the encoded request is kept
    until then, so a steady heartbeat costs the load generator almost nothing."""

    def __init__(self, wire: Wire, group_id: str, topics: Sequence[str],
                 latencies: list[tuple[float, float]] | None = None,
                 member_id: str | None = None) -> None:
        self.wire = wire
        self.group_id = group_id
        self.topics = tuple(topics)
        self.member_id = member_id or str(uuid.uuid4())
        self.epoch = 0
        self.owned: tuple[Any, ...] = ()
        self.owned_sent = False
        self.interval_s = 5.0
        self.latencies = latencies
        self.stopping = False
        self.task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._next_wait_s: float | None = None  # set by restagger()
        self._request_body: Any = None
        self._frame: bytes | None = None

    def _request(self) -> Any:
        joining = self.epoch == 0
        return protocol.make(
            HB_REQUEST, group_id=self.group_id, member_id=self.member_id,
            member_epoch=self.epoch, instance_id=None, rack_id=None,
            rebalance_timeout=datetime.timedelta(milliseconds=60000 if joining else -1),
            subscribed_topic_names=self.topics if joining else None,
            subscribed_topic_regex=None, server_assignor=None,
            topic_partitions=None if self.owned_sent and not joining else self.owned)

    def _invalidate(self) -> None:
        self._request_body = self._frame = None

    async def heartbeat(self) -> bool:
        """One heartbeat; True when it changed the member's assignment."""
        if self._request_body is None:
            self._request_body = self._request()
            self._frame = protocol.encode_request(self._request_body, 0, "storm")
        response, elapsed = await self.wire.request(self._request_body, self._frame)
        if self.latencies is not None:
            self.latencies.append((time.monotonic(), elapsed * 1000.0))
        code = response.error_code
        if code in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            self.epoch, self.owned, self.owned_sent = 0, (), False
            self._invalidate()
            return True
        if code != ErrorCode.none:
            return False
        if not self.owned_sent or response.member_epoch != self.epoch:
            self.owned_sent = True
            self._invalidate()
        self.epoch = response.member_epoch
        self.interval_s = response.heartbeat_interval.total_seconds()
        if response.assignment is None:
            return False
        owned = tuple(protocol.make(HB_TOPIC, topic_id=tp.topic_id,
                                    partitions=tuple(tp.partitions))
                      for tp in response.assignment.topic_partitions)
        changed = owned != self.owned
        if changed:
            self.owned, self.owned_sent = owned, False
            self._invalidate()
        return changed

    async def run(self, delay_s: float = 0.0) -> None:
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        while not self.stopping:
            try:
                changed = await self.heartbeat()
            except (ConnectionError, OSError, asyncio.IncompleteReadError):
                return
            if not changed and not self.stopping:
                await self._wait(self.interval_s)

    async def _wait(self, seconds: float) -> None:
        """Until the next heartbeat: ``seconds``, unless stopped or restaggered meanwhile."""
        while not self.stopping:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), seconds)
                if self._next_wait_s is None:
                    return
                seconds, self._next_wait_s = self._next_wait_s, None
            except TimeoutError:
                return

    def restagger(self, wait_s: float) -> None:
        """Send the next heartbeat ``wait_s`` from now (instead of an interval after the last
        answer), e.g. to spread members whose heartbeats a long stall had bunched."""
        self._next_wait_s = wait_s
        self._wake.set()

    def start(self, delay_s: float = 0.0) -> None:
        """Start heartbeating, the first (joining) heartbeat after ``delay_s``."""
        self.task = asyncio.get_running_loop().create_task(self.run(delay_s))

    async def stop(self) -> None:
        """Stop heartbeating (never in the middle of a request: the connection is shared)."""
        self.stopping = True
        self._wake.set()
        if self.task is not None:
            await self.task

    async def leave(self) -> None:
        await self.stop()
        self.epoch = -1
        self._invalidate()
        try:
            await self.wire.request(self._request())
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
