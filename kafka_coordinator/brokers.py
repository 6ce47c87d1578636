"""The brokers of a cluster (``cluster.brokers``) from Python, through the control endpoint:
``Brokers(ControlClient(coordinator.control_url))``, or ``Coordinator.brokers``; ``list()``,
``stop(id)``, ``start(id)``, ``delay(id, delay_ms, seconds)``, ``disconnect(id)``,
``move_coordinator(group, id, load_ms)``, ``move_leader(topic, partition, id)``. A refusal
raises ``ControlError``
(``kafka_coordinator.control``). (It lives in ``coordinator.testing``, so the server's chaos
soak drives the brokers with it too.)
"""

from __future__ import annotations

from coordinator.testing.brokers import Brokers

__all__ = ["Brokers"]
