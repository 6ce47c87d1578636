"""The brokers of a cluster (``cluster.brokers``) from Python, through the control endpoint.

    brokers = Brokers(ControlClient(coordinator.control_url))    # or coordinator.brokers
    brokers.list()                        # [{"id": 1, "state": "running", "listener": ..., ...}]
    brokers.stop(2)                       # its listener closes, its connections drop, what it
    brokers.start(2)                      #   led moves to the others (a leader epoch bump)
    brokers.delay(3, 200, seconds=10)     # hold broker 3's answers 200 ms, for 10 s
    brokers.move_coordinator("orders", 2, load_ms=500)
    brokers.move_leader("orders", 0, 3)

A refusal (an unknown broker, stopping the last running one, ...) raises ``ControlError``
(``kafka_coordinator.control``) with the server's status and reason. (It lives in
``coordinator.testing``, so the server's chaos soak drives the brokers with it too.)
"""

from __future__ import annotations

from coordinator.testing.brokers import Brokers

__all__ = ["Brokers"]
