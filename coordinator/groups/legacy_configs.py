"""The migration of an older store's group configs: our ``GroupConfig`` records (type 1001) on
the coordinator partitions become ``ConfigRecord``s of GROUP resources in the metadata log, where
group configs live now (``common/group_configs.py``).

Once the partitions have loaded, each group a 1001 record holds configs for gets them as
ConfigRecords, but for those the metadata already has (a config set while the partition was
loading is newer, and kept): written and fsynced to ``__cluster_metadata-0``, then the 1001
record's tombstone is written to its partition. Nothing else writes 1001 records, so this runs
once: a restart finds no 1001 record left, and a crash between the two writes repeats the first
at the next start, which then writes nothing (the metadata has them all). Until a group's
configs are migrated, its shard reads its 1001 configs under the metadata's, so its members see
the same configs before, during and after the migration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator.metadata.config_resources import GROUP, ConfigResources
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, CoordinatorRuntime, PartitionState, Result

from .common.group_configs import legacy_tombstone

log = get_logger("coordinator.legacy_group_configs")


class LegacyConfigMigration:
    def __init__(self, runtime: CoordinatorRuntime, configs: ConfigResources,
                 metadata_log: Any) -> None:
        """``configs``: the metadata image's config resources; ``metadata_log``: the
        ``MetadataLog`` they are written to."""
        self._runtime = runtime
        self._configs = configs
        self._metadata_log = metadata_log
        self.migrated = 0
        """Groups whose 1001 configs this run moved to the metadata."""

    async def run(self) -> None:
        """Migrate every loaded partition's 1001 configs (a task of the app's)."""
        runtime = self._runtime
        await runtime.wait_loaded()
        for partition in range(runtime.num_partitions):
            if runtime.state(partition) is not PartitionState.ACTIVE:
                continue  # failed: its 1001 records stay for the next start
            try:
                legacy = await runtime.read(partition, _legacy, name="GroupConfigMigration")
                for group_id, configs in sorted(legacy.items()):
                    await self._migrate(partition, group_id, configs)
            except (CoordinatorError, OSError) as exc:
                log.warning("group configs not migrated; the next start retries",
                            partition=partition, error=str(exc))

    async def _migrate(self, partition: int, group_id: str, configs: Mapping[str, str]) -> None:
        merged = await self._configs.alter(self._metadata_log, GROUP, group_id,
                                           lambda current: {**configs, **current})
        await self._runtime.write(partition, lambda shard, now: _tombstone(shard, group_id),
                                  name="GroupConfigMigration", group_id=group_id)
        self.migrated += 1
        log.info("group configs migrated to the cluster metadata", group_id=group_id,
                 partition=partition, configs=dict(merged))


def _legacy(shard: Any, _now: int) -> dict[str, dict[str, str]]:
    return {group_id: dict(configs) for group_id, configs in shard.legacy_group_configs.items()}


def _tombstone(shard: Any, group_id: str) -> Result:
    if group_id not in shard.legacy_group_configs:
        return Result()
    return Result([legacy_tombstone(group_id)])
