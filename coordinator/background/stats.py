"""Plain measurements of the background executor (seed 000's metrics), no exporter attached.

* queue time: from submission to a worker starting the task;
* processing time: the task's run time in the worker;
* idle ratio: the share of worker time spent idle over the window;
* transfer: the size and pickling time of each task's input.

Each series keeps the samples of the last ``window_s`` seconds (at most ``max_samples``) and
reports p50/p95/p99/p999/max, the way Kafka's histograms over a sliding window do.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

PERCENTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999))


@dataclass(slots=True)
class SlidingWindow:
    """Samples of the last ``window_s`` seconds, for percentiles."""

    window_s: float = 60.0
    max_samples: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _samples: deque[tuple[float, float]] = field(default_factory=deque)

    def record(self, value: float) -> None:
        now = self.clock()
        self._samples.append((now, value))
        if len(self._samples) > self.max_samples:
            self._samples.popleft()
        self._expire(now)

    def _expire(self, now: float) -> None:
        horizon = now - self.window_s
        while self._samples and self._samples[0][0] < horizon:
            self._samples.popleft()

    def values(self) -> list[float]:
        self._expire(self.clock())
        return [v for _, v in self._samples]

    def summary(self) -> dict[str, float]:
        """p50/p95/p99/p999/max (nearest rank), zeros when there is no sample."""
        values = sorted(self.values())
        if not values:
            return {name: 0.0 for name, _ in PERCENTILES} | {"max": 0.0}
        out = {name: values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]
               for name, q in PERCENTILES}
        out["max"] = values[-1]
        return out


@dataclass(slots=True)
class BusyTracker:
    """Worker busy intervals over a window, for the idle ratio of ``workers`` workers."""

    workers: int
    window_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    _busy: deque[tuple[float, float]] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def record(self, begin: float, end: float) -> None:
        self._busy.append((begin, end))

    def idle_ratio(self) -> float:
        now = self.clock()
        since = max(self.started, now - self.window_s)
        while self._busy and self._busy[0][1] < since:
            self._busy.popleft()
        span = (now - since) * self.workers
        if span <= 0:
            return 1.0
        busy = sum(min(end, now) - max(begin, since) for begin, end in self._busy
                   if end > since)
        return max(0.0, min(1.0, 1.0 - busy / span))


@dataclass(slots=True)
class BackgroundStats:
    """Everything the executor measures; ``snapshot`` names them as Kafka's metrics."""

    workers: int
    window_s: float = 60.0
    queue_ms: SlidingWindow = field(init=False)
    processing_ms: SlidingWindow = field(init=False)
    transfer_bytes: SlidingWindow = field(init=False)
    transfer_ms: SlidingWindow = field(init=False)
    busy: BusyTracker = field(init=False)
    tasks: int = 0
    failures: int = 0

    def __post_init__(self) -> None:
        self.queue_ms = SlidingWindow(self.window_s)
        self.processing_ms = SlidingWindow(self.window_s)
        self.transfer_bytes = SlidingWindow(self.window_s)
        self.transfer_ms = SlidingWindow(self.window_s)
        self.busy = BusyTracker(self.workers, self.window_s)

    def task_sent(self, payload_bytes: int, pickle_ms: float) -> None:
        self.transfer_bytes.record(payload_bytes)
        self.transfer_ms.record(pickle_ms)

    def task_done(self, submitted: float, started: float, finished: float,
                  failed: bool = False) -> None:
        """Times are ``time.monotonic()`` values (system-wide, so comparable across
        processes on one host)."""
        self.tasks += 1
        self.failures += int(failed)
        self.queue_ms.record(max(0.0, started - submitted) * 1000.0)
        self.processing_ms.record(max(0.0, finished - started) * 1000.0)
        self.busy.record(started, finished)

    def snapshot(self) -> dict[str, float]:
        out: dict[str, float] = {"background-thread-idle-ratio-avg": self.busy.idle_ratio()}
        for prefix, series in (("background-queue-time-ms", self.queue_ms),
                               ("background-processing-time-ms", self.processing_ms),
                               ("background-transfer-bytes", self.transfer_bytes),
                               ("background-transfer-pickle-ms", self.transfer_ms)):
            for name, value in series.summary().items():
                out[f"{prefix}-{name}"] = value
        out["background-tasks-total"] = float(self.tasks)
        out["background-task-failures-total"] = float(self.failures)
        return out
