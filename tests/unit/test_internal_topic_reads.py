"""What Fetch, ListOffsets and OffsetForLeaderEpoch are told of an internal topic's partition
whose coordinator partition is still loading: NOT_LEADER_OR_FOLLOWER, which clients retry (as
Kafka's broker answers for a partition its metadata has and it does not host), not
UNKNOWN_TOPIC_OR_PARTITION, which kcat and librdkafka take as the partition's end; a partition
beyond the topic's count stays unknown."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from coordinator.config import ServerConfig
from coordinator.metadata.image import MetadataImage
from coordinator.runtime import CoordinatorRuntime, PartitionState
from coordinator.runtime.clock import ManualClock
from coordinator.topiclog import TopicLogs
from protocol import ErrorCode
from tests.unit.test_runtime import FakeShard, FlusherDouble, put, until

pytestmark = pytest.mark.timeout(30)
OFFSETS = "__consumer_offsets"


async def test_a_loading_partition_is_not_led_yet_then_readable(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = CoordinatorRuntime(store, 2, FakeShard, ManualClock(1_000), flusher=FlusherDouble())
    await first.start(drive_timers=False)
    await asyncio.wait_for(first.wait_loaded(), 10)
    await first.write(0, put("g", 0, 7))
    await first.stop()

    gate = threading.Event()
    runtime = CoordinatorRuntime(store, 2, lambda index: FakeShard(index, gate),
                                 ManualClock(1_000), flusher=FlusherDouble())
    (log_dir := tmp_path / "logs").mkdir()
    logs = TopicLogs(log_dir, MetadataImage(),
                     ServerConfig.from_sources({"log.dirs": str(log_dir)}), ManualClock(1_000))
    logs.runtime = runtime
    try:
        await runtime.start(drive_timers=False)
        await until(lambda: runtime.state(0) is PartitionState.LOADING, message="loading")
        assert logs.readable(OFFSETS, 0) is None
        assert logs.unreadable(OFFSETS, 0) is ErrorCode.not_leader_or_follower
        assert logs.readable(OFFSETS, 2) is None  # the topic has partitions 0 and 1
        assert logs.unreadable(OFFSETS, 2) is ErrorCode.unknown_topic_or_partition
        assert logs.unreadable("orders", 0) is ErrorCode.unknown_topic_or_partition
        gate.set()
        await asyncio.wait_for(runtime.wait_loaded(), 10)
        readable = logs.readable(OFFSETS, 0)
        assert readable is not None and readable.log_end_offset == 1
    finally:
        gate.set()
        await runtime.stop()
        logs.close()
