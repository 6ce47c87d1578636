"""Fault injection from Python, through the control endpoint (``POST /faults``).

    faults = Faults(ControlClient(coordinator.control_url))      # or coordinator.faults
    faults.error("OffsetCommit", "REBALANCE_IN_PROGRESS", group="orders", count=1)
    faults.delay("Fetch", 500, seconds=10)
    faults.close_connection("Heartbeat", client_id="billing")
    with faults.freeze_member("orders", consumer.memberid()):   # ended on leaving the block
        ...
    faults.coordinator_unavailable("orders", seconds=5)
    faults.force_rebalance("orders")

Every method that adds a rule returns a ``Fault`` (its ``id``, ``remove()``, ``info()``; as a
context manager it removes the rule on exit). APIs are Kafka's names (``OffsetCommit``,
``ConsumerGroupHeartbeat``), errors Kafka's error names (``REBALANCE_IN_PROGRESS``) or codes.
A rule lasts ``count`` injections and/or ``seconds``; without either it lasts until removed
(``close_connection``: once). What each kind does to a request is in the README's "Fault
injection" section and in ``coordinator/control/faults.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from .control import ControlClient, ControlError


@dataclass
class Fault:
    """One rule on the server."""

    id: int
    rule: dict[str, Any]
    faults: Faults = field(repr=False)

    def info(self) -> dict[str, Any] | None:
        """The rule as the server has it now (remaining count and seconds, injections so
        far), or None once it ended."""
        return next((rule for rule in self.faults.list() if rule["id"] == self.id), None)

    @property
    def active(self) -> bool:
        return self.info() is not None

    def remove(self) -> bool:
        """End the rule now; False if it had ended already."""
        return self.faults.remove(self.id)

    def __enter__(self) -> Fault:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.remove()


class Faults:
    def __init__(self, control: ControlClient | str) -> None:
        """``control``: the control endpoint's client, or its base URL."""
        self.control = ControlClient(control) if isinstance(control, str) else control

    # --- rules ----------------------------------------------------------------------------------
    def add(self, kind: str, **spec: Any) -> Fault:
        """Any rule, as ``POST /faults`` takes it (None values are left out)."""
        body = {"kind": kind, **{key: value for key, value in spec.items()
                                 if value is not None}}
        answer = self.control.post("/faults", body)
        return Fault(int(answer["id"]), answer.get("rule", {}), self)

    def error(self, api: str | None, error: str | int, *, group: str | None = None,
              member: str | None = None, client_id: str | None = None,
              count: int | None = None, seconds: float | None = None) -> Fault:
        """Answer ``api`` (None: any API) with ``error`` instead of handling the request."""
        return self.add("error", api=api, error=error, group=group, member=member,
                        client_id=client_id, count=count, seconds=seconds)

    def delay(self, api: str | None, ms: float, *, group: str | None = None,
              member: str | None = None, client_id: str | None = None,
              count: int | None = None, seconds: float | None = None) -> Fault:
        """Handle ``api``'s requests, and hold their answers for ``ms`` milliseconds."""
        return self.add("delay", api=api, delay_ms=ms, group=group, member=member,
                        client_id=client_id, count=count, seconds=seconds)

    def close_connection(self, api: str | None, *, group: str | None = None,
                         member: str | None = None, client_id: str | None = None,
                         count: int | None = None, seconds: float | None = None) -> Fault:
        """Close the connection a matching request comes on, instead of answering it (the next
        one only, unless ``count`` or ``seconds`` say otherwise)."""
        return self.add("close", api=api, group=group, member=member, client_id=client_id,
                        count=count, seconds=seconds)

    def freeze_member(self, group: str, member: str, *, seconds: float | None = None) -> Fault:
        """Swallow the member's heartbeats until the coordinator expires its session: its
        partitions move to the other members after its session timeout, and then it is told it
        was fenced. ``seconds`` ends the freeze earlier."""
        return self.add("freeze", group=group, member=member, seconds=seconds)

    def coordinator_unavailable(self, group: str, error: str = "NOT_COORDINATOR", *,
                                seconds: float | None = None,
                                count: int | None = None) -> Fault:
        """Answer every request of ``group`` with ``error`` (NOT_COORDINATOR, under which
        FindCoordinator finds no coordinator for it, or COORDINATOR_LOAD_IN_PROGRESS) for
        ``seconds``."""
        return self.add("unavailable", group=group, error=error, seconds=seconds, count=count)

    def force_rebalance(self, group: str) -> dict[str, Any]:
        """Bump the group's epoch (consumer, share and streams groups: a new target
        assignment; classic groups: a rebalance, as a joining member starts); the answer says
        the group's type and its new epoch (or its state and generation)."""
        from urllib.parse import quote

        answer: dict[str, Any] = self.control.post(f"/groups/{quote(group, safe='')}/rebalance")
        return answer

    # --- what is active -------------------------------------------------------------------------
    def list(self) -> list[dict[str, Any]]:
        """The active rules: their filters, remaining count and seconds, injections so far."""
        rules: list[dict[str, Any]] = self.control.get("/faults")["faults"]
        return rules

    def remove(self, fault_id: int) -> bool:
        try:
            self.control.delete(f"/faults/{int(fault_id)}")
        except ControlError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def clear(self) -> int:
        """Remove every rule; how many there were."""
        return int(self.control.delete("/faults")["deleted"])
