"""Topic changes reach consumer groups: a topic created or deleted, or partitions added, bump
the epoch of every group subscribed to it, through a write on each coordinator partition."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from coordinator import topiclog
from coordinator.metadata.image import TopicChange
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, PartitionState

from .env import ConsumerGroupEnv, ConsumerGroupSettings, install
from .heartbeat import refresh_subscription_metadata

log = get_logger("coordinator.groups.consumer_topics")


class ConsumerGroupTopicListener:
    """Owns the writes it starts; ``close`` cancels and waits for them."""

    def __init__(self, runtime: Any, image: Any, env: ConsumerGroupEnv) -> None:
        self.runtime = runtime
        self.env = env
        self._tasks: set[asyncio.Task[None]] = set()
        self._unsubscribe = image.subscribe(self._on_change)

    @classmethod
    def install(cls, broker: Any) -> ConsumerGroupTopicListener:
        """Install the consumer group environment for ``broker`` and listen to its topics."""
        env = ConsumerGroupEnv(ConsumerGroupSettings.from_config(broker.config), broker.image,
                               log_offsets=lambda topic, partition: topiclog.log_offsets(
                                   broker, topic, partition))
        install(env)
        return cls(broker.runtime, broker.image, env)

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
        try:
            await self.runtime.write(
                index, lambda shard, now: refresh_subscription_metadata(shard, now, self.env,
                                                                        topic),
                name="ConsumerGroupTopicChange")
        except CoordinatorError as exc:
            log.warning("topic change not applied to consumer groups", partition=index,
                        topic=topic, error=exc.code.name)

    async def close(self) -> None:
        self._unsubscribe()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._tasks, return_exceptions=True)
