"""The share-partition state machine (KIP-932): Kafka's ``SharePartition``, pure.

One :class:`SharePartition` per (group, topic id, partition). No I/O, no clock: the caller passes
virtual time, the log's batch headers and the configs, and writes the :class:`Changes` a method
returns as a record (``state_records``); replaying that record goes back through
:meth:`SharePartition.load_update` / :meth:`SharePartition.load_snapshot`.

**State.** Records from the start offset (SPSO) to the end offset (SPEO, the last offset ever
acquired or loaded) are *in flight*. Each has a state (AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2,
ARCHIVED 4; the last two are terminal), a delivery count, and, while ACQUIRED, an owner: the
:class:`Acquisition` (one per :meth:`acquire` call: member id, lock deadline) that holds it. The
SPSO is always the first non-terminal offset: once the records at its head are terminal it moves
past them and they leave the window.

**Representation.** Three arrays indexed by ``offset - start_offset``: a ``bytearray`` of states
(so the first AVAILABLE offset, the terminal prefix and the counts are found by C code), and two
lists, delivery counts and owners (acquisition id, 0 for none). The window is bounded by
``group.share.partition.max.record.locks`` (2000 by default), so an operation touches at most a
few thousand slots; trimming the terminal head is a slice deletion.

**What is persisted (Kafka's §4.2/4.9).** ACQUIRED is never written; nothing is written on
acquire. A record's persisted view (:meth:`SharePartition.persisted_batches`) is its state and
count, except:

- ACQUIRED with count ``n``: it was AVAILABLE with count ``n - 1`` before this acquisition, which
  is what the log holds, so it shows as (AVAILABLE, ``n - 1``), or not at all when ``n == 1``
  (never written: after a reload it is a gap, acquired again with count 1, as in Kafka);
- AVAILABLE with count 0 (a gap of a loaded state: never delivered) is not shown.

Loading gives every offset its persisted state with no owner; gaps between loaded batches are
AVAILABLE with count 0, so they are acquired first, with count 1 (Kafka's gap window).

**Replaying one's own records.** A write handler changes the partition, writes the returned
Changes as a record, and the runtime then replays that record into the same object. Loads are
idempotent there: an update whose batches the partition already holds changes nothing, and a
snapshot keeps every acquisition it agrees with (the acquired offset shows in it as its persisted
view). Only a snapshot of another state epoch drops all acquisitions.

Deviations from Kafka, on purpose:

- acquisition granularity: new records are aligned to the log's batch ends as Kafka's
  ``batch_optimized`` mode; re-acquired in-flight records stop at the end of the *log* batch in
  which the record limit is reached (Kafka: at the end of its in-flight batch, which is one or
  more log batches);
- one lock per acquisition (Kafka: one timer per in-flight batch or offset);
- no delivery throttling near the delivery limit (Kafka 4.2+), no RENEW (v2), no DLQ;
- offsets that the log no longer has between the old end and the first batch of a fetch (or
  AVAILABLE in-flight offsets before the first fetched batch) are ARCHIVED with count 0 and
  skipped by acknowledgements (Kafka leaves holes in its cache, or archives stale batches);
- :meth:`SharePartition.acknowledge` reports the SPSO after it advanced (Kafka writes the SPSO
  before advancing and the new one with the next write);
- a loaded batch below the start offset is pruned (Kafka fails the load); a ShareUpdate's start
  offset never moves the start offset back (Kafka's writer never writes one that would).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

from protocol import ErrorCode

AVAILABLE = 0
ACQUIRED = 1
ACKNOWLEDGED = 2
ARCHIVED = 4

GAP = 0
ACCEPT = 1
RELEASE = 2
REJECT = 3
RENEW = 4  # ShareFetch/ShareAcknowledge v2 only: INVALID_REQUEST here

# acknowledge type -> new state (RELEASE: ARCHIVED instead at the delivery limit)
_ACK_STATE = (ARCHIVED, ACKNOWLEDGED, AVAILABLE, ARCHIVED)
# a loaded DeliveryState -> ours: ACQUIRED is never persisted (no owner: AVAILABLE);
# ARCHIVING (3, Kafka's DLQ) has no DLQ here
_LOADED_STATE = {AVAILABLE: AVAILABLE, ACQUIRED: AVAILABLE, ACKNOWLEDGED: ACKNOWLEDGED,
                 3: ARCHIVED, ARCHIVED: ARCHIVED}

_TERMINAL_PREFIX = re.compile(b"[\x02\x04]*")
_AVAILABLE_RUN = re.compile(b"\x00+")
_ACQUIRED_BYTE = bytes((ACQUIRED,))
_ACK_TABLE = bytes(_ACK_STATE) + bytes(256 - len(_ACK_STATE))  # for bytes.translate
_BASE = itemgetter(0)
_LAST = itemgetter(1)


class StateBatch(NamedTuple):
    """A range of offsets in one state with one delivery count: the persisted shape (Kafka's
    ``PersisterStateBatch``)."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


class AcquiredRange(NamedTuple):
    """An ``AcquiredRecords`` entry of a ShareFetch response."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class Acquisition:
    """What one :meth:`SharePartition.acquire` took: its ranges, for ``member_id``, locked until
    ``lock_deadline_ms`` (then :meth:`SharePartition.expire` releases what is still held)."""

    acquisition_id: int
    member_id: str
    ranges: tuple[AcquiredRange, ...]
    lock_deadline_ms: int

    @property
    def record_count(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for r in self.ranges)


@dataclass(frozen=True, slots=True)
class Changes:
    """The persisted-state delta to write: the changed ranges in their new state (merged where
    contiguous and equal, none below ``start_offset``) and the start offset after the change.
    False (nothing to write) when no batch changed and the start offset did not move."""

    batches: tuple[StateBatch, ...] = ()
    start_offset: int = -1
    start_moved: bool = False

    def __bool__(self) -> bool:
        return bool(self.batches) or self.start_moved


class SharePartition:
    """One share partition's in-flight records; see the module docstring."""

    def __init__(self, start_offset: int = -1, state_epoch: int = 0) -> None:
        self.start_offset = start_offset
        """The SPSO; -1 until resolved (``share.auto.offset.reset``, :meth:`resolve_start`)."""
        self.state_epoch = state_epoch
        self.snapshot_epoch = 0
        self.updates_since_snapshot = 0
        """ShareUpdates replayed since the last ShareSnapshot (the snapshot rule's counter)."""
        self.expired_count = 0
        """Records whose acquisition lock expired, since creation (a metric)."""
        self._states = bytearray()
        self._counts: list[int] = []
        self._owners: list[int] = []
        self._acquisitions: dict[int, Acquisition] = {}
        self._held: dict[int, int] = {}  # acquisition id -> offsets it still holds ACQUIRED
        self._next_id = 1

    def clone(self) -> SharePartition:
        """An independent copy: a write handler changes the copy and installs it once its
        record is written (a failed write leaves the shard's partition as it was)."""
        other = SharePartition.__new__(SharePartition)
        other.__dict__.update(self.__dict__)
        other._states = bytearray(self._states)
        other._counts = list(self._counts)
        other._owners = list(self._owners)
        other._acquisitions = dict(self._acquisitions)
        other._held = dict(self._held)
        return other

    # ------------------------------------------------------------------ views

    @property
    def end_offset(self) -> int:
        """The last in-flight offset (``start_offset - 1`` when nothing is in flight)."""
        return self.start_offset + len(self._states) - 1

    @property
    def acquisitions(self) -> Mapping[int, Acquisition]:
        """The acquisitions that still hold records, by id (read-only)."""
        return self._acquisitions

    def next_fetch_offset(self) -> int:
        """Where the next fetch reads: the first AVAILABLE in-flight offset, else the end + 1;
        -1 while the start offset is unresolved."""
        if self.start_offset < 0:
            return -1
        i = self._states.find(AVAILABLE)
        return self.start_offset + (len(self._states) if i < 0 else i)

    def in_flight_count(self) -> int:
        """End - start + 1, or 0 when nothing is in flight (what the record-lock limit bounds)."""
        return len(self._states)

    def acquired_count(self) -> int:
        return self._states.count(ACQUIRED)

    def delivery_complete_count(self) -> int:
        """In-flight records in a terminal state (Kafka's ``deliveryCompleteCount``)."""
        return self._states.count(ACKNOWLEDGED) + self._states.count(ARCHIVED)

    def can_acquire(self, max_in_flight: int) -> bool:
        """Kafka's ``canAcquireRecords``: records to redeliver, or room under the lock limit
        (True while the start offset is unresolved: resolve it, then acquire)."""
        return (self.start_offset < 0 or AVAILABLE in self._states
                or len(self._states) < max_in_flight)

    def state_of(self, offset: int) -> tuple[int, int, str | None] | None:
        """(state, delivery count, owning member or None) of an in-flight offset, else None."""
        i = offset - self.start_offset
        if self.start_offset < 0 or not 0 <= i < len(self._states):
            return None
        acq = self._acquisitions.get(self._owners[i])
        return self._states[i], self._counts[i], None if acq is None else acq.member_id

    def persisted_batches(self) -> tuple[StateBatch, ...]:
        """The in-flight state as persisted (a full snapshot's batches); see the module
        docstring for how ACQUIRED and never-delivered records show."""
        return tuple(self._runs(0, len(self._states)))

    # ------------------------------------------------------------------ loading

    def resolve_start(self, offset: int) -> Changes:
        """Set the start offset of a partition whose state starts at -1 (the caller resolved
        ``share.auto.offset.reset`` against the log). Kafka does not write this: the returned
        Changes may be written or not. A no-op once resolved."""
        if self.start_offset >= 0:
            return self._no_changes()
        self.start_offset = offset
        return Changes((), offset, True)

    def load_snapshot(self, start_offset: int, state_epoch: int, snapshot_epoch: int,
                      batches: Iterable[StateBatch]) -> None:
        """Replace the state by a ShareSnapshot's (Kafka's replay). On a fresh partition nothing
        is ACQUIRED afterwards; on a live one the acquisitions the snapshot agrees with stay
        (the module docstring), unless the state epoch changed."""
        keep = state_epoch == self.state_epoch and bool(self._acquisitions)
        old_start, old_counts, old_owners = self.start_offset, self._counts, self._owners
        self.state_epoch = state_epoch
        self.snapshot_epoch = snapshot_epoch
        self.updates_since_snapshot = 0
        batches = sorted(batches)
        if keep and start_offset == old_start and tuple(batches) == self.persisted_batches():
            return  # the replay of its own snapshot: nothing changes
        self.start_offset = start_offset
        self._states, self._counts, self._owners = bytearray(), [], []
        self._held = {}
        if start_offset >= 0:
            for batch in batches:
                self._merge(batch)
        if keep and start_offset >= 0:
            self._keep_agreeing(old_start, old_counts, old_owners)
        self._acquisitions = {aid: acq for aid, acq in self._acquisitions.items()
                              if self._held.get(aid)}
        self._advance()

    def load_update(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        """Merge a ShareUpdate (Kafka's replay): start offset -1 is unchanged (and a lower one
        is ignored); per offset the higher delivery count wins, then the higher state;
        everything below the start offset goes. An acquired offset whose persisted view loses
        to the update leaves its acquisition."""
        self.updates_since_snapshot += 1
        if start_offset > self.start_offset:
            if self.start_offset < 0:
                self.start_offset = start_offset
            else:
                self._move_start(start_offset)
        if self.start_offset >= 0:
            for batch in sorted(batches):
                self._merge(batch)
        self._advance()

    # ------------------------------------------------------------------ acquire

    def acquire(self, member_id: str, log_batches: Sequence[tuple[int, int]], max_records: int,
                batch_size: int, max_in_flight: int, now_ms: int,
                lock_duration_ms: int) -> Acquisition | None:
        """Acquire records for ``member_id`` (Kafka's ``acquire``, batch_optimized).

        ``log_batches``: the (base offset, last offset) of the log's record batches from
        :meth:`next_fetch_offset` on, ascending (more than needed is fine). AVAILABLE in-flight
        records go first, ascending, with delivery count + 1; then new records with count 1,
        up to the end of the log batch that holds the ``max_records``-th, split into ranges of
        about ``batch_size`` at batch boundaries. At most ``min(max_records, max_in_flight -
        in flight)`` records (the limit is reached at a batch end, so it may be passed); at the
        lock limit, only released records up to the end offset. None if nothing was acquired.
        Nothing persisted changes."""
        start = self.start_offset
        if start < 0 or max_records <= 0:
            return None
        nfo = self.next_fetch_offset()
        first_batch = bisect_left(log_batches, nfo, key=_LAST)
        if first_batch == len(log_batches):
            return None
        states, n = self._states, len(self._states)
        end = start + n - 1
        last_to_acquire = log_batches[-1][1]
        limit = min(max_records, max_in_flight - n)
        if limit <= 0:
            if nfo > end:
                return None
            limit = min(max_records, end - nfo + 1)
            last_to_acquire = min(last_to_acquire, end)
        first_base = log_batches[first_batch][0]

        def batch_end(offset: int) -> int:
            """The last offset of the log batch holding ``offset`` (itself if none does)."""
            i = bisect_right(log_batches, offset, lo=first_batch, key=_BASE) - 1
            return log_batches[i][1] if i >= first_batch and log_batches[i][1] >= offset else offset

        aid = self._next_id
        ranges: list[AcquiredRange] = []
        acquired = 0
        if nfo <= end:
            if first_base > nfo:  # gone from the log (compaction): never acquirable again
                for i in range(nfo - start, min(first_base, end + 1) - start):
                    if states[i] == AVAILABLE:
                        states[i] = ARCHIVED
            i = max(nfo, first_base) - start
            hi = min(end, last_to_acquire) - start + 1
            limited = False
            while i < hi:
                m = _AVAILABLE_RUN.search(states, i, hi)
                if m is None:
                    break
                j, k = m.span()
                if not limited and acquired + k - j >= limit:
                    hi = min(hi, batch_end(start + j + limit - acquired - 1) - start + 1)
                    k = min(k, hi)
                    limited = True
                self._take(j, k, aid, ranges)
                acquired += k - j
                i = k
        if acquired < limit and last_to_acquire > end:
            acquired += self._acquire_new(log_batches, batch_end, limit - acquired,
                                          last_to_acquire, batch_size, aid, ranges)
        self._advance()
        if not ranges:
            return None
        self._next_id += 1
        acq = Acquisition(aid, member_id, tuple(ranges), now_ms + lock_duration_ms)
        self._acquisitions[aid] = acq
        self._held[aid] = acquired
        return acq

    def _take(self, j: int, k: int, aid: int, ranges: list[AcquiredRange]) -> None:
        """Acquire the AVAILABLE slots [j, k) for ``aid``, count + 1, into ``ranges``."""
        counts = self._counts
        self._states[j:k] = _ACQUIRED_BYTE * (k - j)
        self._owners[j:k] = [aid] * (k - j)
        new = [c + 1 for c in counts[j:k]]
        counts[j:k] = new
        base = self.start_offset + j
        i = 0
        while i < len(new):
            c = new[i]
            e = i + 1
            while e < len(new) and new[e] == c:
                e += 1
            first, last = base + i, base + e - 1
            if ranges and ranges[-1].last_offset + 1 == first and ranges[-1].delivery_count == c:
                ranges[-1] = AcquiredRange(ranges[-1].first_offset, last, c)
            else:
                ranges.append(AcquiredRange(first, last, c))
            i = e

    def _acquire_new(self, log_batches: Sequence[tuple[int, int]],
                     batch_end: Callable[[int], int], budget: int, last_to_acquire: int,
                     batch_size: int, aid: int, ranges: list[AcquiredRange]) -> int:
        """Acquire new records after the end offset; returns how many offsets were taken."""
        first = self.end_offset + 1
        k = bisect_left(log_batches, first, key=_LAST)
        base = log_batches[k][0]
        if base > first:  # the log has nothing in between
            if self._states:
                self._extend(base - first, ARCHIVED)
            else:
                self.start_offset = base
            first = base
        last = first + budget - 1
        if last < last_to_acquire:
            last = batch_end(last)
        last = min(last, last_to_acquire)
        cur = first
        if last - first + 1 > batch_size:
            for j in range(k + 1, len(log_batches)):
                b = log_batches[j][0]
                if b > last:
                    break
                if b - cur >= batch_size:
                    ranges.append(AcquiredRange(cur, b - 1, 1))
                    cur = b
        ranges.append(AcquiredRange(cur, last, 1))
        count = last - first + 1
        self._states += _ACQUIRED_BYTE * count
        self._counts += [1] * count
        self._owners += [aid] * count
        return count

    # ------------------------------------------------------------------ acknowledge, release

    def acknowledge(self, member_id: str,
                    batches: Sequence[tuple[int, int, Sequence[int]]],
                    delivery_limit: int) -> tuple[ErrorCode, Changes]:
        """Acknowledge (first offset, last offset, types) batches for ``member_id``: one type
        for the whole range or one per offset; GAP and REJECT archive, ACCEPT acknowledges,
        RELEASE makes available again (archived at the delivery limit). All or nothing: the
        first error leaves the partition unchanged. INVALID_REQUEST for a malformed batch
        (first > last, descending, type count, a type outside 0..3) or one past the end
        offset; INVALID_RECORD_STATE for a record not ACQUIRED by this member. Batches wholly
        below the start offset are ignored. Then the start offset moves past the terminal
        head."""
        prev_last = -1
        for first, last, types in batches:
            if (first > last or first < prev_last or not types
                    or (len(types) > 1 and len(types) != last - first + 1)
                    or min(types) < GAP or max(types) > REJECT):
                return ErrorCode.invalid_request, self._no_changes()
            prev_last = last
        start, states, counts, owners = (self.start_offset, self._states, self._counts,
                                         self._owners)
        end = start + len(states) - 1
        plan: list[tuple[int, int, Sequence[int], int, bool]] = []
        done = -1  # the last offset of the previous batch in the plan
        for first, last, types in batches:
            if last < start:
                continue
            if start < 0 or not states or (plan and first <= done):
                return ErrorCode.invalid_record_state, self._no_changes()
            if first > end or last > end:
                return ErrorCode.invalid_request, self._no_changes()
            lo, hi = max(first, start) - start, last - start + 1
            whole = states.count(ACQUIRED, lo, hi) == hi - lo
            if not whole and any(states[i] != ACQUIRED and not _is_hole(states[i], counts[i])
                                 for i in range(lo, hi)):
                return ErrorCode.invalid_record_state, self._no_changes()
            for aid in set(owners[lo:hi]):
                acq = self._acquisitions.get(aid)
                if aid and (acq is None or acq.member_id != member_id):
                    return ErrorCode.invalid_record_state, self._no_changes()
            plan.append((lo, hi, types, first - start, whole))
            done = last
        changed: list[tuple[int, int]] = []
        for lo, hi, types, first_index, whole in plan:
            self._drop_owners(lo, hi)
            if len(types) == 1:
                new = bytes((_ACK_STATE[types[0]],)) * (hi - lo)
            else:
                new = bytes(types[lo - first_index:hi - first_index]).translate(_ACK_TABLE)
            if whole:
                states[lo:hi] = new
            else:  # leave the holes as they are
                for i in range(lo, hi):
                    if states[i] == ACQUIRED:
                        states[i] = new[i - lo]
            if RELEASE in types and max(counts[lo:hi]) >= delivery_limit:
                for i in range(lo, hi):
                    if states[i] == AVAILABLE and counts[i] >= delivery_limit:
                        states[i] = ARCHIVED
            changed.append((lo, hi))
        return ErrorCode.none, self._changes(changed)

    def expire(self, acquisition_id: int, now_ms: int, delivery_limit: int) -> Changes:
        """The acquisition lock of ``acquisition_id`` timed out: what it still holds becomes
        AVAILABLE (ARCHIVED at the delivery limit), delivery counts unchanged. Nothing if the
        acquisition holds nothing any more or ``now_ms`` is before its deadline."""
        acq = self._acquisitions.get(acquisition_id)
        if acq is None or now_ms < acq.lock_deadline_ms:
            return self._no_changes()
        released = self._held.get(acquisition_id, 0)
        changed = self._release(acq, delivery_limit)
        self.expired_count += released
        return self._changes(changed)

    def release_member(self, member_id: str, delivery_limit: int) -> Changes:
        """Release every record ``member_id`` holds (share session closed, member left or was
        fenced): AVAILABLE, or ARCHIVED at the delivery limit; delivery counts unchanged."""
        changed: list[tuple[int, int]] = []
        for acq in [a for a in self._acquisitions.values() if a.member_id == member_id]:
            changed.extend(self._release(acq, delivery_limit))
        changed.sort()
        return self._changes(changed)

    def log_start_moved(self, log_start_offset: int) -> Changes:
        """The log start offset moved (retention, DeleteRecords): what is below it leaves the
        window (acquired records there too: their acknowledgements will be ignored) and the
        start offset moves to it."""
        if self.start_offset < 0 or log_start_offset <= self.start_offset:
            return self._no_changes()
        self._move_start(log_start_offset)
        self._advance()
        return Changes((), self.start_offset, True)

    # ------------------------------------------------------------------ internals

    def _no_changes(self) -> Changes:
        return Changes((), self.start_offset, False)

    def _extend(self, count: int, state: int) -> None:
        self._states += bytes((state,)) * count
        self._counts += [0] * count
        self._owners += [0] * count

    def _drop_owner(self, i: int) -> None:
        aid = self._owners[i]
        if aid:
            self._owners[i] = 0
            self._unhold(aid, 1)

    def _drop_owners(self, lo: int, hi: int) -> None:
        owners = self._owners[lo:hi]
        if not owners:
            return
        if owners.count(owners[0]) == len(owners):  # one owner: the common case
            if owners[0]:
                self._unhold(owners[0], len(owners))
        else:
            for aid, k in Counter(owners).items():
                if aid:
                    self._unhold(aid, k)
        self._owners[lo:hi] = [0] * (hi - lo)

    def _unhold(self, aid: int, k: int) -> None:
        left = self._held.get(aid, 0) - k
        if left > 0:
            self._held[aid] = left
        else:
            self._held.pop(aid, None)
            self._acquisitions.pop(aid, None)

    def _release(self, acq: Acquisition, delivery_limit: int) -> list[tuple[int, int]]:
        """Release what ``acq`` still holds; returns the changed slot ranges."""
        aid, start = acq.acquisition_id, self.start_offset
        states, counts, owners = self._states, self._counts, self._owners
        changed: list[tuple[int, int]] = []
        for r in acq.ranges:
            lo = max(r.first_offset - start, 0)
            hi = min(r.last_offset - start + 1, len(states))
            if hi <= lo:
                continue
            if owners[lo:hi].count(aid) == hi - lo and max(counts[lo:hi]) < delivery_limit:
                states[lo:hi] = bytes(hi - lo)  # all AVAILABLE: the common case
                owners[lo:hi] = [0] * (hi - lo)
                changed.append((lo, hi))
                continue
            run = -1
            for i in range(lo, hi):
                if owners[i] != aid:
                    if run >= 0:
                        changed.append((run, i))
                        run = -1
                    continue
                owners[i] = 0
                states[i] = ARCHIVED if counts[i] >= delivery_limit else AVAILABLE
                if run < 0:
                    run = i
            if run >= 0:
                changed.append((run, hi))
        self._held.pop(aid, None)
        self._acquisitions.pop(aid, None)
        return changed

    def _changes(self, changed: list[tuple[int, int]]) -> Changes:
        """The Changes of slot ranges just changed (ascending, not overlapping), after moving
        the start offset past the terminal head; batches below the new start offset are left
        out."""
        old_start = self.start_offset
        spans: list[tuple[int, int]] = []
        for lo, hi in changed:
            if spans and spans[-1][1] == lo:
                spans[-1] = (spans[-1][0], hi)
            else:
                spans.append((lo, hi))
        batches = [b for lo, hi in spans for b in self._runs(lo, hi)]
        self._advance()
        start = self.start_offset
        kept = [b if b.first_offset >= start else b._replace(first_offset=start)
                for b in batches if b.last_offset >= start]
        return Changes(tuple(kept), start, start != old_start)

    def _runs(self, lo: int, hi: int) -> list[StateBatch]:
        """The persisted view of slots [lo, hi) as batches (merged where equal)."""
        states, counts, base = self._states, self._counts, self.start_offset
        out: list[StateBatch] = []
        if hi - lo > 1 and states.count(states[lo], lo, hi) == hi - lo and states[lo] != ACQUIRED:
            c = counts[lo]
            if counts[lo:hi].count(c) == hi - lo:  # one state, one count: the common case
                if c > 0 or states[lo] != AVAILABLE:
                    out.append(StateBatch(base + lo, base + hi - 1, states[lo], c))
                return out
        i = lo
        while i < hi:
            s, c = states[i], counts[i]
            e = i + 1
            while e < hi and states[e] == s and counts[e] == c:
                e += 1
            if s == ACQUIRED:
                s, c = AVAILABLE, c - 1
            if c > 0 or s != AVAILABLE:
                if (out and out[-1].last_offset == base + i - 1 and out[-1].state == s
                        and out[-1].delivery_count == c):
                    out[-1] = out[-1]._replace(last_offset=base + e - 1)
                else:
                    out.append(StateBatch(base + i, base + e - 1, s, c))
            i = e
        return out

    def _advance(self) -> None:
        """Move the start offset past the terminal head (Kafka's
        ``maybeUpdateCachedStateAndOffsets``)."""
        m = _TERMINAL_PREFIX.match(self._states)
        k = m.end() if m is not None else 0
        if k:
            del self._states[:k]
            del self._counts[:k]
            del self._owners[:k]
            self.start_offset += k

    def _move_start(self, offset: int) -> None:
        """Drop everything below ``offset`` (acquisitions lose what they held there)."""
        k = min(offset - self.start_offset, len(self._states))
        for aid, held in Counter(self._owners[:k]).items():
            if aid:
                self._unhold(aid, held)
        del self._states[:k]
        del self._counts[:k]
        del self._owners[:k]
        self.start_offset = offset

    def _merge(self, batch: StateBatch) -> None:
        """Merge one loaded batch (Kafka's ``PersisterStateBatchCombiner`` rule per offset)."""
        start = self.start_offset
        first, last = max(batch.first_offset, start), batch.last_offset
        if last < first:
            return
        state = _LOADED_STATE.get(batch.state, ARCHIVED)
        count = batch.delivery_count
        states, counts = self._states, self._counts
        lo, hi = first - start, last - start + 1
        if hi > len(states):
            self._extend(hi - len(states), AVAILABLE)
        if states.count(state, lo, hi) == hi - lo and counts[lo:hi].count(count) == hi - lo:
            return  # already so: the replay of one's own update
        for i in range(lo, hi):
            s, c = states[i], counts[i]
            if s == ACQUIRED:
                s, c = AVAILABLE, c - 1
            if count > c or (count == c and state > s):
                states[i] = state
                counts[i] = count
                self._drop_owner(i)

    def _keep_agreeing(self, old_start: int, old_counts: list[int],
                       old_owners: list[int]) -> None:
        """After a snapshot replaced the state: put back the old acquired offsets whose
        persisted view the snapshot shows (so the replay of one's own snapshot keeps them)."""
        start = self.start_offset
        for j, aid in enumerate(old_owners):
            if not aid:
                continue
            i = old_start + j - start
            if i < 0:
                continue
            n = old_counts[j]
            if i < len(self._states):
                s, c = self._states[i], self._counts[i]
                if (s, c) != (AVAILABLE, n - 1 if n >= 2 else 0):
                    continue
            else:
                if n >= 2:
                    continue  # shown as AVAILABLE n - 1 when written: the snapshot disagrees
                self._extend(i + 1 - len(self._states), AVAILABLE)
            self._states[i] = ACQUIRED
            self._counts[i] = n
            self._owners[i] = aid
            self._held[aid] = self._held.get(aid, 0) + 1


def _is_hole(state: int, count: int) -> bool:
    """An offset the log did not have when it was acquired around (never delivered)."""
    return state == ARCHIVED and count == 0
