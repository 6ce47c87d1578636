"""Sensors, naming and the registry's exposition, parsed back with prometheus-client."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from metrics import (
    GROUP_COORDINATOR,
    Measurement,
    MetricName,
    MetricsRegistry,
    WindowConfig,
    family_name,
    gauge_families,
    parse_jmx,
    start_exporter,
)

P = "kafka_server_group_coordinator_metrics_"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def samples(registry: MetricsRegistry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for family in text_string_to_metric_families(registry.expose().decode()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def test_jmx_names_become_prometheus_names() -> None:
    assert parse_jmx("kafka.server:type=group-coordinator-metrics,"
                     "name=background-queue-time-ms-p99") == (
        P + "background_queue_time_ms_p99", {})
    assert parse_jmx("kafka.server:type=group-coordinator-metrics,name=group-count,"
                     "protocol=consumer") == (P + "group_count", {"protocol": "consumer"})
    assert family_name(GROUP_COORDINATOR, "offset-commit-rate") == P + "offset_commit_rate"
    name = MetricName("consumer-group-count", tags={"state": "stable"})
    assert name.jmx == ("kafka.server:type=group-coordinator-metrics,"
                        "name=consumer-group-count,state=stable")
    assert parse_jmx(name.jmx) == (name.prometheus, name.labels)
    with pytest.raises(ValueError):
        parse_jmx("no-domain")


def test_meter_rate_and_count() -> None:
    clock = FakeClock()
    registry = MetricsRegistry(config=WindowConfig(2, 30.0), clock=clock)
    meter = registry.meter("offset-commit", "Offsets committed")
    meter.record(3)
    clock.now = 15.0
    meter.record(3)
    got = samples(registry)
    assert got[(P + "offset_commit_count", frozenset())] == 6
    # Kafka's Rate: 15 s elapsed, plus the missing full window (samples - 1 = 1 of them)
    assert got[(P + "offset_commit_rate", frozenset())] == pytest.approx(6 / 45)
    clock.now = 200.0
    got = samples(registry)
    assert got[(P + "offset_commit_count", frozenset())] == 6  # cumulative
    assert got[(P + "offset_commit_rate", frozenset())] == 0


def test_percentile_sensor_exports_gauges_and_the_histogram() -> None:
    clock = FakeClock()
    registry = MetricsRegistry(clock=clock)
    sensor = registry.percentiles("event-queue-time-ms", "Queue time", with_avg=True)
    for v in (1.0, 2.0, 3.0, 400.0):
        sensor.record(v)
    got = samples(registry)
    gauges = {s: got[(P + f"event_queue_time_ms_{s}", frozenset())]
              for s in ("p50", "p95", "p99", "p999", "max", "avg")}
    assert gauges == {"p50": 2, "p95": 400, "p99": 400, "p999": 400, "max": 400,
                      "avg": pytest.approx(101.5)}
    assert got[(P + "event_queue_time_ms_count", frozenset())] == 4
    assert got[(P + "event_queue_time_ms_sum", frozenset())] == 406
    assert got[(P + "event_queue_time_ms_bucket", frozenset({("le", "2.5")}))] == 2
    assert got[(P + "event_queue_time_ms_bucket", frozenset({("le", "+Inf")}))] == 4
    clock.now = 120.0  # the window slid past; the histogram is cumulative
    got = samples(registry)
    assert got[(P + "event_queue_time_ms_max", frozenset())] == 0
    assert got[(P + "event_queue_time_ms_count", frozenset())] == 4


def test_idle_ratio_sensor() -> None:
    clock = FakeClock()
    registry = MetricsRegistry(config=WindowConfig(2, 20.0), clock=clock)
    idle = registry.idle_ratio("thread-idle-ratio", "Idle")
    clock.now = 10.0
    idle.record_busy_ms(2500)
    got = samples(registry)
    assert got[(P + "thread_idle_ratio_avg", frozenset())] == pytest.approx(0.75)
    assert got[(P + "thread_idle_ratio_min", frozenset())] == pytest.approx(0.75)


def test_labelled_histogram_and_collector() -> None:
    registry = MetricsRegistry()
    runs = registry.histogram("assignor-run-time-ms", "Runs", labels=("group", "assignor"))
    runs.labels("g", "uniform").observe(12.0)
    registry.collector(lambda: [
        Measurement(MetricName("group-count", tags={"protocol": p}), n, "Groups")
        for p, n in (("classic", 1), ("consumer", 2))])
    got = samples(registry)
    assert got[(P + "assignor_run_time_ms_count",
                frozenset({("group", "g"), ("assignor", "uniform")}))] == 1
    assert got[(P + "group_count", frozenset({("protocol", "consumer")}))] == 2
    assert got[(P + "group_count", frozenset({("protocol", "classic")}))] == 1


def test_one_family_needs_one_set_of_labels() -> None:
    with pytest.raises(ValueError):
        gauge_families([Measurement(MetricName("x", tags={"a": "1"}), 1),
                        Measurement(MetricName("x", tags={"b": "1"}), 1)])


def test_exporter_serves_the_registry() -> None:
    registry = MetricsRegistry()
    registry.meter("offset-commit", "Offsets committed").record(2)
    host, port = start_exporter("http://127.0.0.1:0", registry.prometheus)
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    assert f"{P}offset_commit_count 2.0" in text
