"""The request loops the load benches share (``heartbeat_load``, ``commit_load``): each
connection carries the requests of some *senders* (a member, a committing client), sends
their pre-encoded frames, and reads back only what it checks of each answer.

* closed loop: every sender has one request in flight; its answer sends the next;
* open loop: requests leave at ``rate`` per second whatever the answers do, and a latency is
  counted from the time a request was due, not the time it left.

Answers come back in request order per connection, so each connection keeps the senders of
its requests in flight in a deque; the requests one read's answers release go out as one
write. Times are ``time.perf_counter()``: on Linux the system-wide monotonic clock, so the
parent process can give every worker the same start time.
"""

from __future__ import annotations

import asyncio
import gc
import time
from array import array
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from .wire import Wire
from .wire import run as run_loop

FrameFor = Callable[[int], bytes]
"""The next request frame of a sender."""
Check = Callable[[int, bytes], "str | None"]
"""What is wrong with a sender's answer (its frame after the size prefix), or None."""
TICK_S = 0.001
"""An open loop's send period (a request due meanwhile waits for the next tick)."""
DRAIN_TIMEOUT_S = 60.0
"""How long the answers still owed at the end may take (an open loop beyond the server's
capacity leaves a backlog)."""


@dataclass(slots=True)
class Outcome:
    """What a worker measured."""

    latencies_ms: array[float]
    answered: int
    errors: int
    first_error: str | None
    senders: int
    cpu_s: float = 0.0
    """The worker's CPU time over the window (is the load generator the limit?)."""


class Recorder:
    def __init__(self, counted_from: float, end_at: float) -> None:
        self.counted_from = counted_from
        self.end_at = end_at
        self.latencies_ms: array[float] = array("d")
        self.count = 0
        self.errors = 0
        self.first_error: str | None = None
        self.cpu_s = 0.0

    def answered(self, sent: float, arrived: float) -> None:
        """Throughput counts the answers that arrived in the window; latency, the requests
        sent (or due) in it, whenever they were answered."""
        if self.counted_from <= arrived <= self.end_at:
            self.count += 1
        if self.counted_from <= sent <= self.end_at:
            self.latencies_ms.append((arrived - sent) * 1000.0)

    def error(self, text: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = text

    def outcome(self, senders: int) -> Outcome:
        return Outcome(self.latencies_ms, self.count, self.errors, self.first_error, senders,
                       self.cpu_s)

    async def window(self) -> None:
        """Until the window ends, noting this process's CPU time over it."""
        await asyncio.sleep(max(0.0, self.counted_from - time.perf_counter()))
        before = time.process_time()
        await asyncio.sleep(max(0.0, self.end_at - time.perf_counter()))
        self.cpu_s = time.process_time() - before


class LoadConnection:
    """One connection's side of the load."""

    def __init__(self, wire: Wire, frame_for: FrameFor, check: Check, recorder: Recorder
                 ) -> None:
        self.wire = wire
        self.transport = wire.transport
        self.frame_for = frame_for
        self.check = check
        self.recorder = recorder
        self.in_flight: deque[tuple[int, float]] = deque()
        self.closed_loop = False
        wire.frames.sink = self.on_frames

    def send(self, senders: list[int], at: list[float]) -> None:
        frame_for = self.frame_for
        self.in_flight.extend(zip(senders, at, strict=True))
        self.transport.write(b"".join([frame_for(s) for s in senders]))

    def on_frames(self, frames: list[bytes], arrived: float) -> None:
        recorder, check = self.recorder, self.check
        pop = self.in_flight.popleft
        again: list[int] = []
        for frame in frames:
            sender, sent = pop()
            wrong = check(sender, frame)
            if wrong is not None:
                recorder.error(wrong)
            recorder.answered(sent, arrived)
            again.append(sender)
        if self.closed_loop and arrived < recorder.end_at:
            now = time.perf_counter()
            self.send(again, [now] * len(again))

    def detach(self) -> None:
        """Give the connection back to request/response use (``Wire.request``)."""
        self.wire.frames.sink = None


async def closed_loop(connections: list[LoadConnection], senders: list[list[int]],
                      start_at: float) -> None:
    await asyncio.sleep(max(0.0, start_at - time.perf_counter()))
    for connection, mine in zip(connections, senders, strict=True):
        connection.closed_loop = True
        if mine:
            connection.send(mine, [time.perf_counter()] * len(mine))
    await connections[0].recorder.window()


async def open_loop(connections: list[LoadConnection], senders: list[list[int]],
                    start_at: float, rate: float) -> None:
    """Request number i is due at ``start_at + i / rate``, from the senders in turn: each tick
    (every ``TICK_S``) sends every request due by then, one write per connection; a latency
    counts from the request's due time, so the tick's wait is in it."""
    # the connections interleaved, so that consecutive requests use different ones
    order = [(connections[c], mine[k]) for k in range(max(map(len, senders)))
             for c, mine in enumerate(senders) if k < len(mine)]
    end_at = connections[0].recorder.end_at
    sent = 0
    window = asyncio.ensure_future(connections[0].recorder.window())
    await asyncio.sleep(max(0.0, start_at - time.perf_counter()))
    while True:
        now = time.perf_counter()
        if now >= end_at:
            await window
            return
        due = int((now - start_at) * rate) + 1
        batches: dict[LoadConnection, tuple[list[int], list[float]]] = {}
        for i in range(sent, due):
            connection, sender = order[i % len(order)]
            batch = batches.setdefault(connection, ([], []))
            batch[0].append(sender)
            batch[1].append(start_at + i / rate)
        sent = due
        for connection, (mine, at) in batches.items():
            connection.send(mine, at)
        await asyncio.sleep(max(TICK_S, start_at + sent / rate - time.perf_counter()))


async def drain(connections: list[LoadConnection], timeout_s: float = DRAIN_TIMEOUT_S) -> bool:
    """Wait for the answers still owed; True when every one came."""
    deadline = time.perf_counter() + timeout_s
    while any(c.in_flight for c in connections) and time.perf_counter() < deadline:
        await asyncio.sleep(0.01)
    return not any(c.in_flight for c in connections)


async def run_window(pipe: Connection, wires: list[Wire], frame_for: FrameFor, check: Check,
                     senders: list[list[int]], rate: float | None
                     ) -> tuple[Recorder, list[LoadConnection], bool]:
    """A worker's measured part, once its senders are set up (``senders[c]``: those of
    ``wires[c]``): report ("ready", how many senders), get (start, counted from, end) from the
    parent (``workers.run_workers``), run the closed loop (``rate`` None) or the open loop over
    that window, then wait for the answers still owed. Returns the recorder, the connections
    and whether every answer came."""
    quiet_collector()
    pipe.send(("ready", sum(map(len, senders))))
    start_at, counted_from, end_at = await asyncio.to_thread(pipe.recv)
    recorder = Recorder(counted_from, end_at)
    connections = [LoadConnection(w, frame_for, check, recorder) for w in wires]
    if rate is None:
        await closed_loop(connections, senders, start_at)
    else:
        await open_loop(connections, senders, start_at, rate)
    return recorder, connections, await drain(connections)


def run_worker(load: Coroutine[Any, Any, Outcome], pipe: Connection) -> None:
    """A worker process's body: runs ``load``, then sends its ``Outcome`` (or ("failed",
    why))."""
    try:
        outcome: Any = run_loop(load)
    except Exception as exc:  # reported to the parent, which stops the bench
        outcome = ("failed", f"{type(exc).__name__}: {exc}")
    pipe.send(outcome)


def quiet_collector() -> None:
    """Keep a load generator's own garbage collector from pausing it (a pause would be
    counted as the server's latency): what exists now is frozen, and collection is off (the
    generator's garbage is acyclic; reference counting frees it)."""
    gc.collect()
    gc.freeze()
    gc.disable()


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")
