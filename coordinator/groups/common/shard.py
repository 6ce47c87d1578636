"""One coordinator partition's state: its groups, committed offsets and timers, rebuilt by
replaying the partition's records; and the group configs it reads (cluster metadata).

Which code replays which record type, and what runs once the log is loaded, is given to the
shard when it is made: ``coordinator.groups.replay`` holds the one table and builds shards
with it (``new_shard``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coordinator.observability.logs import get_logger
from coordinator.runtime import TimerQueue
from coordinator.transaction import TransactionsState

from .configs import ClassicConfig, OffsetsRetention
from .offsets import OffsetsState

if TYPE_CHECKING:
    from storage.log import LogRecord

log = get_logger("coordinator.shard")

Replayer = Callable[["CoordinatorShard", int, Any, Any | None], None]
"""Applies one record (offset, key, value; value None for a tombstone) to a shard."""
RawReplayer = Callable[["CoordinatorShard", int, bytes, "bytes | None"], None]
"""Applies one record from its key and value bytes, as its type's ``Replayer`` would."""
LoadHook = Callable[["CoordinatorShard", int], None]
"""Runs once a shard's log is replayed (re-arms the timers the records imply)."""


class CoordinatorShard:
    def __init__(self, partition: int, *, replayers: Mapping[type, Replayer],
                 load_hooks: Sequence[LoadHook], classic_config: ClassicConfig,
                 offsets_retention: OffsetsRetention,
                 raw_replayers: Mapping[bytes, RawReplayer] | None = None,
                 group_configs: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.partition = partition
        self.replayers = replayers
        self.raw_replayers = raw_replayers or {}
        """By 2-byte key prefix (type id): the types a load may replay from their bytes."""
        self.load_hooks = tuple(load_hooks)
        self.classic_config = classic_config
        self.offsets_retention = offsets_retention
        self.timers = TimerQueue()
        self.offsets = OffsetsState()
        self.transactions = TransactionsState()
        """The transactional ids this partition coordinates (TransactionLog records)."""
        self.groups: dict[str, Any] = {}
        self.group_configs: Mapping[str, Mapping[str, str]] = (
            {} if group_configs is None else group_configs)
        """Every group's config overrides, by group id: the metadata image's GROUP config
        resources (``common.group_configs``), shared by every shard."""
        self.legacy_group_configs: dict[str, dict[str, str]] = {}
        """Overrides of this partition's 1001 records (an older store's) not yet migrated."""
        self.share_partitions: dict[str, dict[tuple[uuid.UUID, int], Any]] = {}
        """Share-partition state (KIP-932), by group id, then (topic id, partition): replayed
        from ShareSnapshot/ShareUpdate records, kept apart from the group objects as Kafka's
        share coordinator keeps it."""
        self.share_sessions: dict[tuple[str, str], Any] = {}
        """Share sessions (KIP-932) by (group id, member id): in memory only."""
        self.last_offset = -1

    def replay(self, offset: int, key: Any, value: Any | None) -> None:
        self.last_offset = offset
        replayer = self.replayers.get(type(key))
        if replayer is None:
            log.warning("record type not handled by this coordinator version",
                        partition=self.partition, offset=offset, type=type(key).__name__)
            return
        replayer(self, offset, key, value)

    def replay_records(self, records: Iterable[LogRecord], decoded: Collection[bytes],
                       replay_decoded: Callable[[int, int, bytes, bytes | None], None]) -> None:
        """Replay raw records in order (a load's): a record of a type with a raw replayer from
        its bytes, unless its key prefix is in ``decoded``; any other through
        ``replay_decoded`` (which decodes it and calls :meth:`replay`)."""
        raw = self.raw_replayers
        for offset, ts, key, value in records:
            prefix = key[:2]
            replayer = None if prefix in decoded else raw.get(prefix)
            if replayer is None:
                replay_decoded(offset, ts, key, value)
            else:
                self.last_offset = offset
                replayer(self, offset, key, value)

    def on_loaded(self, now_ms: int) -> None:
        """Called once the log is replayed: each group type re-arms its timers."""
        for hook in self.load_hooks:
            hook(self, now_ms)

    def group_exists(self, group_id: str) -> bool:
        return group_id in self.groups
