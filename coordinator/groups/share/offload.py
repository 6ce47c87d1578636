"""Offloaded assignor runs of share groups (seed 000): start one, and install its result
(``common.offload`` has the runner and the rules for discarding a stale result)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from coordinator.groups.common.assignor_job import JobResult, PreparedJob, TopicIndexAssignment
from coordinator.groups.common.offload import (
    AssignorRun,
    Offloader,
    install_result,
    start_run_effect,
)
from coordinator.runtime import Result
from coordinator.runtime.result import Record

from . import records
from .model import ShareGroup
from .target import target_records


def start_effect(shard: Any, group_id: str, prepared: PreparedJob, offloader: Offloader
                 ) -> Callable[[], None]:
    """The effect that starts the group's offloaded run (``common.offload``)."""
    return start_run_effect(shard, group_id, ShareGroup, prepared, offloader, install)


def install(shard: Any, now_ms: int, run: AssignorRun, outcome: JobResult | BaseException,
            part: tuple[int, int] | None = None) -> Result:
    """The write event for (a chunk of) a finished share group run."""
    return install_result(shard, now_ms, run, outcome, part, _chunk_records,
                          records.target_metadata)


def _chunk_records(group: ShareGroup, run: AssignorRun,
                   changed: Sequence[tuple[str, TopicIndexAssignment]]) -> list[Record]:
    return target_records(group, run.prepared, changed, group.members)[1]
