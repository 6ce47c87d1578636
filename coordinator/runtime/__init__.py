"""The coordinator runtime: one serial event processor per coordinator partition.

Handlers are pure: ``(shard, now_ms) -> Result(records, response)``. The runtime appends the
records to the partition's log, replays them into the shard, and answers only once they are
durable. Timers arrive as events on the same queue.
"""

from .errors import CoordinatorError
from .partitioner import partition_for
from .result import Pending, Result
from .runtime import CoordinatorRuntime, PartitionState
from .timers import TimerQueue

__all__ = [
    "CoordinatorError",
    "CoordinatorRuntime",
    "PartitionState",
    "Pending",
    "Result",
    "TimerQueue",
    "partition_for",
]
