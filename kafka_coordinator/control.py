"""A tiny JSON client of the coordinator's HTTP control endpoint (``control.listener``).

    control = ControlClient("http://127.0.0.1:8080")
    control.get("/health")                                   # {"status": "ok", "faults": 0}
    control.post("/faults", {"kind": "error", "api": "OffsetCommit",
                             "error": "REBALANCE_IN_PROGRESS", "count": 1})

Any answer other than 2xx raises ``ControlError`` with the status and the server's message.
Only the standard library (``urllib``) is used. (It lives in ``coordinator.testing``, so the
server's own soaks and benchmarks drive the endpoint with it too.)
"""

from __future__ import annotations

from coordinator.testing.control_client import DEFAULT_TIMEOUT_S, ControlClient, ControlError

__all__ = ["DEFAULT_TIMEOUT_S", "ControlClient", "ControlError"]
