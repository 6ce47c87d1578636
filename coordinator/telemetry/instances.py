"""Client instances and the rules of their requests, as Kafka's ``ClientMetricsManager``.

A client's first GetTelemetrySubscriptions (zero instance id) gets a new client instance id;
each instance has the subscription set of the subscriptions matching it (the metric prefixes,
``*`` alone if any asks for all, the lowest interval) and a subscription id (a CRC32C of the
metric list and interval, XORed with the instance id's hash), re-evaluated when the
subscriptions change. A push is refused with Kafka's errors: after a terminating push,
INVALID_REQUEST; before the push interval since the last push (unless a Get came between),
THROTTLING_QUOTA_EXCEEDED; an old subscription id, UNKNOWN_SUBSCRIPTION_ID; an unknown codec,
UNSUPPORTED_COMPRESSION_TYPE; over ``telemetry.max.bytes``, TELEMETRY_TOO_LARGE. Everything runs
on the event loop, in the time of the clock handed to it.

Memory is bounded: at most ``telemetry.max.clients`` instances; an instance is forgotten
``telemetry.staleness.ms`` (or three push intervals, if longer) after its last request, and
``telemetry.staleness.ms`` after a terminating push. When every place is taken, a new client
is answered with an empty subscription (so it pushes nothing) and counted as dropped.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import crc32c

from protocol import ErrorCode

from . import compression
from .subscriptions import ALL_METRICS, DEFAULT_INTERVAL_MS, Subscriptions

RESERVED = (uuid.UUID(int=0), uuid.UUID(int=1))
"""Kafka's ``Uuid.RESERVED``: the zero id and the metadata topic's id."""
CONNECTIONS_PER_CLIENT = 4
"""Connections whose ApiVersions software name is kept, per client place."""


class TelemetryError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True)
class ClientInstance:
    instance_id: uuid.UUID
    metadata: dict[str, str]
    """What subscriptions match on: client_id, client_software_name, client_source_address..."""
    subscription_id: int
    version: int
    metrics: tuple[str, ...]
    interval_ms: int
    connection_id: str
    created_ms: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    last_request_ms: int = 0
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.none
    pushes: int = 0
    extra: dict[str, str] = field(default_factory=dict)
    """The resource attributes of its last payload (group id, member id, where it sends them)."""

    def expires_ms(self, staleness_ms: int) -> int:
        if self.terminating:
            return self.last_request_ms + staleness_ms
        return self.last_request_ms + max(staleness_ms, 3 * self.interval_ms)


def java_uuid_hash(value: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode``: the two longs XORed, folded to an int."""
    bits = value.int
    h = (bits >> 64) ^ (bits & (2**64 - 1))
    folded = ((h >> 32) ^ h) & 0xFFFFFFFF
    return folded - 2**32 if folded >= 2**31 else folded


def subscription_id(metrics: Iterable[str], interval_ms: int, instance_id: uuid.UUID) -> int:
    text = "[" + ", ".join(sorted(metrics)) + "]" + str(interval_ms)
    crc = crc32c.crc32c(text.encode())
    signed = crc - 2**32 if crc >= 2**31 else crc
    value = signed ^ java_uuid_hash(instance_id)
    return ((value + 2**31) % 2**32) - 2**31


@dataclass(frozen=True, slots=True)
class SubscriptionAnswer:
    instance_id: uuid.UUID
    subscription_id: int
    metrics: tuple[str, ...]
    interval_ms: int
    max_bytes: int
    accepted_compression: tuple[int, ...] = compression.ACCEPTED


class ClientInstances:
    def __init__(self, subscriptions: Subscriptions, max_bytes: int, max_clients: int,
                 staleness_ms: int) -> None:
        self.subscriptions = subscriptions
        self.max_bytes = max_bytes
        self.max_clients = max_clients
        self.staleness_ms = staleness_ms
        self._instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        self._software: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self.dropped = 0
        """Requests of clients over ``telemetry.max.clients`` (a push's metrics not kept)."""
        self.throttled = 0
        self.unknown_subscription = 0
        self.on_resubscribed: Callable[[uuid.UUID], None] = lambda _: None
        """Called when an instance's requested metrics change (its kept series are stale)."""

    # --- what the connection told -------------------------------------------------------
    def note_software(self, connection_id: str, name: str | None, version: str | None) -> None:
        """ApiVersions v3+'s client software name and version, kept for the connection."""
        if not name and not version:
            return
        self._software[connection_id] = (name or "", version or "")
        self._software.move_to_end(connection_id)
        while len(self._software) > CONNECTIONS_PER_CLIENT * self.max_clients:
            self._software.popitem(last=False)

    def _metadata(self, instance_id: uuid.UUID, connection_id: str, client_id: str | None
                  ) -> dict[str, str]:
        name, version = self._software.get(connection_id, ("", ""))
        host, _, rest = connection_id.rpartition(":")
        port = rest.split("-", 1)[0]
        return {"client_instance_id": str(instance_id), "client_id": client_id or "",
                "client_software_name": name, "client_software_version": version,
                "client_source_address": host.strip("[]"), "client_source_port": port}

    # --- instances ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._instances)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._instances.values()))

    def get(self, instance_id: uuid.UUID) -> ClientInstance | None:
        return self._instances.get(instance_id)

    def expire(self, now_ms: int) -> list[ClientInstance]:
        """Forget the instances past their staleness window; the ones forgotten. Instances
        are kept in the order of their last request and none expires sooner than
        ``staleness_ms`` after it, so only the oldest few are looked at."""
        gone = []
        for instance in self._instances.values():
            if instance.last_request_ms + self.staleness_ms > now_ms:
                break  # it and every later one are within the window
            if instance.expires_ms(self.staleness_ms) <= now_ms:
                gone.append(instance)
        for instance in gone:
            del self._instances[instance.instance_id]
        return gone

    def _evaluate(self, instance_id: uuid.UUID, metadata: Mapping[str, str]
                  ) -> tuple[tuple[str, ...], int, int]:
        interval = DEFAULT_INTERVAL_MS
        metrics: set[str] = set()
        for subscription in self.subscriptions.active():
            if subscription.matches(metadata):
                metrics |= subscription.metrics
                interval = min(interval, subscription.interval_ms)
        if ALL_METRICS in metrics:
            metrics = {ALL_METRICS}
        ordered = tuple(sorted(metrics))
        return ordered, interval, subscription_id(ordered, interval, instance_id)

    def _instance(self, instance_id: uuid.UUID, connection_id: str, client_id: str | None,
                  now_ms: int) -> ClientInstance | None:
        """The instance (created, or re-evaluated if the subscriptions changed); None if there
        is no room for a new one."""
        instance = self._instances.get(instance_id)
        version = self.subscriptions.version
        if instance is None:
            if len(self._instances) >= self.max_clients:
                self.expire(now_ms)
                if len(self._instances) >= self.max_clients:
                    return None
            metadata = self._metadata(instance_id, connection_id, client_id)
            metrics, interval, sub_id = self._evaluate(instance_id, metadata)
            instance = ClientInstance(instance_id, metadata, sub_id, version, metrics, interval,
                                      connection_id, now_ms)
            self._instances[instance_id] = instance
        elif instance.version < version:
            # Kafka makes a new instance: its request timestamps start again
            metrics, interval, sub_id = self._evaluate(instance_id, instance.metadata)
            if metrics != instance.metrics:
                self.on_resubscribed(instance_id)
            instance.metrics, instance.interval_ms, instance.subscription_id = (
                metrics, interval, sub_id)
            instance.version = version
            instance.last_get_ms = instance.last_push_ms = 0
        self._instances.move_to_end(instance_id)
        instance.last_request_ms = now_ms
        return instance

    # --- the two requests -----------------------------------------------------------------
    def get_subscriptions(self, instance_id: uuid.UUID | None, connection_id: str,
                          client_id: str | None, now_ms: int) -> SubscriptionAnswer:
        """GetTelemetrySubscriptions; TelemetryError THROTTLING_QUOTA_EXCEEDED if it comes
        sooner than the push interval after the last request (unless the last push failed on
        the subscription id or the compression type)."""
        if instance_id is None or instance_id in RESERVED:
            instance_id = uuid.uuid4()
            while instance_id in self._instances:
                instance_id = uuid.uuid4()
        instance = self._instance(instance_id, connection_id, client_id, now_ms)
        if instance is None:
            self.dropped += 1
            return SubscriptionAnswer(instance_id, subscription_id((), DEFAULT_INTERVAL_MS,
                                                                   instance_id),
                                      (), DEFAULT_INTERVAL_MS, self.max_bytes)
        since = now_ms - max(instance.last_get_ms, instance.last_push_ms)
        if since < instance.interval_ms and instance.last_error not in (
                ErrorCode.unknown_subscription_id, ErrorCode.unsupported_compression_type):
            self.throttled += 1
            raise TelemetryError(ErrorCode.throttling_quota_exceeded,
                                 f"Request from the client [{instance_id}] arrived before the "
                                 "next push interval time")
        instance.last_get_ms = now_ms
        instance.last_error = ErrorCode.none
        return SubscriptionAnswer(instance_id, instance.subscription_id, instance.metrics,
                                  instance.interval_ms, self.max_bytes)

    def push(self, instance_id: uuid.UUID | None, sub_id: int, terminating: bool,
             compression_type: int, size: int, connection_id: str, client_id: str | None,
             now_ms: int) -> ClientInstance | None:
        """Check a PushTelemetry; the instance whose metrics to keep, None if there is no room
        for it (the push is answered, its metrics dropped). TelemetryError with Kafka's
        error otherwise."""
        if instance_id is None or instance_id in RESERVED:
            raise TelemetryError(ErrorCode.invalid_request,
                                 f"Invalid request from the client [{instance_id}], invalid "
                                 "client instance id")
        instance = self._instance(instance_id, connection_id, client_id, now_ms)
        if instance is None:
            self.dropped += 1
            return None
        try:
            self._check_push(instance, sub_id, terminating, compression_type, size, now_ms)
        except TelemetryError as exc:
            instance.last_error = exc.code
            raise
        finally:
            instance.terminating = instance.terminating or terminating
        instance.last_error = ErrorCode.none
        instance.pushes += 1
        return instance

    def _check_push(self, instance: ClientInstance, sub_id: int, terminating: bool,
                    compression_type: int, size: int, now_ms: int) -> None:
        if instance.terminating:
            raise TelemetryError(ErrorCode.invalid_request,
                                 f"Client [{instance.instance_id}] sent the previous request "
                                 "with state terminating to TRUE, can not accept any requests "
                                 "after that")
        accept = instance.last_get_ms > instance.last_push_ms or (
            now_ms - instance.last_push_ms >= instance.interval_ms)
        if accept:
            instance.last_push_ms = now_ms
        elif not terminating:
            self.throttled += 1
            raise TelemetryError(ErrorCode.throttling_quota_exceeded,
                                 f"Request from the client [{instance.instance_id}] arrived "
                                 "before the next push interval time")
        if sub_id != instance.subscription_id:
            self.unknown_subscription += 1
            raise TelemetryError(ErrorCode.unknown_subscription_id,
                                 "Unknown client subscription id for the client "
                                 f"[{instance.instance_id}]")
        if not compression.supported(compression_type):
            raise TelemetryError(ErrorCode.unsupported_compression_type,
                                 f"Unknown compression type [{compression_type}] is received "
                                 f"in telemetry request from [{instance.instance_id}]")
        if size > self.max_bytes:
            raise TelemetryError(ErrorCode.telemetry_too_large,
                                 f"Telemetry request from [{instance.instance_id}] is larger "
                                 f"than the maximum allowed size [{self.max_bytes}]")
