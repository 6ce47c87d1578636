"""Kafka's metadata ``ConfigRecord`` (type 4 there), in ``__cluster_metadata-0``: one config of
one config resource. Here every log shares one type-id namespace, so it gets 1012.

The resource type, resource name and config name are the key, the value is the value; Kafka's
null value (the config deleted) is a tombstone of the key here. The GROUP resources (per-group
configs) and the CLIENT_METRICS resources (KIP-714 client-metrics subscriptions) are kept in
these records.
"""

from __future__ import annotations

from typing import ClassVar

from storage.codec import INT8, STRING, codec, f, record


@codec
@record
class ConfigRecordKey:
    TYPE_ID: ClassVar[int] = 1012
    KAFKA_TYPE_ID: ClassVar[int] = 4
    resource_type: int = f(INT8)
    """Kafka's ``ConfigResource.Type`` id (16: CLIENT_METRICS, 32: GROUP)."""
    resource_name: str = f(STRING)
    name: str = f(STRING)


@codec
@record
class ConfigRecordValue:
    VERSION: ClassVar[int] = 0
    value: str = f(STRING)
