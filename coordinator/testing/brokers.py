"""The brokers of a cluster (``cluster.brokers``) from Python, through the control endpoint.

    brokers = Brokers(ControlClient(coordinator.control_url))    # or coordinator.brokers
    brokers.list()                        # [{"id": 1, "state": "running", "listener": ..., ...}]
    brokers.stop(2)                       # its listener closes, its connections drop, what it
    brokers.start(2)                      #   led moves to the others (a leader epoch bump)
    brokers.delay(3, 200, seconds=10)     # hold broker 3's answers 200 ms, for 10 s
    brokers.disconnect(3)                 # drop its connections (it keeps listening)
    brokers.move_coordinator("orders", 2, load_ms=500)
    brokers.move_leader("orders", 0, 3)

Each call is one request of the control endpoint's cluster routes (``GET /brokers``,
``POST /brokers/<id>/stop|start|delay|disconnect``, ``POST /groups/<group>/coordinator``,
``POST /partitions/<topic>/<partition>/leader``) and returns its JSON answer; a refusal (an
unknown broker, stopping the last running one, ...) raises ``ControlError`` with the server's
status (400, 404) and reason.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .control_client import ControlClient

BrokerIds = list[int]
"""(An alias: inside ``Brokers`` the name ``list`` is its method.)"""


def _segment(text: str) -> str:
    """One path segment: a group or topic name may hold any character, ``/`` too."""
    return quote(text, safe="")


class Brokers:
    def __init__(self, control: ControlClient | str) -> None:
        """``control``: the control endpoint's client, or its base URL."""
        self.control = ControlClient(control) if isinstance(control, str) else control

    # --- what there is ---------------------------------------------------------------------------
    def list(self) -> list[dict[str, Any]]:
        """Every broker: its ``id``, ``state`` (``running`` or ``stopped``), ``listener``
        (``host:port``), ``rack``, the partitions it leads and the coordinator partitions
        (``__consumer_offsets``, ``__transaction_state``) it leads."""
        answer = self.control.get("/brokers")
        brokers: list[dict[str, Any]] = answer["brokers"] if isinstance(answer, dict) else answer
        return brokers

    def get(self, broker: int) -> dict[str, Any]:
        """One broker as ``list()`` has it; ``KeyError`` if there is none with that id."""
        for entry in self.list():
            if int(entry["id"]) == int(broker):
                return entry
        raise KeyError(f"no broker {broker}")

    def ids(self, state: str | None = None) -> BrokerIds:
        """The brokers' ids (those in ``state`` if given: ``running``, ``stopped``)."""
        return sorted(int(entry["id"]) for entry in self.list()
                      if state is None or entry.get("state") == state)

    def running(self) -> BrokerIds:
        return self.ids("running")

    # --- failures --------------------------------------------------------------------------------
    def stop(self, broker: int, load_ms: float | None = None) -> dict[str, Any]:
        """Stop a broker: its listener closes and its connections drop; the partitions and the
        coordinator partitions it led move to running brokers (which answer
        COORDINATOR_LOAD_IN_PROGRESS for ``load_ms`` while they load the coordinator
        partitions, if given). Refused (400) for the last running broker."""
        return self._post(f"/brokers/{int(broker)}/stop",
                          None if load_ms is None else {"load_ms": load_ms})

    def disconnect(self, broker: int) -> dict[str, Any]:
        """Drop every connection of ``broker``; it keeps listening (clients reconnect)."""
        return self._post(f"/brokers/{int(broker)}/disconnect")

    def start(self, broker: int) -> dict[str, Any]:
        """Start a stopped broker again on its port."""
        return self._post(f"/brokers/{int(broker)}/start")

    def delay(self, broker: int, delay_ms: float, seconds: float | None = None) -> dict[str, Any]:
        """Hold every answer of ``broker`` for ``delay_ms`` (for ``seconds``, if given)."""
        body: dict[str, Any] = {"delay_ms": delay_ms}
        if seconds is not None:
            body["seconds"] = seconds
        return self._post(f"/brokers/{int(broker)}/delay", body)

    # --- moves -----------------------------------------------------------------------------------
    def move_coordinator(self, group: str, broker: int,
                         load_ms: float | None = None) -> dict[str, Any]:
        """Move the leadership of ``group``'s ``__consumer_offsets`` partition (so its
        coordinator, and every other group's on that partition) to ``broker``, which answers
        COORDINATOR_LOAD_IN_PROGRESS for ``load_ms`` (the server's default if None) while it
        loads the partition; the old coordinator answers NOT_COORDINATOR."""
        body: dict[str, Any] = {"broker": int(broker)}
        if load_ms is not None:
            body["load_ms"] = load_ms
        return self._post(f"/groups/{_segment(group)}/coordinator", body)

    def move_leader(self, topic: str, partition: int, broker: int) -> dict[str, Any]:
        """Make ``broker`` the leader of ``topic``'s ``partition``, with a new leader epoch."""
        return self._post(f"/partitions/{_segment(topic)}/{int(partition)}/leader",
                          {"broker": int(broker)})

    def _post(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        answer: dict[str, Any] = self.control.post(path, body)
        return answer

    def __repr__(self) -> str:
        return f"Brokers({self.control!r})"
