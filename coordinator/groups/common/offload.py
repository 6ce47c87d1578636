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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, Result
from coordinator.runtime.result import Record

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
    prepared: Any
    """The job (``prepared.job``) and what stays here to read its answer (``PreparedJob`` for
    partition assignors)."""
    installer: Installer
    runner: Callable[[Any], Any] = run_job
    """What a worker runs with ``prepared.job`` (a module-level function: it is pickled)."""


class Offloader(Protocol):
    def submit(self, partition: int, run: AssignorRun) -> None: ...


WriteOf = Callable[[Any], Callable[[Any, int], Result]]
"""Given a background task's outcome (its result or the exception it failed with), the write
event that applies it on the partition."""


class TaskOffloader(Protocol):
    def submit_task(self, partition: int, task: Callable[[Any], Any], payload: Any,
                    write: WriteOf, group_id: str) -> None: ...


def new_run(group: OffloadedGroup, prepared: Any, installer: Installer,
            runner: Callable[[Any], Any] = run_job) -> AssignorRun:
    return AssignorRun(next(_run_ids), group, prepared, installer, runner)


def start_run_effect(shard: Any, group_id: str, group_type: type[Any], prepared: Any,
                     offloader: Offloader, installer: Installer,
                     runner: Callable[[Any], Any] = run_job) -> Callable[[], None]:
    """The effect that marks the group's run in flight and hands it to ``offloader``, for a
    group of ``group_type`` (it runs after the heartbeat's records are applied, so a new group
    exists by then; a group that is gone or has a run in flight already starts none)."""

    def effect() -> None:
        group: Any = shard.groups.get(group_id)
        if not isinstance(group, group_type) or group.assignor_run is not None:
            return
        run = new_run(group, prepared, installer, runner)
        group.assignor_run = run.run_id
        try:
            offloader.submit(shard.partition, run)
        except Exception:
            group.assignor_run = None
            log.exception("could not offload the assignor run", group_id=group_id)

    return effect


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


ChunkRecords = Callable[[Any, AssignorRun, "Sequence[tuple[str, Any]]"],
                        list[Record]]
"""A group type's target records for a chunk of a result's changed members."""


def install_result(shard: Any, now_ms: int, run: AssignorRun,
                   outcome: JobResult | BaseException, part: tuple[int, int] | None,
                   chunk_records: ChunkRecords, metadata_record: Callable[[str, int, int], Record]
                   ) -> Result:
    """The write event for (a chunk of) a finished run, whatever the group type; ``part`` is
    one of ``chunks(outcome)`` (default: all of it at once). The group type gives the records
    of a chunk (``chunk_records``: it drops members that left meanwhile) and of the target
    metadata (``metadata_record(group id, epoch, finish time)``, with the last chunk).

    A result is discarded when the group was deleted or reloaded (not the same group object)
    or a newer target was installed meanwhile. Clearing the in-flight mark on the last chunk is
    bookkeeping, not state from records: it is done even if the records then fail to be
    written (the timestamp is then not updated and the next run may come sooner, as the seed
    allows)."""
    job = run.prepared.job
    gid = job.group_id
    group = shard.groups.get(gid)
    slices = chunks(outcome)
    start, end = part if part is not None else (0, slices[-1][1])
    last = end == slices[-1][1]
    if last and group is run.group and group.assignor_run == run.run_id:
        group.assignor_run = None
    if group is not run.group:
        if last:
            log.info("assignor result discarded: the group is gone", group_id=gid,
                     group_epoch=job.group_epoch)
        return Result()
    if isinstance(outcome, BaseException):
        log.error("assignor run failed", group_id=gid, error=repr(outcome))
        return Result()
    if group.assignment_epoch >= job.group_epoch:
        if last:
            log.info("assignor result discarded: a newer target exists", group_id=gid,
                     group_epoch=job.group_epoch, assignment_epoch=group.assignment_epoch)
        return Result()
    out = chunk_records(group, run, outcome.changed[start:end])
    if last:
        out.append(metadata_record(gid, job.group_epoch, now_ms))
        sensors.record_offloaded_run(job, outcome)
        log.info("installed offloaded target assignment", group_id=gid,
                 assignment_epoch=job.group_epoch, changed=len(outcome.changed),
                 assign_ms=round(outcome.assign_ms, 1))
    return Result(out)


def run_inline(prepared: PreparedJob) -> JobResult:
    """The job run in this process (tests)."""
    return run_job(prepared.job)


class ExecutorOffloader:
    """Sends runs to the background executor; results come back as writes on the runtime."""

    def __init__(self, executor: Any, runtime: Any) -> None:
        self.executor = executor
        self.runtime = runtime
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False
        """Set by ``close`` as the server stops: a run or task submitted after it (a timer
        firing while the executor stops) is dropped, its result would have nowhere to go."""

    def _dropped(self, what: str, group_id: str) -> bool:
        if self.closed:
            log.info("background work dropped: the server is stopping", work=what,
                     group_id=group_id)
        return self.closed

    def submit(self, partition: int, run: AssignorRun) -> None:
        if self._dropped("assignor run", run.prepared.job.group_id):
            return
        def done(outcome: Any) -> None:
            task = asyncio.get_running_loop().create_task(self._install(partition, run, outcome))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        self.executor.submit(run.runner, run.prepared.job, done)

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

    def submit_task(self, partition: int, task: Callable[[Any], Any], payload: Any,
                    write: WriteOf, group_id: str) -> None:
        """Run ``task(payload)`` (a module-level function: it is pickled) on the executor; its
        outcome comes back as one write event on ``partition`` (e.g. a regex resolution)."""
        if self._dropped(getattr(task, "__name__", "task"), group_id):
            return

        def done(outcome: Any) -> None:
            task_ = asyncio.get_running_loop().create_task(
                self._write(partition, write(outcome), group_id))
            self._tasks.add(task_)
            task_.add_done_callback(self._tasks.discard)

        self.executor.submit(task, payload, done)

    async def _write(self, partition: int, handler: Callable[[Any, int], Result],
                     group_id: str) -> None:
        try:
            await self.runtime.write(partition, handler, name="BackgroundResult",
                                     group_id=group_id)
        except CoordinatorError as exc:
            log.warning("background result not applied", group_id=group_id,
                        error=exc.code.name)

    async def close(self) -> None:
        self.closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
