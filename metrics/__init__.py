"""Prometheus registry, sensors and the HTTP exporter. Imports nothing of ours."""

from .exporter import start_exporter
from .naming import GROUP_COORDINATOR, MetricName, family_name, parse_jmx
from .registry import CallbackCollector, MetricsRegistry, gauge_families
from .sensors import (
    COUNT_BUCKETS,
    MS_BUCKETS,
    IdleRatioSensor,
    Measurement,
    Meter,
    PercentileSensor,
)
from .stats import BusyRatio, SampledWindow, WindowConfig

__all__ = [
    "COUNT_BUCKETS",
    "GROUP_COORDINATOR",
    "MS_BUCKETS",
    "BusyRatio",
    "CallbackCollector",
    "IdleRatioSensor",
    "Measurement",
    "Meter",
    "MetricName",
    "MetricsRegistry",
    "PercentileSensor",
    "SampledWindow",
    "WindowConfig",
    "family_name",
    "gauge_families",
    "parse_jmx",
    "start_exporter",
]
