"""A PushTelemetry payload: OTLP ``MetricsData`` (decoded with OpenTelemetry's protobuf
package) turned into points, each named as KIP-714 names a client metric.

The protobuf modules are imported by the first ``decode``, not with this module: every server
start imports this one (the telemetry manager's types), and protobuf's runtime and the OTLP
descriptors cost ~0.1 s of CPU that a server no client pushes metrics to never needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue
    from opentelemetry.proto.metrics.v1 import metrics_pb2

GAUGE, SUM, HISTOGRAM = "gauge", "sum", "histogram"
DELTA = cast("metrics_pb2.AggregationTemporality.ValueType", 1)
"""OTLP's ``AGGREGATION_TEMPORALITY_DELTA`` (``metrics_pb2.AggregationTemporality``)."""


class PayloadError(Exception):
    """Not an OTLP MetricsData message."""


@dataclass(frozen=True, slots=True)
class Point:
    name: str
    """The OTLP metric name (``org.apache.kafka.consumer.coordinator.assigned.partitions``)."""
    kind: str
    """GAUGE, SUM (monotonic or not) or HISTOGRAM (its count and sum)."""
    labels: tuple[tuple[str, str], ...]
    """The data point's attributes, sorted."""
    value: float
    delta: bool = False
    """A sum sent as a delta since the previous push (KIP-714's ``DeltaTemporality``)."""
    time_ms: int = 0


@dataclass(frozen=True, slots=True)
class Payload:
    resource: dict[str, str]
    """The resource attributes the client sent (librdkafka: ``client_rack``, ``group_id``, ...)."""
    points: list[Point]


def _text(value: AnyValue) -> str:
    which = value.WhichOneof("value")
    if which is None:
        return ""
    got = getattr(value, which)
    if which == "bool_value":
        return "true" if got else "false"
    return got if isinstance(got, str) else str(got)


MAX_ATTRIBUTES = 8
"""Attributes kept of a data point or a resource (the first ones); longer keys, values and
metric names are cut at MAX_TEXT characters, so what a client can make us keep is bounded."""
MAX_TEXT = 128


def _attributes(attributes: Any) -> tuple[tuple[str, str], ...]:
    if not attributes:
        return ()
    kept: list[tuple[str, str]] = []
    for kv in attributes:
        if len(kept) == MAX_ATTRIBUTES:
            break
        kept.append((kv.key[:MAX_TEXT], _text(kv.value)[:MAX_TEXT]))
    return tuple(sorted(kept))


def decode(data: bytes) -> Payload:
    """The points of an uncompressed payload; PayloadError if it is not MetricsData."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    message = metrics_pb2.MetricsData()
    try:
        message.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise PayloadError(f"not an OTLP MetricsData message: {exc}") from None
    resource: dict[str, str] = {}
    points: list[Point] = []
    for resource_metrics in message.resource_metrics:
        for key, value in _attributes(resource_metrics.resource.attributes):
            if key in resource or len(resource) < MAX_ATTRIBUTES:
                resource[key] = value
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                points += _points(metric)
    return Payload(resource, points)


def _number(point: metrics_pb2.NumberDataPoint) -> float:
    return point.as_double if point.WhichOneof("value") == "as_double" else float(point.as_int)


def _points(metric: metrics_pb2.Metric) -> list[Point]:
    which = metric.WhichOneof("data")
    name = metric.name[:MAX_TEXT]
    if which == "gauge":
        return [Point(name, GAUGE, _attributes(p.attributes), _number(p),
                      time_ms=p.time_unix_nano // 1_000_000) for p in metric.gauge.data_points]
    if which == "sum":
        delta = metric.sum.aggregation_temporality == DELTA and metric.sum.is_monotonic
        kind = SUM if metric.sum.is_monotonic else GAUGE
        return [Point(name, kind, _attributes(p.attributes), _number(p), delta,
                      p.time_unix_nano // 1_000_000) for p in metric.sum.data_points]
    if which == "histogram":
        delta = metric.histogram.aggregation_temporality == DELTA
        out = []
        for p in metric.histogram.data_points:
            labels = _attributes(p.attributes)
            out.append(Point(name + ".count", SUM, labels, float(p.count), delta))
            out.append(Point(name + ".sum", SUM, labels, p.sum, delta))
        return out
    return []  # exponential histograms and summaries: no client sends them (KIP-714)


def prometheus_name(otlp_name: str) -> str:
    """KIP-714's mapping to a Prometheus name: the ``org.apache.kafka.`` prefix dropped, dots
    and dashes to underscores, under ``kafka_client_`` (``org.apache.kafka.consumer.poll.idle.
    ratio.avg`` -> ``kafka_client_consumer_poll_idle_ratio_avg``)."""
    return "kafka_client_" + prometheus_safe(otlp_name.removeprefix("org.apache.kafka."))


def prometheus_safe(text: str) -> str:
    """``text`` with every character Prometheus does not allow in names (all but ASCII
    letters, digits and ``_``) as ``_``."""
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in text)
