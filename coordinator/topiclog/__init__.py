"""The data plane: a single-node log per topic partition (record batches as producers send
them), and the producer ids of idempotent producers.

``attach(broker, logs)`` makes the logs reachable from request handlers as ``of(broker)``; the
lag API for the coordinator is ``TopicLogs.log_end_offset(topic, partition)``.
"""

from __future__ import annotations

import weakref
from typing import Any

from .batch import BatchError
from .manager import TopicLogs
from .partition import AppendResult, LogConfig, PartitionLog

__all__ = [
    "AppendResult",
    "BatchError",
    "LogConfig",
    "PartitionLog",
    "TopicLogs",
    "attach",
    "log_end_offset",
    "log_offsets",
    "of",
]

_BY_BROKER: weakref.WeakKeyDictionary[Any, TopicLogs] = weakref.WeakKeyDictionary()


def attach(broker: Any, logs: TopicLogs) -> None:
    _BY_BROKER[broker] = logs


def of(broker: Any) -> TopicLogs:
    """The topic logs of ``broker`` (a ``coordinator.broker.Broker``)."""
    return _BY_BROKER[broker]


def log_end_offset(broker: Any, topic: str, partition: int) -> int | None:
    """The log end offset of a partition (None if it has no log): what lag is measured from."""
    logs = _BY_BROKER.get(broker)
    return None if logs is None else logs.log_end_offset(topic, partition)


def log_offsets(broker: Any, topic: str, partition: int) -> tuple[int, int] | None:
    """(log start, log end) of a partition (None if it has no log): lag for the lag assignor."""
    logs = _BY_BROKER.get(broker)
    return None if logs is None else logs.log_offsets(topic, partition)
