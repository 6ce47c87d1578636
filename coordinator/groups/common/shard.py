"""One coordinator partition's state: what its records say, and its timers.

``replay`` is the one dispatch table from record type to the code that owns it; each group type
registers its record types in ``REPLAYERS`` (see ``register_replayer``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.records import OffsetCommitKey

from .logs import get_logger
from .offsets import OffsetsState
from .runtime import TimerQueue

log = get_logger("coordinator.shard")

Replayer = Callable[["CoordinatorShard", int, Any, Any | None], None]
REPLAYERS: dict[type, Replayer] = {}
LOAD_HOOKS: list[Callable[[CoordinatorShard, int], None]] = []


def register_replayer(key_type: type, replayer: Replayer) -> None:
    REPLAYERS[key_type] = replayer


def _replay_offset_commit(shard: CoordinatorShard, offset: int, key: Any,
                          value: Any | None) -> None:
    shard.offsets.replay(key, value)


register_replayer(OffsetCommitKey, _replay_offset_commit)


class CoordinatorShard:
    def __init__(self, partition: int, config: Any = None) -> None:
        """``config`` is the server config (``ServerConfig``); None means Kafka's defaults."""
        from .groups.config import group_configs, offsets_retention

        self.partition = partition
        self.classic_config = group_configs(config)
        self.offsets_retention = offsets_retention(config)
        self.timers = TimerQueue()
        self.offsets = OffsetsState()
        self.groups: dict[str, Any] = {}
        self.last_offset = -1

    def replay(self, offset: int, key: Any, value: Any | None) -> None:
        self.last_offset = offset
        replayer = REPLAYERS.get(type(key))
        if replayer is None:
            log.warning("record type not handled by this coordinator version",
                        partition=self.partition, offset=offset, type=type(key).__name__)
            return
        replayer(self, offset, key, value)

    def on_loaded(self, now_ms: int) -> None:
        """Called once the log is replayed: each group type re-arms its timers."""
        for hook in LOAD_HOOKS:
            hook(self, now_ms)

    def group_exists(self, group_id: str) -> bool:
        return group_id in self.groups


# Group types register their record types when imported; import them with the shard.
from .groups import classic_session, expiration  # noqa: E402, F401
