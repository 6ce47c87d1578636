"""Windowed statistics in the manner of Kafka's ``SampledStat``.

A stat keeps ``samples`` samples of ``window_s`` seconds each (Kafka's ``metrics.num.samples``
and ``metrics.sample.window.ms``; 2 of 30 s by default): a value recorded goes into the current
sample; a sample older than ``samples * window_s`` is dropped; a measurement combines the
samples still in the window. Rates divide by the elapsed time the way Kafka's ``Rate`` does
(at least ``samples - 1`` full windows, so a single early event does not read as a burst).

Every class takes a ``clock`` (seconds, ``time.monotonic`` by default) so tests can drive time,
and is safe to use from several threads (the exporter scrapes on its own thread).
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Clock = Callable[[], float]

DEFAULT_SAMPLES = 2
DEFAULT_WINDOW_S = 30.0
DEFAULT_PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 0.50), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999))


@dataclass(frozen=True, slots=True)
class WindowConfig:
    samples: int = DEFAULT_SAMPLES
    window_s: float = DEFAULT_WINDOW_S

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError("samples must be at least 1")
        if self.window_s <= 0:
            raise ValueError("window_s must be positive")

    @property
    def span_s(self) -> float:
        return self.samples * self.window_s


@dataclass(slots=True)
class _Sample:
    start: float
    count: int = 0
    total: float = 0.0
    minimum: float = math.inf
    maximum: float = -math.inf
    values: list[float] = field(default_factory=list)
    replace_at: int = 0
    """Once the values are full: the index (in ``count`` order) of the next value to take
    the place of a random one (Li's algorithm L)."""
    weight: float = 1.0


class SampledWindow:
    """The samples of the last ``samples * window_s`` seconds.

    ``keep_values`` keeps the values themselves (for percentiles), at most ``max_values`` per
    sample: past that, a uniform reservoir of them, so memory stays bounded under any load.
    The reservoir is Li's algorithm L: it draws how many values to pass over before the next
    one kept, so a busy sensor draws random numbers for the few values it keeps, not for
    every value recorded.
    """

    def __init__(self, config: WindowConfig | None = None, clock: Clock = time.monotonic, *,
                 keep_values: bool = False, max_values: int = 4096, seed: int = 0) -> None:
        self.config = config or WindowConfig()
        self.clock = clock
        self.keep_values = keep_values
        self.max_values = max_values
        self._samples: list[_Sample] = []
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self.created = clock()

    def record(self, value: float, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        with self._lock:
            sample = self._current(now)
            sample.count += 1
            sample.total += value
            sample.minimum = min(sample.minimum, value)
            sample.maximum = max(sample.maximum, value)
            if self.keep_values:
                if len(sample.values) < self.max_values:
                    sample.values.append(value)
                    if len(sample.values) == self.max_values:
                        self._skip(sample, self.max_values - 1)
                elif sample.count - 1 == sample.replace_at:
                    sample.values[self._random.randrange(self.max_values)] = value
                    self._skip(sample, sample.replace_at)

    def record_many(self, values: Sequence[float], now: float | None = None) -> None:
        """``record`` for each of ``values``, all at ``now``, under one lock."""
        if not values:
            return
        now = self.clock() if now is None else now
        with self._lock:
            sample = self._current(now)
            seen = sample.count
            sample.count += len(values)
            sample.total += sum(values)
            sample.minimum = min(sample.minimum, min(values))
            sample.maximum = max(sample.maximum, max(values))
            if not self.keep_values:
                return
            room = max(0, self.max_values - len(sample.values))
            if room:
                sample.values.extend(values[:room])
                if len(sample.values) == self.max_values:
                    self._skip(sample, self.max_values - 1)
                else:
                    return
            end = seen + len(values)
            while sample.replace_at < end:  # the values kept, as ``record`` keeps them
                sample.values[self._random.randrange(self.max_values)] = \
                    values[sample.replace_at - seen]
                self._skip(sample, sample.replace_at)

    def _skip(self, sample: _Sample, index: int) -> None:
        """After the value at ``index`` was kept: when the next is (algorithm L's skip)."""
        uniform = self._random.random
        sample.weight *= math.exp(math.log(1.0 - uniform()) / self.max_values)
        if sample.weight >= 1.0:
            sample.replace_at = index + 1
            return
        sample.replace_at = index + 1 + math.floor(
            math.log(1.0 - uniform()) / math.log1p(-sample.weight))

    def _current(self, now: float) -> _Sample:
        self._purge(now)
        if self._samples and now - self._samples[-1].start < self.config.window_s:
            return self._samples[-1]
        sample = _Sample(start=now)
        self._samples.append(sample)
        if len(self._samples) > self.config.samples:
            del self._samples[0]
        return sample

    def _purge(self, now: float) -> None:
        horizon = now - self.config.span_s  # Kafka: a sample this old is obsolete
        while self._samples and self._samples[0].start <= horizon:
            del self._samples[0]

    def _live(self, now: float | None) -> tuple[float, list[_Sample]]:
        now = self.clock() if now is None else now
        with self._lock:
            self._purge(now)
            return now, list(self._samples)

    # --- measurements --------------------------------------------------------------------------
    def count(self, now: float | None = None) -> int:
        return sum(s.count for s in self._live(now)[1])

    def total(self, now: float | None = None) -> float:
        return sum(s.total for s in self._live(now)[1])

    def max(self, now: float | None = None) -> float:
        """The largest value in the window, 0 if there is none (Kafka reports NaN; a gauge
        that is NaN breaks most dashboards' arithmetic, so zero it is)."""
        samples = self._live(now)[1]
        return max((s.maximum for s in samples if s.count), default=0.0)

    def min(self, now: float | None = None) -> float:
        samples = self._live(now)[1]
        return min((s.minimum for s in samples if s.count), default=0.0)

    def avg(self, now: float | None = None) -> float:
        samples = self._live(now)[1]
        count = sum(s.count for s in samples)
        return sum(s.total for s in samples) / count if count else 0.0

    def rate(self, now: float | None = None) -> float:
        """Per second: the window's total divided by its elapsed time, as Kafka's ``Rate``."""
        now, samples = self._live(now)
        total = sum(s.total for s in samples)
        oldest = samples[0].start if samples else now
        elapsed = now - oldest
        full = math.floor(elapsed / self.config.window_s)
        if full < self.config.samples - 1:
            elapsed += (self.config.samples - 1 - full) * self.config.window_s
        return total / elapsed if elapsed > 0 else 0.0

    def values(self, now: float | None = None) -> list[float]:
        out: list[float] = []
        for sample in self._live(now)[1]:
            out.extend(sample.values)
        return out

    def percentiles(self, quantiles: Sequence[tuple[str, float]] = DEFAULT_PERCENTILES,
                    now: float | None = None) -> dict[str, float]:
        """Nearest-rank percentiles of the values in the window (zeros when there are none),
        plus ``max`` (exact, even when the values were sampled)."""
        now, samples = self._live(now)
        values = sorted(v for s in samples for v in s.values)
        out: dict[str, float] = {}
        for name, q in quantiles:
            if not values:
                out[name] = 0.0
                continue
            rank = max(1, math.ceil(q * len(values)))
            out[name] = values[min(rank, len(values)) - 1]
        out["max"] = max((s.maximum for s in samples if s.count), default=0.0)
        return out


class BusyRatio:
    """The idle ratio of one thread (or event loop): busy time recorded per event, idle ratio
    ``1 - busy / elapsed`` per time-aligned window of ``window_s`` seconds.

    ``avg`` is over the last ``samples`` windows (the current one up to now), ``min`` the
    lowest single window's ratio among them. Time before the tracker started does not count.
    """

    def __init__(self, config: WindowConfig | None = None, clock: Clock = time.monotonic,
                 threads: int = 1) -> None:
        self.config = config or WindowConfig()
        self.clock = clock
        self.threads = threads
        self.started = clock()
        self._busy: dict[int, float] = {}
        self._lock = threading.Lock()

    def _bucket(self, t: float) -> int:
        return math.floor(t / self.config.window_s)

    def record_busy(self, busy_s: float, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        bucket = self._bucket(now)
        with self._lock:
            self._busy[bucket] = self._busy.get(bucket, 0.0) + max(0.0, busy_s)
            oldest = bucket - self.config.samples
            for stale in [b for b in self._busy if b <= oldest]:
                del self._busy[stale]

    def _ratios(self, now: float | None) -> list[tuple[float, float]]:
        """(busy, elapsed) for each window in the span that has started."""
        now = self.clock() if now is None else now
        window = self.config.window_s
        current = self._bucket(now)
        out: list[tuple[float, float]] = []
        with self._lock:
            for bucket in range(current - self.config.samples + 1, current + 1):
                begin = max(bucket * window, self.started)
                end = min((bucket + 1) * window, now)
                if end <= begin:
                    continue
                out.append((self._busy.get(bucket, 0.0), (end - begin) * self.threads))
        return out

    def avg(self, now: float | None = None) -> float:
        return _average(self._ratios(now))

    def min(self, now: float | None = None) -> float:
        """The lowest window's ratio, at most ``avg``; the current window counts once half of
        it has passed (or when it is the only one), so one event just after a boundary is not
        "0% idle"."""
        ratios = self._ratios(now)
        average = _average(ratios)  # the same windows, read at the same instant
        if len(ratios) > 1 and ratios[-1][1] < self.config.window_s * self.threads / 2:
            ratios = ratios[:-1]
        # A busy young window pulls the average down but is not counted here: the lowest
        # window is never above the average (which does count it).
        return min(min((_clamp(1.0 - b / e) for b, e in ratios if e > 0), default=1.0),
                   average)


def _average(ratios: list[tuple[float, float]]) -> float:
    busy = sum(b for b, _ in ratios)
    elapsed = sum(e for _, e in ratios)
    return _clamp(1.0 - busy / elapsed) if elapsed > 0 else 1.0


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value))
