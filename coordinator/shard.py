"""One coordinator partition's state: what its records say, and its timers.

``replay`` is the one dispatch table from record type to the state that owns it.
"""

from __future__ import annotations

from typing import Any

from storage.records import OffsetCommitKey

from .logs import get_logger
from .offsets import OffsetsState
from .runtime import TimerQueue

log = get_logger("coordinator.shard")


class CoordinatorShard:
    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.timers = TimerQueue()
        self.offsets = OffsetsState()
        self.last_offset = -1

    def replay(self, offset: int, key: Any, value: Any | None) -> None:
        self.last_offset = offset
        if isinstance(key, OffsetCommitKey):
            self.offsets.replay(key, value)
            return
        log.warning("record type not handled by this coordinator version",
                    partition=self.partition, offset=offset, type=type(key).__name__)

    def on_loaded(self, now_ms: int) -> None:
        """Called once the log is replayed: re-arm timers from the loaded state."""

    def group_exists(self, group_id: str) -> bool:
        """Whether a group (of any type) is known here; group types extend this."""
        return False
