"""Per-partition event processors, group commit and write-then-apply-then-answer.

Each coordinator partition is one asyncio task draining its queue, so events for a partition run
one at a time and in order. An event submitted to a partition with nothing queued runs at once,
in the submitter's turn of the event loop, unless the partition's writing events already took
``TURN_BUDGET_MS`` of that turn: then it is queued, and the processor runs the queue at most
that long a turn. So a busy group (a large one whose members all write as they heartbeat) holds
the loop for a bounded time per turn, and the groups of other partitions are not queued behind
all of its work (Kafka's coordinator threads likewise take events from partitions in turn).

A write event calls a pure handler; its records are appended to the partition's log (one
all-or-nothing batch), replayed into the shard, and its response is sent only once the log is
durable past them. Reads and record-less writes wait for the records applied
before them, so no answer ever reveals state the log does not hold. An event that says which
group it is about (``group_id``: it reads and writes only that group's state) waits only for
that group's records and for records written by events that named no group, so a group sharing
a partition with a busy one is not made to wait for the busy group's fsyncs. A failed append
leaves the shard untouched (records are applied only after the log took them) and the request
gets NOT_COORDINATOR. When answers wait for fsyncs the log keeps appended batches in memory and
the flushing thread writes them before its fsync; a failed write or fsync fails every waiting
request and reloads the partition from disk (only what reached the file counts).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from coordinator.observability.logs import get_logger
from protocol import ErrorCode
from storage import snapshot as snapshots
from storage.budget import SizeBudget
from storage.errors import StorageError
from storage.flusher import RETRY, Done, Flusher
from storage.log import LogRecord, PartitionLog, partition_dir
from storage.records import RECORD_TYPES, decode_record, encode_record
from storage.records.registry import KEY_PREFIXES
from storage.replay import latest_records

from .clock import Clock
from .errors import CoordinatorError, load_in_progress, not_available, write_failed
from .partitioner import partition_for
from .result import Pending, Result
from .timers import TimerQueue

log = get_logger("coordinator.runtime")

FSYNC_THREADS = 64
SLOW_EVENT_MS = float(os.environ.get("COORDINATOR_SLOW_EVENT_MS", "100"))
"""An event that holds the event loop this long is logged (it delayed every group)."""
TURN_BUDGET_MS = float(os.environ.get("COORDINATOR_TURN_BUDGET_MS", "0.3"))
"""How long one partition's writing events (those that append records) may hold the event loop
in one turn of it; past that, its next events wait in its queue for the next turn (see
``submit``). Events that write nothing are not counted."""


class Shard(Protocol):
    """The in-memory state of one coordinator partition, rebuilt from its records."""

    timers: TimerQueue

    def replay(self, offset: int, key: Any, value: Any | None) -> None: ...

    def on_loaded(self, now_ms: int) -> None: ...


WriteHandler = Callable[[Any, int], Result]
ReadHandler = Callable[[Any, int], Any]
EventListener = Callable[[int, float, float], None]
EventsListener = Callable[[int, float], None]
"""Told of events run now in a batch (``ran_now``): how many, and the processing time (ms)
of each (the batch's mean)."""
RecordListener = Callable[[int, int, int, Any, Any], None]
"""Told of every record a partition applies: (partition, offset, timestamp, key, value)."""


class PartitionState(Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"
    CLOSED = "closed"


_ACTIVE = PartitionState.ACTIVE
"""``PartitionState.ACTIVE``, for the checks every event makes: in Python 3.11 an enum
member read from its class goes through ``EnumType.__getattr__`` (some 20 times the cost of
a module global)."""


@dataclass(slots=True)
class _Event:
    write: bool
    handler: Callable[[Any, int], Any]
    future: asyncio.Future[Any] | None
    enqueued: float = field(default_factory=time.perf_counter)
    name: str = "request"
    group_id: str | None = None
    records: int = 0  # what the event wrote (for the slow-event log)


class _Partition:
    def __init__(self, index: int) -> None:
        self.index = index
        self.state = PartitionState.LOADING
        self.log: PartitionLog | None = None
        self.shard: Any = None
        self.queue: asyncio.Queue[_Event] = asyncio.Queue()
        self.appended = 0  # next offset to be written
        self.durable = 0  # offsets below this are fsynced
        self.appended_by_group: dict[str, int] = {}  # end of each group's last records
        self.appended_unkeyed = 0  # end of the last records of an event that named no group
        self.waiters: list[tuple[int, int, asyncio.Future[Any], Any]] = []  # a heap
        self.pending: dict[Any, asyncio.Future[Any]] = {}  # delayed answers by key
        self.failure: str | None = None
        self.load_time_ms: float | None = None
        self.task: asyncio.Task[None] | None = None
        self.snapshot: Path | None = None  # the newest snapshot file, loaded or written
        self.snapshot_end = 0  # the offset it ends at
        self.snapshot_ms = 0.0  # when it was loaded or written (monotonic ms)
        self.bytes_since_snapshot = 0  # record bytes appended after it
        self.snapshotting = False
        self.turn_ms = 0.0  # what its writing events took in this turn of the event loop
        self.turn_reset = False  # a reset of turn_ms is due at the next turn


class CoordinatorRuntime:
    def __init__(self, log_dir: str | Path, num_partitions: int,
                 shard_factory: Callable[[int], Shard], clock: Clock, *,
                 segment_bytes: int = 100 * 1024 * 1024, max_bytes: int | None = None,
                 flush_interval_ms: int = 0, timer_tick_ms: int = 50,
                 event_listener: EventListener | None = None,
                 slow_event_ms: float = SLOW_EVENT_MS,
                 snapshot_max_bytes: int = 20 * 1024 * 1024,
                 snapshot_interval_ms: int = 3_600_000,
                 tombstone_retention_ms: int = 86_400_000,
                 flusher: Flusher | None = None) -> None:
        self.log_dir = Path(log_dir)
        self.on_durable: Callable[[], None] | None = None
        """Called when a partition's durable offset moves (records became readable)."""
        self.num_partitions = num_partitions
        self.shard_factory = shard_factory
        self.clock = clock
        self.segment_bytes = segment_bytes
        self.budget = SizeBudget(max_bytes)
        self.flush_interval_ms = flush_interval_ms
        self.timer_tick_ms = timer_tick_ms
        self.event_listener = event_listener
        self.events_listener: EventsListener | None = None
        """Told of the events run in batches on the shards ``ready_shard`` gave
        (``ran_now``); ``event_listener`` is told of every other event."""
        self.record_listener: RecordListener | None = None
        """Told of every record applied, written or loaded (the rebalance timeline)."""
        self.record_listener_keys: frozenset[type] | None = None
        """The key types the listener needs every record of when a partition loads (None:
        all); of the other types a load replays only the latest record per key, and need not
        tell the listener of them."""
        self.snapshot_max_bytes = snapshot_max_bytes
        """A partition snapshots its state once this many record bytes were appended after its
        last snapshot (``coordinator.log.max.record.bytes.between.snapshots``; 0: never)."""
        self.snapshot_interval_ms = snapshot_interval_ms
        """... or once this long passed with records appended after it
        (``coordinator.log.max.snapshot.interval.ms``; 0: no time limit)."""
        self.tombstone_retention_ms = tombstone_retention_ms
        self.slow_event_ms = slow_event_ms
        self.partitions = [_Partition(i) for i in range(num_partitions)]
        self._dirty: set[_Partition] = set()
        self._round_due = False  # a call to start the fsync rounds of the dirty partitions
        self._flushing: set[_Partition] = set()  # fsync rounds under way
        self._flusher = flusher or Flusher(min(num_partitions, FSYNC_THREADS))
        """The partitions' fsyncs, in a helper process (:mod:`storage.flusher`), as many at
        once as there are partitions (up to ``FSYNC_THREADS``): the file system commits
        concurrent fsyncs together, so a round of every partition costs about one fsync, and
        a partition whose fsync stalls holds back only its own answers."""
        self._tasks: list[asyncio.Task[None]] = []
        self._loaded = asyncio.Event()
        self._waiter_seq = itertools.count()
        self._snapshot_tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ lifecycle
    async def start(self, *, drive_timers: bool = True) -> None:
        """Start the processors and load every partition in the background (requests for a
        partition still loading get COORDINATOR_LOAD_IN_PROGRESS)."""
        self._flusher.start(asyncio.get_running_loop())
        for partition in self.partitions:
            partition.task = asyncio.create_task(self._process(partition))
        self._tasks.append(asyncio.create_task(self._load_all()))
        if self.flush_interval_ms > 0:
            self._tasks.append(asyncio.create_task(self._flush_loop()))
        if drive_timers:
            self._tasks.append(asyncio.create_task(self._timer_loop()))

    async def wait_loaded(self) -> None:
        await self._loaded.wait()

    async def stop(self) -> None:
        for task in [*self._tasks, *self._snapshot_tasks]:
            task.cancel()
        for partition in self.partitions:
            if partition.task is not None:
                partition.task.cancel()
        await asyncio.gather(*self._tasks, *(p.task for p in self.partitions if p.task),
                             return_exceptions=True)
        for partition in self.partitions:
            if partition.log is not None:
                with contextlib.suppress(OSError, ValueError, StorageError):
                    if partition.state is _ACTIVE:
                        partition.log.flush()
                partition.log.close()
            partition.state = PartitionState.CLOSED
        self._flusher.close()

    # ------------------------------------------------------------------ loading
    async def _load_all(self) -> None:
        for partition in self.partitions:
            await self._load(partition)
        self._loaded.set()
        total = sum(p.load_time_ms or 0.0 for p in self.partitions)
        log.info("coordinator partitions loaded", partitions=self.num_partitions,
                 load_time_ms=round(total, 1))

    async def _load(self, partition: _Partition) -> None:
        partition.state = PartitionState.LOADING
        try:
            plog, shard, load_ms, records, snapshot, tail_bytes = await asyncio.to_thread(
                self._open_and_replay, partition.index)
        except Exception as exc:  # corrupt log, I/O error, undecodable record, replay bug
            partition.state = PartitionState.FAILED
            partition.failure = str(exc)
            log.error("coordinator partition failed to load", partition=partition.index,
                      error=str(exc))
            return
        partition.log = plog
        partition.shard = shard
        partition.appended = partition.durable = plog.next_offset
        partition.load_time_ms = load_ms
        partition.failure = None
        partition.snapshot = None if snapshot is None else snapshot.path
        partition.snapshot_end = 0 if snapshot is None else snapshot.end_offset
        partition.snapshot_ms = time.monotonic() * 1000.0
        partition.bytes_since_snapshot = tail_bytes
        shard.on_loaded(self.clock.now_ms())
        partition.state = PartitionState.ACTIVE
        if records:
            log.info("coordinator partition loaded", partition=partition.index, records=records,
                     load_time_ms=round(load_ms, 2), snapshot_end_offset=partition.snapshot_end)

    def _open_and_replay(self, index: int) -> tuple[PartitionLog, Any, float, int,
                                                    snapshots.Snapshot | None, int]:
        """Open the partition's log and rebuild its state: the newest valid snapshot, then the
        log after it, of which only what replay needs is decoded (``storage.replay``)."""
        started = time.perf_counter()
        snapshot = snapshots.newest(partition_dir(self.log_dir, index), index)
        # every answer waits for an fsync: batches are written by the flushing thread, not here;
        # what the snapshot covers was fsynced, so the open scans only the log after it
        plog = PartitionLog.open(self.log_dir, index, self.segment_bytes, budget=self.budget,
                                 defer_writes=self.flush_interval_ms == 0,
                                 recovery_point=None if snapshot is None
                                 else snapshot.recovery_point)
        shard = self.shard_factory(index)
        try:
            if snapshot is not None and not snapshots.reaches(snapshot, plog):
                snapshot = None  # (then the open found no recovery point either: all scanned)
            if snapshot is not None:
                self._replay(index, shard, snapshot.records)
            start = 0 if snapshot is None else snapshot.end_offset
            latest = latest_records(plog, start, keep_every=self._keep_every())
            self._replay(index, shard, latest.result())
        except BaseException:
            plog.close()
            raise
        count = latest.count + (0 if snapshot is None else len(snapshot.records))
        return (plog, shard, (time.perf_counter() - started) * 1000.0, count, snapshot,
                latest.bytes)

    def _replay(self, index: int, shard: Any, records: list[LogRecord]) -> None:
        """Decode and replay a load's records, in order. A shard that replays some types from
        their bytes (``replay_records``: offset commits) is given them undecoded, but for the
        types the record listener wants."""
        listener = self.record_listener
        replay = shard.replay

        def replay_decoded(offset: int, ts: int, key_bytes: bytes, value_bytes: bytes | None
                           ) -> None:
            key, value = decode_record(key_bytes, value_bytes)
            replay(offset, key, value)
            if listener is not None:
                listener(index, offset, ts, key, value)

        listened = self._listened_prefixes()
        replay_records = None if listened is None else getattr(shard, "replay_records", None)
        if replay_records is not None:
            replay_records(records, listened, replay_decoded)
            return
        for record in records:
            replay_decoded(*record)

    def _listened_prefixes(self) -> frozenset[bytes] | None:
        """The key prefixes (type ids) of the records the record listener needs at a load;
        None: all of them."""
        if self.record_listener is None:
            return frozenset()
        wanted = self.record_listener_keys
        if wanted is None:
            return None
        return frozenset(prefix for prefix, rt in KEY_PREFIXES.items() if rt.key_cls in wanted)

    def _keep_every(self) -> frozenset[int]:
        """The type ids a load replays every record of: those the record listener needs."""
        if self.record_listener is None:
            return frozenset()
        wanted = self.record_listener_keys
        return frozenset(tid for tid, rt in RECORD_TYPES.items()
                         if wanted is None or rt.key_cls in wanted)

    # ------------------------------------------------------------------ scheduling
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def state(self, index: int) -> PartitionState:
        return self.partitions[index].state

    def durable_log(self, index: int) -> tuple[PartitionLog, int] | None:
        """An active partition's log and the offset it is durable to (what readers of the
        internal topics may see); None while it loads or after it failed."""
        partition = self.partitions[index]
        if partition.state is not _ACTIVE or partition.log is None:
            return None
        return partition.log, partition.durable

    def _active(self, index: int) -> _Partition:
        partition = self.partitions[index]
        if partition.state is PartitionState.LOADING:
            raise load_in_progress(index)
        if partition.state is not _ACTIVE:
            raise not_available(index, partition.failure or partition.state.value)
        return partition

    async def write(self, index: int, handler: WriteHandler, name: str = "request",
                    group_id: str | None = None) -> Any:
        """Run ``handler(shard, now)`` on the partition; its records are written, applied, and
        its response returned once durable. ``group_id``: the handler touches only this
        group's state (see the module's docstring)."""
        return await self.submit(index, True, handler, name, group_id)

    async def read(self, index: int, handler: ReadHandler, name: str = "request",
                   group_id: str | None = None) -> Any:
        """Run ``handler(shard, now)`` for its response; answered once everything applied
        before it (only ``group_id``'s records, if given) is durable."""
        return await self.submit(index, False, handler, name, group_id)

    def submit(self, index: int, write: bool, handler: Callable[[Any, int], Any],
               name: str = "request", group_id: str | None = None) -> asyncio.Future[Any]:
        """The event's answer as a future. When the partition has nothing queued, the event
        runs now, in the caller's turn of the event loop (no hop through the processor task),
        and the future may be done already: a heartbeat that writes nothing is answered
        without ever suspending. Otherwise it is queued behind the others, in order."""
        partition = self._active(index)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        event = _Event(write, handler, future, name=name, group_id=group_id)
        if not partition.queue.empty() or partition.turn_ms > TURN_BUDGET_MS:
            partition.queue.put_nowait(event)
        elif not self._execute(partition, event):
            # Reloading takes the processor; until it runs, the queue is not empty, so later
            # events wait behind the reload instead of running on the broken state.
            partition.queue.put_nowait(_Event(True, _RELOAD, None, name="an event failed"))
        return future

    def ready_shard(self, index: int, group_id: str | None = None) -> Any:
        """The partition's shard if an event that writes no record (of ``group_id``'s) would
        run now and be answered at once: the partition active, nothing queued, its turn's
        budget left, nothing the event must wait for still to be made durable. None
        otherwise. The caller runs such an event on it at once, changing nothing if it
        cannot answer, and then tells ``ran_now``."""
        partition = self.partitions[index]
        if (partition.state is not _ACTIVE or partition.queue.qsize()
                or partition.turn_ms > TURN_BUDGET_MS):
            return None
        if self.flush_interval_ms == 0:
            durable = partition.durable
            if group_id is None:
                if durable < partition.appended:
                    return None
            elif (durable < partition.appended_unkeyed
                  or durable < partition.appended_by_group.get(group_id, 0)):
                return None
        return partition.shard

    def ran_now(self, count: int, processing_ms: float) -> None:
        """``count`` events were run on shards from ``ready_shard``, in ``processing_ms``
        together: timed and told as events are (each one the batch's mean)."""
        each = processing_ms / count
        if each >= self.slow_event_ms:
            log.warning("slow coordinator events: every group waited for them", events=count,
                        processing_ms=round(processing_ms, 1))
        if self.events_listener is not None:
            self.events_listener(count, each)

    def queue_size(self, index: int) -> int:
        return self.partitions[index].queue.qsize()

    # ------------------------------------------------------------------ the processor
    async def _process(self, partition: _Partition) -> None:
        since_yield = time.perf_counter()
        while True:
            if not partition.queue.empty() and (
                    partition.turn_ms > TURN_BUDGET_MS
                    or (time.perf_counter() - since_yield) * 1000.0 > TURN_BUDGET_MS):
                # ``get`` would not yield with events queued: once the partition's events had
                # their share of this turn, the other partitions and the connections run
                # before the next, so a backlog here stalls nobody else for long.
                await asyncio.sleep(0)
                partition.turn_ms = 0.0
                since_yield = time.perf_counter()
            waits = partition.queue.empty()
            event = await partition.queue.get()
            if waits:  # ``get`` waited: this event opens a turn of its own
                since_yield = time.perf_counter()
            if event.handler is _RELOAD:
                await self._reload(partition, event.name)
            elif not self._execute(partition, event):
                await self._reload(partition, "an event failed")

    def _execute(self, partition: _Partition, event: _Event) -> bool:
        """Run one event; False if it failed (a bug in a handler or replay: the caller has the
        partition rebuilt from disk)."""
        started = time.perf_counter()
        ok = True
        try:
            self._run_event(partition, event)
        except Exception:
            log.exception("event failed; reloading the partition", partition=partition.index,
                          event_name=event.name)
            _fail(event.future, CoordinatorError(ErrorCode.unknown_server_error))
            ok = False
        processing_ms = (time.perf_counter() - started) * 1000.0
        if event.records:
            partition.turn_ms += processing_ms
            if not partition.turn_reset:
                partition.turn_reset = True
                asyncio.get_running_loop().call_soon(_new_turn, partition)
        if processing_ms >= self.slow_event_ms:
            log.warning("slow coordinator event: every group waited for it",
                        partition=partition.index, event_name=event.name,
                        group_id=event.group_id, records=event.records,
                        processing_ms=round(processing_ms, 1))
        if self.event_listener is not None:
            self.event_listener(partition.index, (started - event.enqueued) * 1000.0,
                                processing_ms)
        return ok

    def _run_event(self, partition: _Partition, event: _Event) -> None:
        if event.future is not None and event.future.done():
            return  # the requester went away
        if partition.state is not _ACTIVE:
            _fail(event.future, not_available(partition.index, partition.failure or "not active"))
            return
        now = self.clock.now_ms()
        try:
            outcome = event.handler(partition.shard, now)
        except CoordinatorError as exc:
            _fail(event.future, exc)
            return
        if not event.write:
            self._answer_when_durable(partition, event.future, outcome, event.group_id)
            return
        assert isinstance(outcome, Result), f"write handler returned {type(outcome)}"
        event.records = len(outcome.records)
        if outcome.records and not self._append(partition, outcome.records, now, event):
            return
        if outcome.effect is not None:
            outcome.effect()
        for key, response in outcome.completions:
            waiting = partition.pending.pop(key, None)
            if waiting is not None:
                self._answer_when_durable(partition, waiting, response, event.group_id)
        if isinstance(outcome.response, Pending):
            replaced = partition.pending.pop(outcome.response.key, None)
            _fail(replaced, CoordinatorError(ErrorCode.unknown_member_id,
                                             "replaced by a newer request"))
            if event.future is not None:
                partition.pending[outcome.response.key] = event.future
            return
        self._answer_when_durable(partition, event.future, outcome.response, event.group_id)

    def _append(self, partition: _Partition, records: Any, now: int, event: _Event) -> bool:
        assert partition.log is not None
        encoded = [encode_record(key, value) for key, value in records]
        try:
            last = partition.log.append_batch(encoded, now)
        except (OSError, ValueError, StorageError) as exc:
            log.error("coordinator write failed", partition=partition.index,
                      event_name=event.name, records=len(encoded), error=str(exc))
            _fail(event.future, write_failed(partition.index, str(exc)))
            return False
        base = last - len(encoded) + 1
        size = 36  # the batch header, then each record's (as storage.framing frames them)
        for key_bytes, value_bytes in encoded:
            size += 12 + len(key_bytes) + (0 if value_bytes is None else len(value_bytes))
        partition.bytes_since_snapshot += size
        listener = self.record_listener
        for offset, (key, value) in enumerate(records, start=base):
            partition.shard.replay(offset, key, value)
            if listener is not None:
                listener(partition.index, offset, now, key, value)
        partition.appended = last + 1
        if event.group_id is None:
            partition.appended_unkeyed = last + 1
        else:
            partition.appended_by_group[event.group_id] = last + 1
        self._dirty.add(partition)
        self._round_soon()
        return True

    def _answer_when_durable(self, partition: _Partition, future: asyncio.Future[Any] | None,
                             response: Any, group_id: str | None = None) -> None:
        if future is None:
            return
        needed = partition.appended if group_id is None else max(
            partition.appended_unkeyed, partition.appended_by_group.get(group_id, 0))
        if self.flush_interval_ms > 0 or partition.durable >= needed:
            if not future.done():
                future.set_result(response)
            return
        heapq.heappush(partition.waiters, (needed, next(self._waiter_seq), future, response))

    # ------------------------------------------------------------------ group commit
    async def _flush_loop(self) -> None:
        """With ``coordinator.log.flush.interval.ms``: a round of the dirty partitions at
        that interval."""
        while True:
            await asyncio.sleep(self.flush_interval_ms / 1000.0)
            self._start_rounds()

    def _round_soon(self) -> None:
        """Without a flush interval: the rounds start right after this turn of the event loop,
        so that every partition appended to in the turn shares them."""
        if self.flush_interval_ms == 0 and not self._round_due:
            self._round_due = True
            asyncio.get_running_loop().call_soon(self._start_rounds)

    def _start_rounds(self) -> None:
        self._round_due = False
        batch = {p for p in self._dirty if p not in self._flushing}
        self._dirty -= batch
        self._flush(batch)

    def _flush(self, batch: set[_Partition]) -> None:
        """Start an fsync round of each partition appended to since its last round: its
        batches kept in memory are written, then the file is fsynced in the helper process.
        Rounds of different partitions run in parallel and independently: a partition whose
        fsync stalls holds back only its own answers; what it appends meanwhile waits for its
        next round, which starts when the stalled one ends."""
        requests: list[tuple[int, int, Done]] = []
        for partition in batch:
            plog = partition.log
            if partition.state is not _ACTIVE or plog is None:
                continue
            try:
                written_to, fd = plog.write_pending()
            except (OSError, ValueError, StorageError) as exc:
                self._flush_failed(partition, plog, exc)
                continue
            self._flushing.add(partition)
            requests.append((partition.index, fd,
                             functools.partial(self._synced, partition, plog, written_to)))
        self._flusher.fsync(requests)

    def _synced(self, partition: _Partition, plog: PartitionLog, written_to: int,
                code: int) -> None:
        """A round's fsync ended (``code``: its errno, 0 when the records are durable,
        ``RETRY`` when the helper process was lost before it answered: a new round)."""
        self._flushing.discard(partition)
        if code == RETRY:
            if partition.log is plog:
                self._dirty.add(partition)
        elif code:
            self._flush_failed(partition, plog, OSError(code, os.strerror(code)))
        elif partition.log is plog:
            self._durable(partition, written_to)
        if partition in self._dirty:
            self._round_soon()  # appended to during the round: its next round

    def _flush_failed(self, partition: _Partition, plog: PartitionLog,
                      exc: Exception) -> None:
        if partition.log is not plog:
            return  # reloaded meanwhile
        log.error("coordinator fsync failed", partition=partition.index, error=str(exc))
        self._fail_waiters(partition, write_failed(partition.index, str(exc)))
        task = asyncio.create_task(self._reload(partition, f"fsync failed: {exc}"))
        self._tasks.append(task)
        task.add_done_callback(self._forget_task)

    def _forget_task(self, task: asyncio.Task[None]) -> None:
        with contextlib.suppress(ValueError):
            self._tasks.remove(task)

    def _durable(self, partition: _Partition, durable: int) -> None:
        if durable > partition.durable and self.on_durable is not None:
            self.on_durable()  # readers of the internal topics long-poll on this
        partition.durable = max(partition.durable, durable)
        waiters = partition.waiters
        while waiters and waiters[0][0] <= partition.durable:
            _, _, future, response = heapq.heappop(waiters)
            if not future.done():
                future.set_result(response)
        if partition.durable >= partition.appended:
            partition.appended_by_group.clear()  # everything is durable: nothing to remember
        if self._snapshot_due(partition):
            self._start_snapshot(partition)

    # ------------------------------------------------------------------ snapshots
    def _snapshot_due(self, partition: _Partition) -> bool:
        if (self.snapshot_max_bytes <= 0 or partition.snapshotting
                or partition.durable <= partition.snapshot_end
                or partition.state is not _ACTIVE):
            return False
        if partition.bytes_since_snapshot >= self.snapshot_max_bytes:
            return True
        return 0 < self.snapshot_interval_ms <= time.monotonic() * 1000.0 - partition.snapshot_ms

    def _start_snapshot(self, partition: _Partition) -> None:
        """Snapshot the partition's durable records in a thread (``storage.snapshot``); the
        partition goes on meanwhile."""
        partition.snapshotting = True
        task = asyncio.create_task(self._snapshot(partition))
        self._snapshot_tasks.add(task)
        task.add_done_callback(self._snapshot_tasks.discard)

    async def _snapshot(self, partition: _Partition) -> None:
        plog, end = partition.log, partition.durable
        assert plog is not None
        appended_after = partition.bytes_since_snapshot
        try:
            taken = await asyncio.to_thread(
                snapshots.take, plog, end, base=partition.snapshot,
                tombstone_retention_ms=self.tombstone_retention_ms,
                now_ms=self.clock.now_ms())
        except Exception as exc:  # I/O error, full disk, a log closed by a reload
            log.error("coordinator snapshot failed", partition=partition.index,
                      end_offset=end, error=str(exc))
            taken = None
        finally:
            partition.snapshotting = False
        if partition.log is not plog:
            return  # reloaded meanwhile: the reload found the snapshots on disk
        partition.snapshot_ms = time.monotonic() * 1000.0
        if taken is not None:
            partition.snapshot, partition.snapshot_end = taken.path, taken.end_offset
            # what was appended while it was taken is not in it (roughly: bytes are counted
            # per append, not per offset)
            partition.bytes_since_snapshot = max(
                0, partition.bytes_since_snapshot - appended_after)

    async def snapshot(self, index: int) -> Path | None:
        """Snapshot the partition's durable records now (tests, ``bench load``); the file, or
        None when there is nothing new to snapshot."""
        partition = self._active(index)
        while partition.snapshotting:
            await asyncio.sleep(0.001)
        if partition.durable <= partition.snapshot_end:
            return partition.snapshot
        partition.snapshotting = True
        await self._snapshot(partition)
        return partition.snapshot

    def _fail_waiters(self, partition: _Partition, error: CoordinatorError) -> None:
        waiters, partition.waiters = partition.waiters, []
        for _, _, future, _ in waiters:
            _fail(future, error)

    def _fail_pending(self, partition: _Partition, error: CoordinatorError) -> None:
        pending, partition.pending = partition.pending, {}
        for future in pending.values():
            _fail(future, error)

    async def _reload(self, partition: _Partition, why: str) -> None:
        """Rebuild the partition's state from its log: the log is the only source of truth."""
        self._fail_waiters(partition, not_available(partition.index, why))
        self._fail_pending(partition, not_available(partition.index, why))
        if partition.state is PartitionState.LOADING:
            return  # a reload is already under way
        if partition.log is not None:
            self.budget.release(partition.log.size_bytes)  # the reopen counts them again
            with contextlib.suppress(OSError, ValueError):
                partition.log.close()
        partition.log = None
        partition.shard = None
        await self._load(partition)

    # ------------------------------------------------------------------ timers
    async def _timer_loop(self) -> None:
        tick = self.timer_tick_ms / 1000.0
        while True:
            self.fire_due_timers()
            await asyncio.sleep(self._until_next_timer(tick))

    def _until_next_timer(self, tick: float) -> float:
        """Seconds to sleep: a tick, or less when a timer is due sooner (so a timer armed a
        tick or more ahead fires on time, not up to a tick late)."""
        soonest = None
        for partition in self.partitions:
            if partition.state is _ACTIVE and partition.shard is not None:
                deadline = partition.shard.timers.next_deadline()
                if deadline is not None and (soonest is None or deadline < soonest):
                    soonest = deadline
        if soonest is None:
            return tick
        return min(tick, max(0.001, (soonest - self.clock.now_ms()) / 1000.0))

    def fire_due_timers(self) -> int:
        """Queue every due timer of every active partition as an event; returns how many."""
        now = self.clock.now_ms()
        fired = 0
        for partition in self.partitions:
            if partition.state is not _ACTIVE:
                continue
            for key, action in partition.shard.timers.poll(now):
                partition.queue.put_nowait(_Event(True, action, None, name=f"timer {key}"))
                fired += 1
        return fired

    async def drain(self, index: int) -> None:
        """Wait until every event queued on the partition so far has run (tests)."""
        await self.read(index, lambda shard, now: None, name="drain")


def _new_turn(partition: _Partition) -> None:
    """Called back in the event loop's next turn after the partition ran a writing event: its
    events have the new turn's share again."""
    partition.turn_ms = 0.0
    partition.turn_reset = False


def _RELOAD(shard: Any, now: int) -> None:
    """The marker event that makes the processor reload its partition."""
    raise AssertionError("the reload marker is never run")


def _fail(future: asyncio.Future[Any] | None, error: BaseException) -> None:
    if future is not None and not future.done():
        future.set_exception(error)
