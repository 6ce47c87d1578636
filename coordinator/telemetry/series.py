"""The metrics clients pushed, as Prometheus series: ``kafka_client_*`` (KIP-714's names),
labelled with the client's instance id, client id and, where known, its group and member, then
the data point's own attributes (at most ``payload.MAX_ATTRIBUTES`` of ``MAX_TEXT``
characters). Deltas of monotonic sums are added up into counters; gauges
keep the last value. Bounded: at most ``MAX_SERIES_PER_CLIENT`` series a client (further points
are counted as dropped); a client's series go when its instance is forgotten.

Pushes arrive on the event loop and scrapes read on the exporter's thread: one lock guards the
series.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import Metric

from .payload import SUM, Point, prometheus_name, prometheus_safe

MAX_SERIES_PER_CLIENT = 500
_RESERVED_LABELS = ("client_instance_id", "client_id", "group_id", "member_id")


def label_name(key: str) -> str:
    cleaned = prometheus_safe(key)
    if cleaned in _RESERVED_LABELS:
        return "client_" + cleaned if not cleaned.startswith("client_") else "point_" + cleaned
    return cleaned if cleaned and not cleaned[0].isdigit() else "_" + cleaned


@dataclass(slots=True)
class ClientSeries:
    client_id: str
    labels: dict[str, str] = field(default_factory=dict)
    """client_instance_id, client_id, group_id, member_id (those known)."""
    values: dict[tuple[str, tuple[tuple[str, str], ...]], list[object]] = field(
        default_factory=dict)
    """(OTLP name, attributes) -> [kind, value, time_ms]."""


class SeriesStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[uuid.UUID, ClientSeries] = {}
        self.dropped_points = 0

    def __len__(self) -> int:
        return sum(len(c.values) for c in self._clients.values())

    def record(self, instance_id: uuid.UUID, client_id: str, labels: Mapping[str, str] | None,
               points: Iterable[Point]) -> None:
        """Keep a push's points; ``labels`` (group_id, member_id) replace the client's, None
        keeps them."""
        with self._lock:
            series = self._clients.get(instance_id)
            if series is None:
                series = self._clients[instance_id] = ClientSeries(client_id)
            if labels is not None or not series.labels:
                series.labels = {"client_instance_id": str(instance_id),
                                 "client_id": client_id, **(labels or {})}
            values = series.values
            for point in points:
                key = (point.name, point.labels)
                entry = values.get(key)
                if entry is None:
                    if len(values) >= MAX_SERIES_PER_CLIENT:
                        self.dropped_points += 1
                        continue
                    values[key] = [point.kind, point.value, point.time_ms]
                elif point.delta:
                    entry[1] = float(entry[1]) + point.value  # type: ignore[arg-type]
                    entry[2] = point.time_ms
                else:
                    entry[1], entry[2] = point.value, point.time_ms

    def relabel(self, instance_id: uuid.UUID, labels: Mapping[str, str]) -> None:
        with self._lock:
            series = self._clients.get(instance_id)
            if series is not None:
                series.labels.update(labels)

    def labels(self, instance_id: uuid.UUID) -> dict[str, str]:
        with self._lock:
            series = self._clients.get(instance_id)
            return dict(series.labels) if series else {}

    def forget(self, instance_id: uuid.UUID) -> None:
        with self._lock:
            self._clients.pop(instance_id, None)

    def latest(self, instance_id: uuid.UUID) -> dict[str, float]:
        """Metric name -> value of one client (the sum over its points of that name)."""
        out: dict[str, float] = {}
        with self._lock:
            series = self._clients.get(instance_id)
            for (name, _attrs), (_kind, value, _t) in (series.values.items() if series else ()):
                out[name] = out.get(name, 0.0) + float(value)  # type: ignore[arg-type]
        return out

    def families(self) -> list[Metric]:
        families: dict[str, Metric] = {}
        with self._lock:
            for series in self._clients.values():
                base = series.labels
                for (name, attrs), (kind, value, _t) in series.values.items():
                    prom = prometheus_name(name)
                    if kind == SUM:
                        prom = prom.removesuffix("_total")
                    family = families.get(prom)
                    if family is not None and family.type != ("counter" if kind == SUM
                                                              else "gauge"):
                        prom = f"{prom}_{kind}"  # a gauge and a sum of one name: both kept
                        family = families.get(prom)
                    if family is None:
                        family = families[prom] = Metric(
                            prom, f"Client metric {name} (KIP-714)",
                            "counter" if kind == SUM else "gauge")
                    labels = {**base, **{label_name(k): v for k, v in attrs}}
                    family.add_sample(prom + ("_total" if kind == SUM else ""), labels,
                                      float(value))  # type: ignore[arg-type]
        return list(families.values())
