"""Client telemetry (KIP-714): client-metrics subscriptions, client instances, the metrics
they push, decoded and re-exposed as ``kafka_client_*`` Prometheus series.

``subscriptions`` holds the CLIENT_METRICS config resources, ``instances`` the rules of
GetTelemetrySubscriptions and PushTelemetry, ``compression`` and ``payload`` turn a push into
points, ``series`` keeps them for the exporter, ``membership`` finds a client's group and
member, ``manager`` puts them together for the APIs, the control endpoint and the wiring.
"""

from __future__ import annotations

import weakref
from typing import Any

from .manager import ClientTelemetry

__all__ = ["ClientTelemetry", "attach", "of"]

_BY_BROKER: weakref.WeakKeyDictionary[Any, ClientTelemetry] = weakref.WeakKeyDictionary()


def attach(broker: Any, telemetry: ClientTelemetry) -> None:
    _BY_BROKER[broker] = telemetry


def of(broker: Any) -> ClientTelemetry:
    """The client telemetry of ``broker`` (a ``coordinator.metadata.broker.Broker``); one
    from its config, with no stored subscriptions, if the wiring attached none (handler
    tests)."""
    found = _BY_BROKER.get(broker)
    if found is None:
        found = _BY_BROKER[broker] = ClientTelemetry.from_config(broker.config,
                                                                 broker.clock.now_ms)
    return found


def detach(broker: Any) -> None:
    _BY_BROKER.pop(broker, None)
