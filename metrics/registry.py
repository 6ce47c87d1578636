"""The metrics registry: sensors, histograms and scrape-time collectors in one Prometheus
``CollectorRegistry``, named as the JMX exporter names a Kafka broker's metrics."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .naming import GROUP_COORDINATOR, MetricName, family_name
from .sensors import (
    MS_BUCKETS,
    IdleRatioSensor,
    Measurement,
    Meter,
    PercentileSensor,
    Sensor,
)
from .stats import Clock, WindowConfig


def gauge_families(measurements: Iterable[Measurement]) -> list[Metric]:
    """Gauge families from measurements; those sharing a Prometheus name become one family
    (their label names must match)."""
    families: dict[str, tuple[GaugeMetricFamily, list[str]]] = {}
    for m in measurements:
        name, labels = m.name.prometheus, m.name.labels
        entry = families.get(name)
        if entry is None:
            names = sorted(labels)
            entry = families[name] = (GaugeMetricFamily(name, m.description or m.name.name,
                                                        labels=names), names)
        family, names = entry
        if sorted(labels) != names:
            raise ValueError(f"{name}: labels {sorted(labels)} differ from {names}")
        family.add_metric([labels[k] for k in names], float(m.value))
    return [family for family, _ in families.values()]


class _SensorCollector(Collector):
    def __init__(self, registry: MetricsRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterable[Metric]:
        return gauge_families(m for s in self.registry.sensors() for m in s.measure())

    def describe(self) -> Iterable[Metric]:
        return []  # families appear at scrape time


class CallbackCollector(Collector):
    """Gauges computed by ``measure()`` at scrape time."""

    def __init__(self, measure: Callable[[], Iterable[Measurement]]) -> None:
        self._measure = measure

    def collect(self) -> Iterable[Metric]:
        return gauge_families(self._measure())

    def describe(self) -> Iterable[Metric]:
        return []


class MetricsRegistry:
    """Sensors and collectors of one server, exported from ``self.prometheus``."""

    def __init__(self, prometheus: CollectorRegistry | None = None, *,
                 config: WindowConfig | None = None, clock: Clock = time.monotonic) -> None:
        self.prometheus = prometheus if prometheus is not None else CollectorRegistry(
            auto_describe=False)
        self.config = config or WindowConfig()
        self.clock = clock
        self._sensors: list[Sensor] = []
        self._lock = threading.Lock()
        self.prometheus.register(_SensorCollector(self))

    def sensors(self) -> list[Sensor]:
        with self._lock:
            return list(self._sensors)

    def add(self, sensor: Sensor) -> Sensor:
        with self._lock:
            self._sensors.append(sensor)
        return sensor

    # --- sensors -------------------------------------------------------------------------------
    def meter(self, name: str, description: str, *, group: str = GROUP_COORDINATOR,
              tags: dict[str, str] | None = None) -> Meter:
        meter = Meter(name, description, self.config, self.clock, group, tags or {})
        self.add(meter)
        return meter

    def percentiles(self, name: str, description: str, *, group: str = GROUP_COORDINATOR,
                    buckets: Sequence[float] | None = MS_BUCKETS, with_avg: bool = False,
                    tags: dict[str, str] | None = None) -> PercentileSensor:
        """Percentile gauges ``<name>-p50...-max``; with ``buckets``, also the histogram
        ``<name>`` (``_bucket``, ``_sum``, ``_count``)."""
        histogram = None if buckets is None else self.histogram(name, description,
                                                                 group=group, buckets=buckets)
        sensor = PercentileSensor(name, description, self.config, self.clock, histogram,
                                  group=group, tags=tags or {}, with_avg=with_avg)
        self.add(sensor)
        return sensor

    def idle_ratio(self, name: str, description: str, *, threads: int = 1,
                   group: str = GROUP_COORDINATOR) -> IdleRatioSensor:
        sensor = IdleRatioSensor(name, description, self.config, self.clock, threads, group)
        self.add(sensor)
        return sensor

    def histogram(self, name: str, description: str, *, labels: Sequence[str] = (),
                  group: str = GROUP_COORDINATOR,
                  buckets: Sequence[float] = MS_BUCKETS) -> Histogram:
        """A Prometheus histogram named after Kafka's convention (no sliding window)."""
        return Histogram(family_name(group, name), description, labelnames=tuple(labels),
                         buckets=tuple(buckets), registry=self.prometheus)

    # --- collectors ----------------------------------------------------------------------------
    def collector(self, measure: Callable[[], Iterable[Measurement]]) -> CallbackCollector:
        collector = CallbackCollector(measure)
        self.prometheus.register(collector)
        return collector

    def register(self, collector: Collector) -> None:
        self.prometheus.register(collector)

    def expose(self) -> bytes:
        """The text exposition format, as ``/metrics`` serves it."""
        return generate_latest(self.prometheus)


__all__ = ["CallbackCollector", "Measurement", "MetricName", "MetricsRegistry",
           "gauge_families"]
