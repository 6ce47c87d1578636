"""DescribeLogDirs (v1-5): the one log directory (``log.dirs``) with the size of each partition
in it, the data plane's and the coordinator store's (``__consumer_offsets-N``), and the disk's
total and usable bytes (v4+). CLUSTER DESCRIBE is needed: without it, v3+ answers
CLUSTER_AUTHORIZATION_FAILED and earlier versions no directory, as Kafka."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coordinator import topiclog
from coordinator.metadata.topic_names import INTERNAL_TOPICS
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext

UNKNOWN_SPACE = -1


def _sizes(ctx: RequestContext) -> Iterator[tuple[str, int, int]]:
    """(topic, partition, bytes) of every partition in the log directory."""
    logs = topiclog.of(ctx.broker)
    runtime = ctx.broker.runtime
    for topic in ctx.broker.image.topics():
        for index in range(topic.partitions):
            if topic.name in INTERNAL_TOPICS:
                if topic.name == "__consumer_offsets":
                    found = runtime.durable_log(index)
                    if found is not None:
                        yield topic.name, index, found[0].size_bytes
                continue
            plog = logs.get(topic.name, index)
            if plog is not None:
                yield topic.name, index, plog.size_bytes


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER):
        return ctx.respond(error_code=ErrorCode.cluster_authorization_failed, results=())
    wanted = None if request.topics is None else {
        (t.topic, p) for t in request.topics for p in t.partitions}
    by_topic: dict[str, list[Any]] = {}
    for name, index, size in _sizes(ctx):
        if wanted is None or (name, index) in wanted:
            by_topic.setdefault(name, []).append(ctx.nested(
                "DescribeLogDirsPartition", partition_index=index, partition_size=size,
                offset_lag=0, is_future_key=False))
    log_dir = str(Path(ctx.broker.config.log_dir).resolve())
    try:
        usage = shutil.disk_usage(log_dir)
        total, usable = usage.total, usage.free
    except OSError:
        total = usable = UNKNOWN_SPACE
    result = ctx.nested("DescribeLogDirsResult", error_code=ErrorCode.none, log_dir=log_dir,
                        topics=tuple(ctx.nested("DescribeLogDirsTopic", name=name,
                                                partitions=tuple(parts))
                                     for name, parts in by_topic.items()),
                        total_bytes=total, usable_bytes=usable)
    return ctx.respond(error_code=ErrorCode.none, results=(result,))
