"""Offloaded assignor runs of share groups (seed 000): start one, and install its result
(``common.offload`` has the runner and the rules for discarding a stale result)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from coordinator.groups.common.assignor_job import JobResult, PreparedJob, TopicIndexAssignment
from coordinator.groups.common.offload import AssignorRun, Offloader, install_result, new_run
from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from coordinator.runtime.result import Record

from . import records
from .model import ShareGroup
from .target import target_records

log = get_logger("coordinator.groups.share")


def start_effect(shard: Any, group_id: str, prepared: PreparedJob, offloader: Offloader
                 ) -> Callable[[], None]:
    """The effect that marks the group's run in flight and hands it to ``offloader`` (it runs
    after the heartbeat's records are applied, so a new group exists by then)."""

    def effect() -> None:
        group = shard.groups.get(group_id)
        if not isinstance(group, ShareGroup) or group.assignor_run is not None:
            return
        run = new_run(group, prepared, install)
        group.assignor_run = run.run_id
        try:
            offloader.submit(shard.partition, run)
        except Exception:
            group.assignor_run = None
            log.exception("could not offload the assignor run", group_id=group_id)

    return effect


def install(shard: Any, now_ms: int, run: AssignorRun, outcome: JobResult | BaseException,
            part: tuple[int, int] | None = None) -> Result:
    """The write event for (a chunk of) a finished share group run."""
    return install_result(shard, now_ms, run, outcome, part, _chunk_records,
                          records.target_metadata)


def _chunk_records(group: ShareGroup, run: AssignorRun,
                   changed: Sequence[tuple[str, TopicIndexAssignment]]) -> list[Record]:
    return target_records(group, run.prepared, changed, group.members)[1]
