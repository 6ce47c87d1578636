"""Topic changes reach groups: a topic created or deleted, or partitions added, bump the epoch of
every consumer and share group subscribed to it (a streams group configures its topology again
at its next heartbeat), through a write on each coordinator partition.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from coordinator.metadata.image import TopicChange
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, PartitionState, Result

from .consumer import heartbeat as consumer_heartbeat
from .consumer.env import ConsumerGroupEnv
from .share import heartbeat as share_heartbeat
from .share.env import ShareGroupEnv
from .streams import heartbeat as streams_heartbeat
from .streams.env import StreamsGroupEnv

log = get_logger("coordinator.groups.consumer_topics")

Refresh = Callable[[Any, int, str], Result]
"""``(shard, now_ms, topic name) -> Result``: one group type's reaction to a topic change."""


def refreshers(consumer: ConsumerGroupEnv, share: ShareGroupEnv,
               streams: StreamsGroupEnv) -> list[Refresh]:
    """What each group type does when a topic changes."""

    def consumer_groups(shard: Any, now: int, topic: str) -> Result:
        return consumer_heartbeat.refresh_subscription_metadata(shard, now, consumer, topic)

    def share_groups(shard: Any, now: int, topic: str) -> Result:
        return share_heartbeat.refresh_subscription_metadata(shard, now, share, topic)

    def streams_groups(shard: Any, now: int, topic: str) -> Result:
        return streams_heartbeat.refresh_subscription_metadata(shard, now, streams, topic)

    return [consumer_groups, share_groups, streams_groups]


def _combined(results: Sequence[Result]) -> Result:
    effects = [result.effect for result in results if result.effect is not None]

    def effect() -> None:  # e.g. a consumer group's regexes resolved again in the background
        for each in effects:
            each()

    return Result([record for result in results for record in result.records],
                  effect=effect if effects else None)


class TopicChangeListener:
    """Owns the writes it starts; ``close`` cancels and waits for them."""

    def __init__(self, runtime: Any, image: Any, refresh: Sequence[Refresh]) -> None:
        self.runtime = runtime
        self.refresh = tuple(refresh)
        self._tasks: set[asyncio.Task[None]] = set()
        self._unsubscribe = image.subscribe(self._on_change)

    def _on_change(self, change: TopicChange) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # the metadata log replaying at start-up: no group is loaded yet
        name = change.topic.name
        for index in range(self.runtime.num_partitions):
            if self.runtime.state(index) is not PartitionState.ACTIVE:
                continue
            task = loop.create_task(self._write(index, name))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _write(self, index: int, topic: str) -> None:
        def handler(shard: Any, now: int) -> Result:
            return _combined([refresh(shard, now, topic) for refresh in self.refresh])

        try:
            await self.runtime.write(index, handler, name="TopicChange")
        except CoordinatorError as exc:
            log.warning("topic change not applied to groups", partition=index, topic=topic,
                        error=exc.code.name)

    async def close(self) -> None:
        self._unsubscribe()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._tasks, return_exceptions=True)
