"""The client telemetry of one server: what the APIs, the control endpoint, the exporter and
the wiring call. Runs on the event loop (the exporter's scrape takes the series' lock only)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from coordinator.observability.logs import get_logger
from protocol import ErrorCode

from . import compression, membership, payload, subscriptions
from .events import ClientEvents
from .instances import ClientInstance, ClientInstances, SubscriptionAnswer, TelemetryError
from .series import SeriesStore
from .subscriptions import CLIENT_METRICS, Subscriptions

log = get_logger("coordinator.telemetry")
RELABEL_MS = 5000
"""How often a client's group and member are looked up again."""
DECOMPRESSED_FACTOR = 16
"""A payload may decompress to at most this many times ``telemetry.max.bytes``."""
LOG_EVERY_S = 10.0
EXPIRE_EVERY_MS = 1000


class ClientTelemetry:
    def __init__(self, subscriptions: Subscriptions, max_bytes: int, max_clients: int,
                 staleness_ms: int, now_ms: Callable[[], int],
                 shards: Callable[[], Iterable[Any]] = tuple) -> None:
        self.subscriptions = subscriptions
        self.instances = ClientInstances(subscriptions, max_bytes, max_clients, staleness_ms)
        self.series = SeriesStore()
        self.instances.on_resubscribed = self.series.forget  # the next push says what is asked
        self.now_ms = now_ms
        self.shards = shards
        """The coordinator partitions' shards (for a client's group and member)."""
        self.invalid_records = 0
        self._relabelled: dict[uuid.UUID, int] = {}
        self._expired_at = 0
        self._last_log = 0.0
        self.events = ClientEvents(max_clients)
        """Client metrics for the groups' timelines."""

    @classmethod
    def from_config(cls, config: Any, now_ms: Callable[[], int],
                    shards: Callable[[], Iterable[Any]] = tuple) -> ClientTelemetry:
        return cls(Subscriptions.from_config(config), config["telemetry.max.bytes"],
                   config["telemetry.max.clients"], config["telemetry.staleness.ms"], now_ms,
                   shards)

    # --- requests -------------------------------------------------------------------------
    def note_software(self, connection_id: str, name: str | None, version: str | None) -> None:
        self.instances.note_software(connection_id, name, version)

    def get_subscriptions(self, instance_id: uuid.UUID | None, connection_id: str,
                          client_id: str | None) -> SubscriptionAnswer:
        now = self.now_ms()
        self.expire(now, force=False)
        return self.instances.get_subscriptions(instance_id, connection_id, client_id, now)

    def push(self, instance_id: uuid.UUID | None, sub_id: int, terminating: bool,
             compression_type: int, data: bytes, connection_id: str,
             client_id: str | None) -> None:
        """Check and keep a push; TelemetryError with Kafka's error if it is refused."""
        now = self.now_ms()
        self.expire(now, force=False)
        instance = self.instances.push(instance_id, sub_id, terminating, compression_type,
                                       len(data), connection_id, client_id, now)
        if instance is None or not data:
            return
        try:
            raw = compression.decompress(compression_type, data,
                                         self.instances.max_bytes * DECOMPRESSED_FACTOR)
            decoded = payload.decode(raw)
        except (compression.CompressionError, payload.PayloadError) as exc:
            self.invalid_records += 1
            instance.last_error = ErrorCode.invalid_record
            self._warn("bad telemetry payload", client_instance_id=str(instance.instance_id),
                       client_id=client_id, error=str(exc))
            raise TelemetryError(ErrorCode.invalid_record, str(exc)) from None
        instance.extra = decoded.resource
        self.series.record(instance.instance_id, instance.metadata["client_id"],
                           self._labels(instance, now), decoded.points)
        labels = self.series.labels(instance.instance_id)
        self.events.on_push(instance.instance_id, labels.get("group_id"),
                            labels.get("member_id"), decoded.points, now)

    def _warn(self, message: str, **fields: Any) -> None:
        now = time.monotonic()
        if now - self._last_log >= LOG_EVERY_S:
            self._last_log = now
            log.warning(message, **fields)

    def _labels(self, instance: ClientInstance, now: int) -> dict[str, str] | None:
        """group_id and member_id: the payload's own (librdkafka sends both as resource
        attributes), else looked up in the groups at most every RELABEL_MS (None: not now)."""
        extra = instance.extra
        group_hint = extra.get("group_id") or None
        member_hint = extra.get("member_id") or extra.get("group_member_id") or None
        if group_hint and member_hint:
            return {"group_id": group_hint, "member_id": member_hint}
        if now - self._relabelled.get(instance.instance_id, -RELABEL_MS) < RELABEL_MS:
            return None
        self._relabelled[instance.instance_id] = now
        found = membership.find(self.shards(), instance.metadata["client_id"],
                                instance.metadata["client_source_address"], group_hint)
        if found is not None:
            return {"group_id": found[0], "member_id": found[1]}
        if self.series.labels(instance.instance_id).get("member_id"):
            return None  # a member that left (its last pushes): its series keep its labels
        return {"group_id": group_hint} if group_hint else {}

    def expire(self, now: int | None = None, force: bool = True) -> None:
        """Forget the clients past their staleness window: on every read, and on requests at
        most every EXPIRE_EVERY_MS (a scan of every instance)."""
        now = self.now_ms() if now is None else now
        if not force and now - self._expired_at < EXPIRE_EVERY_MS:
            return
        self._expired_at = now
        for instance in self.instances.expire(now):
            self.series.forget(instance.instance_id)
            self.events.forget(instance.instance_id)
            self._relabelled.pop(instance.instance_id, None)

    # --- CLIENT_METRICS config resources --------------------------------------------------
    async def alter(self, metadata_log: Any, name: str,
                    ops: Sequence[tuple[str, int, str | None]], validate_only: bool) -> None:
        """IncrementalAlterConfigs of one CLIENT_METRICS resource: validated, written as
        ConfigRecords to ``metadata_log`` (a ``MetadataLog``) and fsynced, then applied.
        SubscriptionError says why not; OSError if the records could not be written."""

        def change(old: Mapping[str, str]) -> dict[str, str]:
            new = subscriptions.altered(old, ops)
            subscriptions.validate(name, new)
            return new

        new = await self.subscriptions.resources.alter(metadata_log, CLIENT_METRICS, name,
                                                       change, validate_only)
        if not validate_only:
            log.info("client metrics subscription altered", name=name, configs=dict(new))

    async def run(self) -> None:
        """Expire stale clients every EXPIRE_EVERY_MS, so their series leave /metrics even
        when no other client asks anything (a task of the wiring's, on the event loop)."""
        while True:
            await asyncio.sleep(EXPIRE_EVERY_MS / 1000)
            self.expire()

    # --- reads ----------------------------------------------------------------------------
    def clients(self, group: str | None = None) -> list[dict[str, Any]]:
        """Every client instance (of ``group``'s members, if given), as the control
        endpoint's ``GET /clients`` shows it."""
        self.expire()
        out = []
        for instance in self.instances:
            labels = self.series.labels(instance.instance_id)
            if group is not None and labels.get("group_id") != group:
                continue
            out.append({
                "client_instance_id": str(instance.instance_id),
                **{k: v for k, v in instance.metadata.items() if k != "client_instance_id"},
                "group_id": labels.get("group_id"), "member_id": labels.get("member_id"),
                "subscription_id": instance.subscription_id,
                "requested_metrics": list(instance.metrics),
                "push_interval_ms": instance.interval_ms,
                "pushes": instance.pushes, "terminating": instance.terminating,
                "last_push_ms": instance.last_push_ms or None,
                "last_error": instance.last_error.name.upper()
                if instance.last_error != ErrorCode.none else None,
                "resource": dict(instance.extra),
                "metrics": self.series.latest(instance.instance_id),
            })
        return out

    def collector(self) -> Collector:
        return _Collector(self)


class _Collector(Collector):
    """The ``kafka_client_*`` series and the telemetry's own counters, at scrape time."""

    def __init__(self, telemetry: ClientTelemetry) -> None:
        self.telemetry = telemetry

    def collect(self) -> Iterable[Metric]:
        t = self.telemetry
        out: list[Metric] = list(t.series.families())
        prefix = "kafka_server_client_metrics_"
        instances = t.instances
        out.append(GaugeMetricFamily(prefix + "instance_count",
                                     "Client instances whose telemetry is kept",
                                     value=len(instances)))
        for name, doc, value in (
                ("dropped_pushes", "Telemetry requests of clients over telemetry.max.clients, "
                 "and points over a client's series limit, not kept",
                 instances.dropped + t.series.dropped_points),
                ("throttle", "Telemetry requests refused as earlier than the push interval",
                 instances.throttled),
                ("unknown_subscription_request", "Pushes with an outdated subscription id",
                 instances.unknown_subscription),
                ("invalid_record", "Pushes whose payload did not decompress or decode",
                 t.invalid_records)):
            out.append(CounterMetricFamily(prefix + name, doc, value=value))
        return out

    def describe(self) -> Sequence[Metric]:
        return []
