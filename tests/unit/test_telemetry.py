"""Client telemetry (KIP-714) in virtual time: subscriptions, client instances and Kafka's
rules for GetTelemetrySubscriptions and PushTelemetry, payload decoding, the exported series."""

from __future__ import annotations

import gzip
import uuid

import cramjam
import lz4.frame
import pytest
import zstandard
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from prometheus_client import CollectorRegistry, generate_latest

from coordinator.telemetry import compression, payload
from coordinator.telemetry.instances import TelemetryError, subscription_id
from coordinator.telemetry.manager import ClientTelemetry
from coordinator.telemetry.subscriptions import (
    CLIENT_METRICS,
    SubscriptionError,
    Subscriptions,
    altered,
    records,
    validate,
)
from protocol import ErrorCode
from storage.records import decode_record, encode_record

CONN = "127.0.0.1:50000-1"
PREFIX = "org.apache.kafka.consumer."
ASSIGNED = "org.apache.kafka.consumer.coordinator.assigned.partitions"
REBALANCE_TOTAL = "org.apache.kafka.consumer.coordinator.rebalance.latency.total"


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def otlp(*points: tuple[str, float], monotonic: tuple[str, ...] = (),
         resource: dict[str, str] | None = None) -> bytes:
    data = metrics_pb2.MetricsData()
    rm = data.resource_metrics.add()
    for key, text in (resource or {}).items():
        rm.resource.attributes.append(KeyValue(key=key, value=AnyValue(string_value=text)))
    scope = rm.scope_metrics.add()
    for name, value in points:
        metric = scope.metrics.add(name=name)
        if name in monotonic:
            metric.sum.is_monotonic = True
            metric.sum.aggregation_temporality = payload.DELTA
            metric.sum.data_points.add(as_int=int(value))
        else:
            metric.gauge.data_points.add(as_double=value)
    return data.SerializeToString()


def telemetry(clock: Clock, metrics: str = PREFIX, interval: int = 1000, max_clients: int = 10,
              max_bytes: int = 1 << 20) -> ClientTelemetry:
    subs = Subscriptions({"default": {"metrics": metrics, "interval.ms": str(interval)}}
                         if metrics else {})
    return ClientTelemetry(subs, max_bytes, max_clients, 3000, clock)


def store(subs: Subscriptions, name: str, configs: dict[str, str]) -> None:
    for key, value in records(name, subs.explicit(name), configs):
        decoded = decode_record(*encode_record(key, value))  # through the record codec
        assert subs.replay(*decoded)


def test_a_first_request_gets_an_instance_id_and_its_subscription() -> None:
    clock = Clock()
    t = telemetry(clock)
    answer = t.get_subscriptions(None, CONN, "app")
    assert answer.instance_id != uuid.UUID(int=0)
    assert answer.metrics == (PREFIX,) and answer.interval_ms == 1000
    assert answer.subscription_id == subscription_id((PREFIX,), 1000, answer.instance_id)
    assert set(answer.accepted_compression) == {1, 2, 3, 4}


def test_a_client_matched_by_nothing_is_asked_for_nothing() -> None:
    clock = Clock()
    t = telemetry(clock, metrics="")
    store(t.subscriptions, "only-java",
          {"metrics": "*", "match": "client_software_name=apache-kafka-java"})
    t.note_software(CONN, "librdkafka", "2.16.0")
    answer = t.get_subscriptions(None, CONN, "app")
    assert answer.metrics == () and answer.interval_ms == 300000


def test_matching_on_software_and_client_id_and_all_metrics() -> None:
    clock = Clock()
    t = telemetry(clock)
    store(t.subscriptions, "rd", {"metrics": "*", "interval.ms": "500",
                                  "match": "client_software_name=librdkafka,client_id=app-.*"})
    t.note_software(CONN, "librdkafka", "2.16.0")
    assert t.get_subscriptions(None, CONN, "app-1").metrics == ("*",)
    other = t.get_subscriptions(None, "127.0.0.1:50001-2", "other")
    assert other.metrics == (PREFIX,) and other.interval_ms == 1000


def test_a_subscription_change_changes_the_subscription_id_and_the_next_push_fails() -> None:
    clock = Clock()
    t = telemetry(clock)
    first = t.get_subscriptions(None, CONN, "app")
    t.push(first.instance_id, first.subscription_id, False, 0, otlp((ASSIGNED, 1)), CONN, "app")
    assert t.clients()[0]["metrics"] == {ASSIGNED: 1}
    store(t.subscriptions, "fetch", {"metrics": "org.apache.kafka.producer."})
    clock.ms += 1000
    with pytest.raises(TelemetryError) as refused:
        t.push(first.instance_id, first.subscription_id, False, 0, otlp(), CONN, "app")
    assert refused.value.code == ErrorCode.unknown_subscription_id
    assert t.clients()[0]["metrics"] == {}  # what was pushed for the old subscription is gone
    again = t.get_subscriptions(first.instance_id, CONN, "app")  # at once: not throttled
    assert again.instance_id == first.instance_id
    assert again.subscription_id != first.subscription_id
    assert again.metrics == (PREFIX, "org.apache.kafka.producer.")


def test_push_errors_are_kafkas() -> None:
    clock = Clock()
    t = telemetry(clock, max_bytes=100)
    a = t.get_subscriptions(None, CONN, "app")
    t.push(a.instance_id, a.subscription_id, False, 0, otlp(), CONN, "app")

    def code(instance: uuid.UUID | None, sub: int, compression_type: int = 0,
             data: bytes = b"", terminating: bool = False) -> ErrorCode:
        with pytest.raises(TelemetryError) as refused:
            t.push(instance, sub, terminating, compression_type, data, CONN, "app")
        return refused.value.code

    clock.ms += 10
    assert code(a.instance_id, a.subscription_id) == ErrorCode.throttling_quota_exceeded
    assert code(None, 0) == ErrorCode.invalid_request
    assert code(uuid.UUID(int=0), 0) == ErrorCode.invalid_request
    clock.ms += 1000
    assert code(a.instance_id, a.subscription_id + 1) == ErrorCode.unknown_subscription_id
    clock.ms += 1000
    assert code(a.instance_id, a.subscription_id, 9) == ErrorCode.unsupported_compression_type
    clock.ms += 1000
    assert code(a.instance_id, a.subscription_id, 0, b"x" * 101) == ErrorCode.telemetry_too_large
    clock.ms += 1000
    assert code(a.instance_id, a.subscription_id, 1, b"not gzip") == ErrorCode.invalid_record
    clock.ms += 1000
    assert code(a.instance_id, a.subscription_id, 0, b"\xff\xff") == ErrorCode.invalid_record
    # a terminating push is taken even early; nothing is taken after it
    t.push(a.instance_id, a.subscription_id, True, 0, otlp(), CONN, "app")
    clock.ms += 1000
    assert code(a.instance_id, a.subscription_id) == ErrorCode.invalid_request


def test_a_get_sooner_than_the_interval_is_throttled() -> None:
    clock = Clock()
    t = telemetry(clock)
    a = t.get_subscriptions(None, CONN, "app")
    clock.ms += 999
    with pytest.raises(TelemetryError) as refused:
        t.get_subscriptions(a.instance_id, CONN, "app")
    assert refused.value.code == ErrorCode.throttling_quota_exceeded
    clock.ms += 1
    assert t.get_subscriptions(a.instance_id, CONN, "app").instance_id == a.instance_id


@pytest.mark.parametrize("codec, compress", [
    (compression.NONE, lambda b: b),
    (compression.GZIP, gzip.compress),
    (compression.SNAPPY, lambda b: bytes(cramjam.snappy.compress_raw(b))),
    (compression.LZ4, lz4.frame.compress),
    (compression.ZSTD, zstandard.ZstdCompressor().compress),
])
def test_every_codec_decodes(codec: int, compress) -> None:  # type: ignore[no-untyped-def]
    data = otlp(("org.apache.kafka.consumer.poll.idle.ratio.avg", 0.5))
    assert compression.decompress(codec, compress(data), 1 << 20) == data


def test_a_payload_may_not_expand_past_the_bound() -> None:
    bomb = zstandard.ZstdCompressor().compress(b"\x00" * 100_000)
    with pytest.raises(compression.CompressionError):
        compression.decompress(compression.ZSTD, bomb, 10_000)
    with pytest.raises(compression.CompressionError):
        compression.decompress(compression.GZIP, gzip.compress(b"\x00" * 100_000), 10_000)


def test_pushed_metrics_are_series_with_deltas_added_up() -> None:
    clock = Clock()
    t = telemetry(clock)
    a = t.get_subscriptions(None, CONN, "app")
    total, gauge = REBALANCE_TOTAL, ASSIGNED
    for assigned in (3, 4):
        t.push(a.instance_id, a.subscription_id, False, 0,
               otlp((gauge, assigned), (total, 5), monotonic=(total,),
                    resource={"group_id": "g"}), CONN, "app")
        clock.ms += 1000
    registry = CollectorRegistry()
    registry.register(t.collector())
    text = generate_latest(registry).decode()
    labels = f'client_id="app",client_instance_id="{a.instance_id}",group_id="g"'
    assert f"kafka_client_consumer_coordinator_assigned_partitions{{{labels}}} 4.0" in text
    assert f"kafka_client_consumer_coordinator_rebalance_latency_total{{{labels}}} 10.0" in text
    assert t.clients()[0]["metrics"][gauge] == 4


def test_a_client_is_forgotten_after_the_staleness_window() -> None:
    clock = Clock()
    t = telemetry(clock)
    a = t.get_subscriptions(None, CONN, "app")
    t.push(a.instance_id, a.subscription_id, True, 0, otlp(("x", 1)), CONN, "app")
    clock.ms += 2999
    assert [c["client_instance_id"] for c in t.clients()] == [str(a.instance_id)]
    clock.ms += 1
    assert t.clients() == [] and len(t.series) == 0


def test_clients_past_the_limit_are_asked_for_nothing_and_counted() -> None:
    clock = Clock()
    t = telemetry(clock, max_clients=2)
    kept = [t.get_subscriptions(None, f"127.0.0.1:{i}-{i}", "app") for i in range(2)]
    assert all(k.metrics for k in kept)
    extra = t.get_subscriptions(None, "127.0.0.1:9-9", "app")
    assert extra.metrics == () and t.instances.dropped == 1 and len(t.instances) == 2
    clock.ms += 10_000  # the two are stale now: a new client gets a place
    assert t.get_subscriptions(None, "127.0.0.1:10-10", "app").metrics == (PREFIX,)


def test_subscription_configs_are_validated_as_kafka_does() -> None:
    validate("s", {"metrics": "a,b", "interval.ms": "100", "match": "client_id=x.*"})
    for configs, invalid_config in (({"nope": "1"}, False), ({"interval.ms": "99"}, False),
                                    ({"match": "client_idx=1"}, True),
                                    ({"match": "client_id=("}, True)):
        with pytest.raises(SubscriptionError) as refused:
            validate("s", configs)
        assert refused.value.invalid_config is invalid_config
    with pytest.raises(SubscriptionError):
        validate("", {})
    assert altered({"metrics": "a,b"}, [("metrics", 2, "c,a"), ("match", 0, "client_id=x")]) == {
        "metrics": "a,b,c", "match": "client_id=x"}
    assert altered({"metrics": "a,b"}, [("metrics", 3, "a")]) == {"metrics": "b"}


def test_subscriptions_are_config_records() -> None:
    subs = Subscriptions()
    store(subs, "s", {"metrics": "a", "interval.ms": "200"})
    store(subs, "s", {"metrics": "a"})  # interval.ms deleted: a tombstone
    assert subs.explicit("s") == {"metrics": "a"}
    key, _value = records("s", {}, {"metrics": "a"})[0]
    assert key.resource_type == CLIENT_METRICS and key.TYPE_ID == 1012
    store(subs, "s", {})
    assert subs.names() == []


def test_kip714_names() -> None:
    assert payload.prometheus_name("org.apache.kafka.consumer.poll.idle.ratio.avg") == (
        "kafka_client_consumer_poll_idle_ratio_avg")
    assert payload.prometheus_name("org.apache.kafka.client.node.request-latency.max") == (
        "kafka_client_client_node_request_latency_max")


def test_a_client_without_member_attributes_is_found_by_client_id_and_host() -> None:
    from types import SimpleNamespace

    from coordinator.telemetry import membership

    def member(client_id: str, host: str) -> SimpleNamespace:
        return SimpleNamespace(client_id=client_id, client_host=host)

    shards = [SimpleNamespace(groups={
        "a": SimpleNamespace(members={"m1": member("app", "/127.0.0.1"),
                                      "m2": member("other", "/127.0.0.1")}),
        "b": SimpleNamespace(members={"m3": member("twin", "/127.0.0.1")}),
        "c": SimpleNamespace(members={"m4": member("twin", "/127.0.0.1")})})]
    assert membership.find(shards, "app", "127.0.0.1") == ("a", "m1")
    assert membership.find(shards, "app", "10.0.0.1") is None
    assert membership.find(shards, "twin", "127.0.0.1") is None  # two: neither is sure
    assert membership.find(shards, "twin", "127.0.0.1", group_hint="c") == ("c", "m4")


def test_a_members_assignment_and_rebalances_become_timeline_events() -> None:
    clock = Clock()
    t = telemetry(clock)
    a = t.get_subscriptions(None, CONN, "app")
    resource = {"group_id": "g", "member_id": "m"}
    for held, spent in ((2, 40), (2, 0), (3, 7)):
        t.push(a.instance_id, a.subscription_id, False, 0,
               otlp((ASSIGNED, held), (REBALANCE_TOTAL, spent), monotonic=(REBALANCE_TOTAL,),
                    resource=resource), CONN, "app")
        clock.ms += 1000
    events = t.events.events("g")
    assert [(e["kind"], e.get("partitions"), e.get("rebalance_ms")) for e in events] == [
        ("client-assigned-partitions", 2, None), ("client-rebalanced", None, 40.0),
        ("client-assigned-partitions", 3, None), ("client-rebalanced", None, 7.0)]
    assert {e["member"] for e in events} == {"m"} and t.events.events("other") == []


def test_any_metric_name_exports_a_valid_prometheus_name() -> None:
    clock = Clock()
    t = telemetry(clock)
    a = t.get_subscriptions(None, CONN, "app")
    odd = ("org.apache.kafka.consumer.é-ß.ratio", "org.apache.kafka.x", "org.apache.kafka.x.total")
    data = metrics_pb2.MetricsData()
    scope = data.resource_metrics.add().scope_metrics.add()
    for name in odd[:2]:
        metric = scope.metrics.add(name=name)
        point = metric.gauge.data_points.add(as_double=1.0)
        point.attributes.append(KeyValue(key="tópic.id", value=AnyValue(string_value="ü")))
    total = scope.metrics.add(name=odd[2])
    total.sum.is_monotonic = True
    total.sum.data_points.add(as_int=1)
    t.push(a.instance_id, a.subscription_id, False, 0, data.SerializeToString(), CONN, "app")
    registry = CollectorRegistry()
    registry.register(t.collector())
    text = generate_latest(registry).decode()  # would raise on an invalid name
    assert 'kafka_client_consumer_____ratio{client_id="app"' in text
    assert 't_pic_id="ü"' in text
    assert "# TYPE kafka_client_x gauge" in text and "kafka_client_x_sum_total" in text


def test_the_reported_assignment_assertion() -> None:
    from kafka_coordinator.clients import ClientMetrics, ClientMetricsError

    clients = ClientMetrics("http://127.0.0.1:1")  # no request is made
    coordinator_side = [
        {"timestamp": 1000, "kind": "assigned", "member": "m", "partitions": {"t": [0, 1]}},
        {"timestamp": 5000, "kind": "revoked", "member": "m", "partitions": {"t": [1]}}]
    reported = [{"timestamp": 1800, "kind": "client-assigned-partitions", "member": "m",
                 "partitions": 2},
                {"timestamp": 5900, "kind": "client-assigned-partitions", "member": "m",
                 "partitions": 1}]
    clients.assert_assignments_reported(coordinator_side + reported, within_s=1)
    with pytest.raises(ClientMetricsError):
        clients.assert_assignments_reported(coordinator_side + reported[:1], within_s=1)
    with pytest.raises(ClientMetricsError):
        clients.assert_assignments_reported(coordinator_side + reported, within_s=0.5)


def test_the_delta_temporality_is_otlps() -> None:
    """payload.DELTA stands for the protobuf enum (the module imports protobuf lazily)."""
    assert payload.DELTA == metrics_pb2.AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
