"""PushTelemetry requests that reach the payload decoder: a fresh client instance id, the
subscription id an unsubscribed instance gets (the fuzz server has no subscriptions, so the
id is the empty set's at the default interval), and a random OTLP ``MetricsData`` message
compressed with a random codec of the ones clients use (or labelled with the wrong one)."""

from __future__ import annotations

import gzip
import random
import uuid
from typing import Any

import cramjam
import lz4.frame
import zstandard
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2

import protocol
from coordinator.telemetry.instances import subscription_id
from coordinator.telemetry.subscriptions import DEFAULT_INTERVAL_MS

_NAMES = ("org.apache.kafka.consumer.coordinator.assigned.partitions",
          "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
          "org.apache.kafka.client.node.request.latency.max", "", "x" * 300)
_COMPRESS = {
    0: lambda data: data,
    1: gzip.compress,
    2: lambda data: bytes(cramjam.snappy.compress_raw(data)),
    3: lz4.frame.compress,
    4: lambda data: zstandard.ZstdCompressor().compress(data),
}


def metrics_data(rng: random.Random) -> bytes:
    data = metrics_pb2.MetricsData()
    for _ in range(rng.randint(0, 2)):
        resource = data.resource_metrics.add()
        resource.resource.attributes.append(
            KeyValue(key=rng.choice(("group_id", "member_id", "client_rack")),
                     value=AnyValue(string_value=rng.choice(("g1", "", "member-1")))))
        scope = resource.scope_metrics.add()
        for _ in range(rng.randint(0, 6)):
            metric = scope.metrics.add(name=rng.choice(_NAMES))
            kind = rng.randrange(3)
            point: Any
            if kind == 0:
                point = metric.gauge.data_points.add(as_double=rng.uniform(-1e9, 1e9))
            elif kind == 1:
                metric.sum.is_monotonic = rng.random() < 0.8
                metric.sum.aggregation_temporality = metrics_pb2.AggregationTemporality.ValueType(
                    rng.randrange(3))
                point = metric.sum.data_points.add(as_int=rng.randint(-(2**63), 2**63 - 1))
            else:
                point = metric.histogram.data_points.add(count=rng.randint(0, 100),
                                                         sum=rng.random())
            point.time_unix_nano = rng.randint(0, 2**64 - 1)
            point.attributes.append(KeyValue(key=rng.choice(("topic", "node.id", "")),
                                             value=AnyValue(int_value=rng.randint(0, 9))))
    return data.SerializeToString()


def push_request(rng: random.Random, request_type: type) -> Any:
    instance = uuid.UUID(int=rng.getrandbits(128))
    codec = rng.randrange(5)
    labelled = codec if rng.random() < 0.8 else rng.randrange(6)
    return protocol.make(
        request_type, client_instance_id=instance,
        subscription_id=subscription_id((), DEFAULT_INTERVAL_MS, instance),
        terminating=rng.random() < 0.2, compression_type=labelled,
        metrics=_COMPRESS[codec](metrics_data(rng)))
