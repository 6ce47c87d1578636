"""Client telemetry (KIP-714) end to end: real confluent-kafka consumers push their metrics to a
real server, which exports them on /metrics labelled by group and member; subscriptions made
with kafka-python's admin client (IncrementalAlterConfigs on CLIENT_METRICS) change what the
next pushes carry and survive a restart; bad pushes on the wire get Kafka's errors."""

from __future__ import annotations

import datetime
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import zstandard
from confluent_kafka import Consumer
from kafka.admin import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewTopic,
)
from opentelemetry.proto.metrics.v1 import metrics_pb2

import protocol
from kafka_coordinator import Coordinator
from protocol import ErrorCode
from tests.harness import wait_until
from tests.integration.conftest import WireClient, kio_class

ASSIGNED = "org.apache.kafka.consumer.coordinator.assigned.partitions"
FETCH_LATENCY = "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg"
INTERVAL_MS = 1000  # the test profile's default subscription


def scrape(coordinator: Coordinator) -> str:
    assert coordinator.metrics_url is not None
    with urllib.request.urlopen(coordinator.metrics_url, timeout=5) as answer:
        return answer.read().decode()


def series(text: str, name: str, **labels: str) -> list[str]:
    wanted = [f'{k}="{v}"' for k, v in labels.items()]
    return [line for line in text.splitlines()
            if line.startswith(name + "{") and all(w in line for w in wanted)]


class Polling:
    """A consumer polled on a thread of its own (rebalances need polls), closed on exit."""

    def __init__(self, config: dict[str, Any], topics: list[str]) -> None:
        self.assigned_at: float | None = None
        self.consumer = Consumer(config)
        self.consumer.subscribe(topics, on_assign=self._on_assign)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _on_assign(self, consumer: Any, partitions: Any) -> None:
        if partitions and self.assigned_at is None:
            self.assigned_at = time.monotonic()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


@pytest.fixture
def coordinator() -> Iterator[Coordinator]:
    with Coordinator.start() as server:
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap_servers)
        admin.create_topics([NewTopic("events", 3, 1)])
        admin.close()
        yield server


@pytest.mark.slow
def test_a_default_consumer_pushes_metrics_labelled_by_group_and_member(
        coordinator: Coordinator) -> None:
    polling = Polling({"bootstrap.servers": coordinator.bootstrap_servers, "group.id": "orders"},
                      ["events"])
    try:
        wait_until(lambda: polling.assigned_at is not None, 15, message="an assignment")
        assert polling.assigned_at is not None
        member = next(e["member"] for e in coordinator.timeline("orders").events
                      if e["kind"] == "assigned")  # the coordinator's side
        name = "kafka_client_consumer_coordinator_assigned_partitions"
        found = wait_until(lambda: series(scrape(coordinator), name, group_id="orders",
                                          member_id=member), 10, interval=0.05,
                           message="the consumer's assigned partitions on /metrics")
        elapsed_ms = (time.monotonic() - polling.assigned_at) * 1000
        assert elapsed_ms <= 2 * INTERVAL_MS, elapsed_ms
        assert found[0].endswith(" 3.0") and 'client_id="rdkafka"' in found[0]
        text = scrape(coordinator)
        assert series(text, "kafka_client_consumer_fetch_manager_fetch_latency_avg",
                      member_id=member)
        assert series(text, "kafka_client_consumer_poll_idle_ratio_avg", member_id=member)
        (client,) = coordinator.clients.clients("orders")
        assert client["client_software_name"] == "confluent-kafka-python"
        assert client["member_id"] == member and client["last_error"] is None
        # the timeline has the client's side beside the coordinator's
        events = coordinator.timeline("orders").events
        kinds = [e["kind"] for e in events]
        assert "assigned" in kinds and "client-assigned-partitions" in kinds
        # its report came within two push intervals of the coordinator's assignment
        coordinator.clients.assert_assignments_reported(events, within_s=2 * INTERVAL_MS / 1000)
    finally:
        polling.close()
    # the close pushes a last time, terminating (librdkafka gives it 300 ms to go out, so on
    # a busy machine it may not): either way the series stay for the staleness window
    (client,) = coordinator.clients.clients()
    assert series(scrape(coordinator), name, member_id=member)
    closed = time.monotonic()
    wait_until(lambda: not series(scrape(coordinator), name, member_id=member), 10,
               interval=0.1, message="the closed consumer's series to go")
    assert time.monotonic() - closed >= 2.0  # the staleness window (3 s), less the push's age
    coordinator.clients.wait_until_gone(client["client_instance_id"], timeout=1)


def alter(admin: KafkaAdminClient, configs: Any) -> None:
    """``configs``: {name: (AlterConfigOp, value)}, kafka-python's incremental form."""
    result = admin.alter_configs(
        [ConfigResource(ConfigResourceType.CLIENT_METRICS, "fetchers", configs=configs)],
        incremental=True, raise_on_unknown=False)  # Kafka describes only the configs set
    assert str(result) and "Error" not in repr(result), result


@pytest.mark.slow
def test_a_subscription_changes_what_the_next_pushes_carry_and_is_durable(
        tmp_path: Any) -> None:
    with Coordinator.start(tmp_path / "data", {"telemetry.default.metrics": ""}) as server:
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap_servers)
        admin.create_topics([NewTopic("events", 2, 1)])
        alter(admin, {"metrics": (AlterConfigOp.SET, "org.apache.kafka.consumer.fetch.manager."),
                      "interval.ms": (AlterConfigOp.SET, "500"),
                      "match": (AlterConfigOp.SET, "client_id=fetcher-.*")})
        base = {"bootstrap.servers": server.bootstrap_servers, "group.id": "g"}
        fetcher = Polling({**base, "client.id": "fetcher-1"}, ["events"])
        other = Polling({**base, "client.id": "other"}, ["events"])
        try:
            client = server.clients.wait_for_metric(FETCH_LATENCY, client_id="fetcher-1")
            assert client["push_interval_ms"] == 500
            assert ASSIGNED not in client["metrics"]
            alter(admin, {"metrics": (AlterConfigOp.APPEND,
                                      "org.apache.kafka.consumer.coordinator.assigned")})
            server.clients.wait_for_metric(ASSIGNED, client_id="fetcher-1", timeout=10)
            # the client matched by nothing was asked for nothing and pushed nothing
            (unmatched,) = [c for c in server.clients.clients() if c["client_id"] == "other"]
            assert unmatched["requested_metrics"] == [] and unmatched["pushes"] == 0
            assert unmatched["metrics"] == {}
        finally:
            fetcher.close()
            other.close()
        admin.close()
        server.restart()
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap_servers)
        described = admin.describe_configs([ConfigResource(ConfigResourceType.CLIENT_METRICS,
                                                           "fetchers")])
        configs = {key: entry["value"]
                   for key, entry in described["client_metrics"]["fetchers"].items()}
        assert configs == {"metrics": "org.apache.kafka.consumer.fetch.manager.,"
                                      "org.apache.kafka.consumer.coordinator.assigned",
                           "interval.ms": "500", "match": "client_id=fetcher-.*"}
        assert admin.list_config_resources([ConfigResourceType.CLIENT_METRICS]) == {
            "client_metrics": ["fetchers"]}
        admin.close()


# --- bad pushes on the wire ----------------------------------------------------------------
GET = kio_class("get_telemetry_subscriptions", 0, "request", "GetTelemetrySubscriptionsRequest")
PUSH = kio_class("push_telemetry", 0, "request", "PushTelemetryRequest")
NEW_INSTANCE = uuid.UUID(int=0)  # a Get with it asks the server for a client instance id


def _payload() -> bytes:
    data = metrics_pb2.MetricsData()
    metric = data.resource_metrics.add().scope_metrics.add().metrics.add(name=ASSIGNED)
    metric.gauge.data_points.add(as_int=1)
    return data.SerializeToString()


@pytest.mark.slow
def test_bad_pushes_get_kafkas_errors() -> None:
    # A push interval (Kafka's default, 5 min) longer than any machine takes to answer two
    # requests, so that "too early" is too early however slow the machine. Each case is a client
    # instance of its own: a Get makes the next push acceptable (Kafka's ClientMetricsManager),
    # so no case waits for an interval to pass.
    config = {"telemetry.default.interval.ms": 300_000, "telemetry.max.bytes": 2000}
    with Coordinator.start(config=config) as server, \
            WireClient(server.bootstrap_servers) as wire:
        def subscribe(instance: uuid.UUID = NEW_INSTANCE) -> Any:
            return wire.request(protocol.make(GET, client_instance_id=instance))

        def fresh() -> tuple[uuid.UUID, int]:
            got = subscribe()
            assert got.error_code == ErrorCode.none and got.requested_metrics
            assert got.push_interval == datetime.timedelta(minutes=5)
            return got.client_instance_id, got.subscription_id

        def push(instance: uuid.UUID, subscription: int, compression: int = 4,
                 metrics: bytes | None = None, terminating: bool = False) -> ErrorCode:
            if metrics is None:
                metrics = zstandard.ZstdCompressor().compress(_payload())
            answer = wire.request(protocol.make(
                PUSH, client_instance_id=instance, subscription_id=subscription,
                terminating=terminating, compression_type=compression, metrics=metrics))
            return ErrorCode(answer.error_code)

        got = subscribe()
        assert got.telemetry_max_bytes == 2000 and set(got.accepted_compression_types) == {
            1, 2, 3, 4}
        instance, sub = got.client_instance_id, got.subscription_id
        assert push(instance, sub) == ErrorCode.none
        assert push(instance, sub) == ErrorCode.throttling_quota_exceeded  # too early
        early = subscribe(instance)  # a Get too, after an accepted push
        assert early.error_code == ErrorCode.throttling_quota_exceeded
        assert push(instance, sub, terminating=True) == ErrorCode.none  # even early
        # nothing after a terminating push
        assert push(instance, sub) == ErrorCode.invalid_request

        instance, sub = fresh()
        assert push(instance, sub + 1) == ErrorCode.unknown_subscription_id
        # the client may ask again at once after an unknown subscription
        again = subscribe(instance)
        assert again.error_code == ErrorCode.none and again.subscription_id == sub

        instance, sub = fresh()
        assert push(instance, sub, compression=9) == ErrorCode.unsupported_compression_type
        assert subscribe(instance).error_code == ErrorCode.none
        instance, sub = fresh()
        assert push(instance, sub, metrics=b"\x28\xb5\x2f\xfd corrupt") == \
            ErrorCode.invalid_record
        instance, sub = fresh()
        assert push(instance, sub, compression=0, metrics=b"x" * 2001) == \
            ErrorCode.telemetry_too_large
        unknown = wire.request(protocol.make(PUSH, client_instance_id=NEW_INSTANCE,
                                             subscription_id=0, terminating=False,
                                             compression_type=0, metrics=b""))
        assert unknown.error_code == ErrorCode.invalid_request
        text = scrape(server)
        assert "kafka_server_client_metrics_invalid_record_total 1.0" in text
        assert "kafka_server_client_metrics_throttle_total 2.0" in text
