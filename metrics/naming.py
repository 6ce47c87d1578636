"""Kafka metric names as the Prometheus JMX exporter exports them.

``kafka.server:type=group-coordinator-metrics,name=background-queue-time-ms-p99,tag=v``
becomes ``kafka_server_group_coordinator_metrics_background_queue_time_ms_p99{tag="v"}``:
the domain, then the ``type``, then the ``name``, each with anything that is not a letter, a
digit or an underscore turned into an underscore; every other key becomes a label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

GROUP_COORDINATOR = "kafka.server:type=group-coordinator-metrics"
"""The MBean prefix of every group coordinator metric."""

_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def sanitize(part: str) -> str:
    """``group-coordinator-metrics`` -> ``group_coordinator_metrics``."""
    return _INVALID.sub("_", part)


@dataclass(frozen=True, slots=True)
class MetricName:
    """A Kafka metric: its MBean domain and type, its name, and its tags."""

    name: str
    group: str = GROUP_COORDINATOR
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def jmx(self) -> str:
        """The MBean name, e.g. ``kafka.server:type=group-coordinator-metrics,name=X,tag=v``."""
        tags = "".join(f",{k}={v}" for k, v in self.tags.items())
        return f"{self.group},name={self.name}{tags}"

    @property
    def prometheus(self) -> str:
        return family_name(self.group, self.name)

    @property
    def labels(self) -> dict[str, str]:
        return {sanitize(k): str(v) for k, v in self.tags.items()}


def family_name(group: str, name: str) -> str:
    """The Prometheus name of metric ``name`` in MBean group ``group``
    (``kafka.server:type=group-coordinator-metrics``)."""
    domain, _, props = group.partition(":")
    parts = [sanitize(domain)]
    for prop in filter(None, props.split(",")):
        key, _, value = prop.partition("=")
        if key == "type":
            parts.append(sanitize(value))
    parts.append(sanitize(name))
    return "_".join(parts)


def parse_jmx(jmx: str) -> tuple[str, dict[str, str]]:
    """``kafka.server:type=group-coordinator-metrics,name=X,tag=v`` ->
    (``kafka_server_group_coordinator_metrics_X``, ``{"tag": "v"}``)."""
    domain, sep, props = jmx.partition(":")
    if not sep:
        raise ValueError(f"not an MBean name (no ':'): {jmx!r}")
    parts = [sanitize(domain)]
    name: str | None = None
    labels: dict[str, str] = {}
    for prop in filter(None, props.split(",")):
        key, eq, value = prop.partition("=")
        if not eq:
            raise ValueError(f"MBean property without '=': {prop!r} in {jmx!r}")
        if key == "type":
            parts.append(sanitize(value))
        elif key == "name":
            name = value
        else:
            labels[sanitize(key)] = value
    if name is not None:
        parts.append(sanitize(name))
    return "_".join(parts), labels
