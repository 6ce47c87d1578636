"""Test Kafka applications against a real group coordinator.

``Coordinator.start()`` runs the server (``python -m coordinator serve --profile test``) as a
child process on free ports; the pytest plugin (``kafka_coordinator.pytest_plugin``, registered
through the ``pytest11`` entry point) gives tests one per test or per session. Fault injection
(``kafka_coordinator.faults``), the HTTP control client (``kafka_coordinator.control``), the
rebalance timeline (``kafka_coordinator.timeline``), the clients' pushed metrics
(``kafka_coordinator.clients``) and the brokers of a cluster (``kafka_coordinator.brokers``)
are imported when first used, so importing this package needs neither pytest nor the Kafka
client libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .process import Coordinator, CoordinatorError

if TYPE_CHECKING:
    from .brokers import Brokers
    from .clients import ClientMetrics
    from .control import ControlClient
    from .faults import Faults
    from .timeline import Timeline

__all__ = ["Brokers", "ClientMetrics", "ControlClient", "Coordinator", "CoordinatorError",
           "Faults", "Timeline"]

_LAZY = {"Brokers": "brokers", "ClientMetrics": "clients", "ControlClient": "control",
         "Faults": "faults", "Timeline": "timeline"}
_SUBMODULES = frozenset({"brokers", "clients", "client_assignor", "control", "faults", "timeline",
                         "pytest_plugin"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
