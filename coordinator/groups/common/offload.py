"""Offloaded assignor runs (seed 000), for every group type: a run in flight, the chunks its
result is installed in, and the offloader that sends jobs to the background executor.

A group type starts a run as the effect of the heartbeat that found a new target due (the group
is marked as having a run in flight: at most one per group, in memory, not a record) and gives
the run its installer. The result comes back as write events on the group's partition, one per
chunk (``chunks``), each calling the installer, which first applies what changed meanwhile and
then writes the target records (``consumer.offload`` for consumer groups).

A large result is installed in chunks of about ``CHUNK_TOPIC_ENTRIES`` (member, topic) entries,
one write event each (a couple of milliseconds of the event loop), so that other groups'
requests are served between them. The run stays in flight until its last chunk.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result

from .assignor_job import JobResult, PreparedJob, run_job

log = get_logger("coordinator.groups.offload")

_run_ids = itertools.count(1)

CHUNK_TOPIC_ENTRIES = 64
"""(member, topic) entries of target records per install event (at least one member)."""


class OffloadedGroup(Protocol):
    group_id: str
    assignor_run: int | None
    """The id of the run in flight for this group, if any."""


Installer = Callable[[Any, int, "AssignorRun", "JobResult | BaseException",
                      "tuple[int, int] | None"], Result]
"""A group type's write event for (a chunk of) a finished run: (shard, now, run, outcome,
part)."""


@dataclass(frozen=True, slots=True)
class AssignorRun:
    run_id: int
    group: Any
    """The group object the run was started for (an ``OffloadedGroup``): identity tells a
    deleted or reloaded group."""
    prepared: PreparedJob
    installer: Installer


class Offloader(Protocol):
    def submit(self, partition: int, run: AssignorRun) -> None: ...


def new_run(group: OffloadedGroup, prepared: PreparedJob, installer: Installer) -> AssignorRun:
    return AssignorRun(next(_run_ids), group, prepared, installer)


def chunks(outcome: JobResult | BaseException) -> list[tuple[int, int]]:
    """The (start, end) slices of ``outcome.changed`` to install, one write event each."""
    if isinstance(outcome, BaseException) or not outcome.changed:
        return [(0, 0)]
    out, start, entries = [], 0, 0
    for i, (_, pairs) in enumerate(outcome.changed):
        entries += max(1, len(pairs))
        if entries >= CHUNK_TOPIC_ENTRIES:
            out.append((start, i + 1))
            start, entries = i + 1, 0
    if start < len(outcome.changed):
        out.append((start, len(outcome.changed)))
    return out


def run_inline(prepared: PreparedJob) -> JobResult:
    """The job run in this process (tests)."""
    return run_job(prepared.job)


class ExecutorOffloader:
    """Sends runs to the background executor; results come back as writes on the runtime."""

    def __init__(self, executor: Any, runtime: Any) -> None:
        self.executor = executor
        self.runtime = runtime
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, partition: int, run: AssignorRun) -> None:
        def done(outcome: Any) -> None:
            task = asyncio.get_running_loop().create_task(self._install(partition, run, outcome))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        self.executor.submit(run_job, run.prepared.job, done)

    async def _install(self, partition: int, run: AssignorRun, outcome: Any) -> None:
        try:
            for part in chunks(outcome):
                await self.runtime.write(
                    partition, lambda shard, now, part=part: run.installer(shard, now, run,
                                                                           outcome, part),
                    name="AssignorResult", group_id=run.prepared.job.group_id)
        except CoordinatorError as exc:
            log.warning("assignor result not installed", group_id=run.prepared.job.group_id,
                        error=exc.code.name)
            if run.group.assignor_run == run.run_id:
                run.group.assignor_run = None

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
