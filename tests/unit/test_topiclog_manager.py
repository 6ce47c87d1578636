"""Topic logs kept in step with the metadata image."""

from __future__ import annotations

import asyncio
from pathlib import Path

from coordinator.config import ServerConfig
from coordinator.metadata.image import MetadataImage
from coordinator.runtime.clock import ManualClock
from coordinator.topiclog import TopicLogs
from tests.unit.topiclog_helpers import make_batch


def make_logs(tmp_path: Path, image: MetadataImage, **overrides: str) -> TopicLogs:
    config = ServerConfig.from_sources({"log.dirs": str(tmp_path), **overrides})
    return TopicLogs(tmp_path, image, config, ManualClock(1_000))


def test_logs_follow_topic_changes(tmp_path: Path) -> None:
    image = MetadataImage()
    logs = make_logs(tmp_path, image)
    topic = image.create_topic("orders", 2)
    assert (tmp_path / "orders-0").is_dir() and (tmp_path / "orders-1").is_dir()
    plog = logs.get("orders", 1)
    assert plog is not None
    plog.append(make_batch([b"a", b"b"]), logs.log_config(topic), logs.now_ms())
    assert logs.log_end_offset("orders", 1) == 2
    assert logs.log_end_offsets("orders") == {0: 0, 1: 2}
    image.add_partitions("orders", 3)
    assert logs.log_end_offset("orders", 2) == 0
    image.delete_topic("orders")
    assert logs.log_end_offset("orders", 1) is None
    assert not any(p.name.startswith("orders") for p in tmp_path.iterdir())
    logs.close()


def test_stale_directories_are_removed_on_start(tmp_path: Path) -> None:
    image = MetadataImage()
    logs = make_logs(tmp_path, image)
    image.create_topic("gone", 1)
    kept = image.create_topic("kept", 1)
    logs.close()
    # the topic was deleted (and one re-created under a new id) while the server was down
    image2 = MetadataImage([kept])
    (tmp_path / "__consumer_offsets-0").mkdir()
    logs2 = make_logs(tmp_path, image2)
    names = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert names == ["__consumer_offsets-0", "kept-0"]
    logs2.close()


def test_topic_configs_override_broker_defaults(tmp_path: Path) -> None:
    image = MetadataImage()
    logs = make_logs(tmp_path, image, **{"log.retention.ms": "5000"})
    plain = image.create_topic("plain", 1)
    tuned = image.create_topic("tuned", 1, {"retention.bytes": "100", "segment.bytes": "1000",
                                            "message.timestamp.type": "LogAppendTime"})
    assert logs.log_config(plain).retention_ms == 5000
    config = logs.log_config(tuned)
    assert (config.retention_bytes, config.segment_bytes, config.log_append_time) == (
        100, 1000, True)
    logs.close()


async def test_waiters_are_woken_by_appends(tmp_path: Path) -> None:
    logs = make_logs(tmp_path, MetadataImage())
    waiter = asyncio.create_task(logs.wait_for_append(5.0))
    await asyncio.sleep(0)
    logs.notify_appended()
    assert await asyncio.wait_for(waiter, 1.0) is True
    assert await logs.wait_for_append(0.01) is False
    logs.close()


def test_producer_ids_are_not_reused_after_restart(tmp_path: Path) -> None:
    logs = make_logs(tmp_path, MetadataImage())
    first = [logs.producer_ids.next_id() for _ in range(3)]
    logs.close()
    again = make_logs(tmp_path, MetadataImage())
    assert again.producer_ids.next_id() > max(first)
    again.close()


async def test_retention_runs_every_check_interval(tmp_path: Path) -> None:
    """``log.retention.check.interval.ms`` (Kafka's name; default 5 minutes) paces the pass."""
    image = MetadataImage()
    logs = make_logs(tmp_path, image, **{"log.retention.check.interval.ms": "50",
                                         "log.retention.ms": "100"})
    topic = image.create_topic("old", 3)
    plog = logs.get("old", 1)
    assert plog is not None
    plog.append(make_batch([b"a"], timestamp=10), logs.log_config(topic), logs.now_ms())
    logs.start()
    try:
        deadline = asyncio.get_running_loop().time() + 5.0
        while plog.log_start_offset == 0:
            assert asyncio.get_running_loop().time() < deadline, "no retention pass ran"
            await asyncio.sleep(0.01)
    finally:
        await logs.stop()
    assert plog.log_start_offset == plog.log_end_offset == 1
    assert ServerConfig.from_sources({})["log.retention.check.interval.ms"] == 300_000
