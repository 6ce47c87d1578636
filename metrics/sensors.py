"""Sensors in the manner of Kafka's: one thing recorded, several metrics measured from it.

* :class:`Meter`: ``<name>-rate`` (per second over the window) and ``<name>-count`` (since
  start), like Kafka's ``Meter`` of a ``Rate`` and a ``CumulativeCount``.
* :class:`PercentileSensor`: ``<name>-p50/-p95/-p99/-p999/-max`` over the sliding window, and
  the underlying Prometheus histogram ``<name>`` (cumulative buckets, so Prometheus users can
  aggregate across instances and choose their own windows).
* :class:`IdleRatioSensor`: ``<name>-min`` and ``<name>-avg`` of a thread's idle ratio.

Every sensor lists its current values with ``measure()``; the registry turns them into gauges
at scrape time.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import Histogram

from .naming import GROUP_COORDINATOR, MetricName
from .stats import DEFAULT_PERCENTILES, BusyRatio, Clock, SampledWindow, WindowConfig

MS_BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000,
                                 2500, 5000, 10000, 30000, 60000)
"""Histogram buckets for durations in milliseconds (0.1 ms to a minute)."""

COUNT_BUCKETS: tuple[float, ...] = (0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000,
                                    10000, 50000, 100000)


@dataclass(frozen=True, slots=True)
class Measurement:
    name: MetricName
    value: float
    description: str = ""


class Sensor(Protocol):
    def measure(self) -> list[Measurement]: ...


@dataclass(slots=True)
class Meter:
    """``<name>-rate`` and ``<name>-count`` of one event (``record(n)`` adds ``n``)."""

    name: str
    description: str
    config: WindowConfig
    clock: Clock
    group: str = GROUP_COORDINATOR
    tags: Mapping[str, str] = field(default_factory=dict)
    _window: SampledWindow = field(init=False)
    _count: float = field(init=False, default=0.0)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._window = SampledWindow(self.config, self.clock)

    def record(self, n: float = 1.0) -> None:
        self._window.record(n)
        with self._lock:
            self._count += n

    @property
    def count(self) -> float:
        with self._lock:
            return self._count

    def rate(self) -> float:
        return self._window.rate()

    def measure(self) -> list[Measurement]:
        return [
            Measurement(MetricName(f"{self.name}-rate", self.group, self.tags), self.rate(),
                        f"{self.description} (per second, over the sliding window)"),
            Measurement(MetricName(f"{self.name}-count", self.group, self.tags), self.count,
                        f"{self.description} (total since start)"),
        ]


@dataclass(slots=True)
class PercentileSensor:
    """Percentile gauges over the sliding window, plus the Prometheus histogram (if any)."""

    name: str
    description: str
    config: WindowConfig
    clock: Clock
    histogram: Histogram | None = None
    quantiles: Sequence[tuple[str, float]] = DEFAULT_PERCENTILES
    group: str = GROUP_COORDINATOR
    tags: Mapping[str, str] = field(default_factory=dict)
    with_avg: bool = False
    _window: SampledWindow = field(init=False)

    def __post_init__(self) -> None:
        self._window = SampledWindow(self.config, self.clock, keep_values=True)

    def record(self, value: float) -> None:
        self._window.record(value)
        if self.histogram is not None:
            self.histogram.observe(value)

    def record_many(self, values: Sequence[float]) -> None:
        """``record`` each of ``values`` (a batch gathered off the per-event path)."""
        self._window.record_many(values)
        if self.histogram is not None:
            observe_many(self.histogram, values)

    def record_window_only(self, value: float) -> None:
        """Into the sliding window only (when the histogram is fed elsewhere)."""
        self._window.record(value)

    def summary(self) -> dict[str, float]:
        out = self._window.percentiles(self.quantiles)
        if self.with_avg:
            out["avg"] = self._window.avg()
        return out

    def measure(self) -> list[Measurement]:
        return [Measurement(MetricName(f"{self.name}-{suffix}", self.group, self.tags), value,
                            f"{self.description} ({suffix} over the sliding window)")
                for suffix, value in self.summary().items()]


def observe_many(histogram: Histogram, values: Sequence[float]) -> None:
    """``histogram.observe`` each of ``values``: counted per bucket first, then one increment
    per bucket touched (prometheus_client's own fields, pinned; observed one by one if they
    are not there)."""
    bounds = getattr(histogram, "_upper_bounds", None)
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if bounds is None or buckets is None or total is None:
        for value in values:
            histogram.observe(value)
        return
    # sorted once, the values below each bound are found by bisection: a bucket's count is
    # the values at or under its bound (bisect_right: ``observe`` puts a value equal to a
    # bound in that bound's bucket) less those under the bound before it
    ordered = sorted(values)
    below = 0
    for index, bound in enumerate(bounds):
        upto = bisect.bisect_right(ordered, bound, below)
        if upto > below:
            buckets[index].inc(upto - below)
            below = upto
        if below == len(ordered):
            break
    total.inc(sum(values))


@dataclass(slots=True)
class IdleRatioSensor:
    """``<name>-min`` and ``<name>-avg``: the idle ratio of the thread(s) doing the work."""

    name: str
    description: str
    config: WindowConfig
    clock: Clock
    threads: int = 1
    group: str = GROUP_COORDINATOR
    tags: Mapping[str, str] = field(default_factory=dict)
    _ratio: BusyRatio = field(init=False)

    def __post_init__(self) -> None:
        self._ratio = BusyRatio(self.config, self.clock, self.threads)

    def record_busy_ms(self, busy_ms: float) -> None:
        self._ratio.record_busy(busy_ms / 1000.0)

    def avg(self) -> float:
        return self._ratio.avg()

    def min(self) -> float:
        return self._ratio.min()

    def measure(self) -> list[Measurement]:
        return [
            Measurement(MetricName(f"{self.name}-min", self.group, self.tags), self.min(),
                        f"{self.description} (lowest window)"),
            Measurement(MetricName(f"{self.name}-avg", self.group, self.tags), self.avg(),
                        f"{self.description} (average over the sliding window)"),
        ]
