"""The log cleaner: compacts every coordinator partition's closed segments in a worker thread,
now and then, keeping the latest record per key. It never blocks request handling."""

from __future__ import annotations

import asyncio

from coordinator.observability.logs import get_logger
from storage.compaction import compact

from . import CoordinatorRuntime, PartitionState
from .clock import Clock

log = get_logger("coordinator.compactor")


class Compactor:
    def __init__(self, runtime: CoordinatorRuntime, clock: Clock, backoff_ms: int,
                 tombstone_retention_ms: int) -> None:
        self.runtime = runtime
        self.clock = clock
        self.backoff_ms = backoff_ms
        self.tombstone_retention_ms = tombstone_retention_ms

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.backoff_ms / 1000.0)
            await self.compact_all()

    async def compact_all(self) -> int:
        """One pass over every active partition; returns how many had segments to clean."""
        cleaned = 0
        for partition in self.runtime.partitions:
            plog = partition.log
            if partition.state is not PartitionState.ACTIVE or plog is None:
                continue
            if not plog.closed_segments():
                continue
            try:
                await asyncio.to_thread(compact, plog, self.tombstone_retention_ms,
                                        self.clock.now_ms())
                cleaned += 1
            except (OSError, ValueError) as exc:
                log.error("compaction failed", partition=partition.index, error=str(exc))
        return cleaned
