"""Client metrics that belong in a group's rebalance timeline: when a member's client reports
a different number of assigned partitions, and when it reports time spent rebalancing. Kept
in a bounded ring per group; ``GET /timeline`` merges them with the coordinator's events, by
timestamp (the client's own time of the data point, so the two sides of a rebalance line up).
Such events have no ``offset``: the store does not say them."""

from __future__ import annotations

import uuid
from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Any

from .payload import Point

ASSIGNED = "org.apache.kafka.consumer.coordinator.assigned.partitions"
REBALANCE_TOTAL = "org.apache.kafka.consumer.coordinator.rebalance.latency.total"
REBALANCE_MAX = "org.apache.kafka.consumer.coordinator.rebalance.latency.max"
MAX_EVENTS_PER_GROUP = 1000
ASSIGNED_KIND = "client-assigned-partitions"
REBALANCED_KIND = "client-rebalanced"
"""The kinds of these events (``kafka_coordinator.timeline.CLIENT_REPORTED``)."""


class ClientEvents:
    def __init__(self, max_groups: int) -> None:
        self.max_groups = max_groups
        self._rings: OrderedDict[str, deque[dict[str, Any]]] = OrderedDict()
        self._assigned: dict[uuid.UUID, float] = {}

    def on_push(self, instance_id: uuid.UUID, group: str | None, member: str | None,
                points: Iterable[Point], now_ms: int) -> None:
        if not group:
            return
        by_name = {p.name: p for p in points if not p.labels}
        out = []
        assigned = by_name.get(ASSIGNED)
        if assigned is not None and self._assigned.get(instance_id) != assigned.value:
            self._assigned[instance_id] = assigned.value
            out.append(self._event(assigned, now_ms, ASSIGNED_KIND, group,
                                   member, instance_id, partitions=int(assigned.value)))
        total = by_name.get(REBALANCE_TOTAL)
        if total is not None and total.delta and total.value > 0:
            latest = by_name.get(REBALANCE_MAX)
            out.append(self._event(total, now_ms, REBALANCED_KIND, group, member,
                                   instance_id, rebalance_ms=total.value,
                                   rebalance_latency_max_ms=latest.value if latest else None))
        if not out:
            return
        ring = self._rings.get(group)
        if ring is None:
            ring = self._rings[group] = deque(maxlen=MAX_EVENTS_PER_GROUP)
            while len(self._rings) > self.max_groups:
                self._rings.popitem(last=False)
        self._rings.move_to_end(group)
        ring.extend(out)

    @staticmethod
    def _event(point: Point, now_ms: int, kind: str, group: str, member: str | None,
               instance_id: uuid.UUID, **fields: Any) -> dict[str, Any]:
        return {"timestamp": point.time_ms or now_ms, "kind": kind, "group": group,
                "member": member, "client_instance_id": str(instance_id), **fields}

    def forget(self, instance_id: uuid.UUID) -> None:
        self._assigned.pop(instance_id, None)

    def events(self, group: str, since: int | None = None) -> list[dict[str, Any]]:
        ring = self._rings.get(group)
        events = list(ring) if ring is not None else []
        return [e for e in events if since is None or e["timestamp"] >= since]
