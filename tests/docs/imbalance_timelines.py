"""The README's timelines of deferred and incremental resolution (seed 004, Designs II and III):
consumer groups driven in virtual time through the real heartbeat handler, their records and
annotations derived into timeline events as the server derives them, printed compactly.
``tests/docs/test_readme_imbalance.py`` checks that README.md shows exactly these;
``python -m tests.docs.imbalance_timelines`` prints them.

Members heartbeat every 300 ms, reporting what they were given (so revoking at their next
heartbeat); a killed member stops heartbeating and its 3 s session expires."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.timeline_records import derive
from coordinator.observability import timeline
from coordinator.testing.consumer_group_context import ConsumerGroupContext

HEARTBEAT_MS = 300
STEP_MS = 100
KINDS = ("member-joined", "member-left", "held", "released", "target-computed", "round",
         "revocation-requested", "assigned")


@dataclass
class _Annotations:
    """What the handlers note beside the records (a member's removal reason, a round)."""

    entries: list[tuple[int, int, str, dict[str, Any]]] = field(default_factory=list)
    max_entries: int = 1

    def annotate(self, group_id: str, name: str, fields: dict[str, Any],
                 timestamp: int | None = None) -> None:
        self.entries.append((-1 if timestamp is None else timestamp, -1, name, dict(fields)))


class Run:
    """One group in virtual time: members heartbeating, the timeline entries so far."""

    def __init__(self, partitions: int, **settings: Any) -> None:
        self.ctx = ConsumerGroupContext(ConsumerGroupSettings(
            session_timeout_ms=3000, heartbeat_interval_ms=HEARTBEAT_MS, **settings))
        self.ctx.create_topic("t", partitions)
        self.entries: list[tuple[int, int, Any, Any]] = []
        self.alive: list[str] = []
        self.notes = _Annotations()
        self._seen = 0
        self._start = self.ctx.now

    def _collect(self) -> None:
        for ts, offset, name, fields in self.notes.entries:
            self.entries.append((self.ctx.now if ts < 0 else ts, offset, name, fields))
        self.notes.entries.clear()
        for key, value in self.ctx.written[self._seen:]:
            self.entries.append((self.ctx.now, len(self.entries), key, value))
        self._seen = len(self.ctx.written)

    def _do(self, action: Callable[[], Any]) -> None:
        timeline.attach(cast(Any, self.notes))
        try:
            action()
        finally:
            timeline.detach(cast(Any, self.notes))
        self._collect()

    def join(self, member_id: str) -> None:
        self._do(lambda: self.ctx.heartbeat(member_id=member_id, topics=["t"]))
        self.alive.append(member_id)

    def kill(self, member_id: str) -> None:
        self.alive.remove(member_id)

    def run(self, ms: int) -> None:
        """``ms`` of the members heartbeating and the timers firing."""
        for _ in range(ms // STEP_MS):
            self._do(lambda: self.ctx.advance(STEP_MS))
            if (self.ctx.now - self._start) % HEARTBEAT_MS:
                continue
            for member_id in list(self.alive):
                member = self.ctx.group().member(member_id)
                if member is None:
                    continue
                self._do(partial(self.ctx.heartbeat, member_id=member_id,
                                 member_epoch=member.member_epoch, owned={"t": sorted(
                                     self.ctx.named(member.assigned_partitions).get("t", ()))}))

    def mark(self) -> None:
        """Show events from now on."""
        self._shown_from = self.ctx.now

    def lines(self) -> list[str]:
        events = derive([], self.entries, group="g", topic_name=lambda _: "t")
        start = getattr(self, "_shown_from", self._start)
        out = []
        for e in events:
            if e["kind"] not in KINDS or e["timestamp"] < start:
                continue
            out.append(f"{(e['timestamp'] - start) / 1000:6.1f}s  {e['kind']:<20} "
                       f"{_fields(e)}".rstrip())
        return out


def _fields(e: dict[str, Any]) -> str:
    kind = e["kind"]
    parts = e.get("partitions", {}).get("t")
    if kind == "member-left":
        return f"{e['member']} ({e.get('reason', '?')})"
    if kind == "member-joined":
        return e["member"]
    if kind == "held":
        return f"{e['member']}'s {parts} until +{(e['deadline_ms'] - e['timestamp']) / 1000:.0f}s"
    if kind == "released":
        return f"{e['member']}'s {parts} ({e['reason']})"
    if kind == "target-computed":
        return f"epoch {e['epoch']}, {e['moved']} moved"
    if kind == "round":
        return f"epoch {e['epoch']}: {e['moved']} moved, {e['deferred']} left for later rounds"
    return f"{e['member']} {parts}"


def pod_restart(delay_ms: int, back_after_ms: int | None = 5000) -> list[str]:
    """Three members over 6 partitions; c's pod dies, and a new pod (d) joins
    ``back_after_ms`` after its session expired (None: no pod comes back)."""
    run = Run(6, scheduled_rebalance_max_delay_ms=delay_ms, assignment_interval_ms=0)
    for member_id in "abc":
        run.join(member_id)
    run.run(3000)
    run.kill("c")
    run.mark()
    if back_after_ms is None:
        run.run(3300 + delay_ms + 1000)
        return run.lines()
    run.run(3300 + back_after_ms)
    run.join("d")
    run.run(3000)
    return run.lines()


def scale_up(max_moves: int) -> list[str]:
    """Two members over 12 partitions; two more join one after the other (the assignment
    interval 1 s)."""
    run = Run(12, assignment_max_moves=0, assignment_interval_ms=1000)
    for member_id in "ab":
        run.join(member_id)
    run.run(3000)
    run.ctx.env.settings = ConsumerGroupSettings(
        session_timeout_ms=3000, heartbeat_interval_ms=HEARTBEAT_MS,
        assignment_max_moves=max_moves, assignment_interval_ms=1000)
    run.mark()
    run.run(200)
    run.join("c")
    run.join("d")
    run.run(6000)
    return run.lines()


SCENARIOS: dict[str, Callable[[], list[str]]] = {
    "pod restart, consumer.scheduled.rebalance.max.delay.ms=0 (Kafka's behaviour)":
        lambda: pod_restart(0),
    "pod restart, consumer.scheduled.rebalance.max.delay.ms=10000":
        lambda: pod_restart(10_000),
    "pod gone for good, consumer.scheduled.rebalance.max.delay.ms=10000":
        lambda: pod_restart(10_000, None),
    "scale-up 2 -> 4, consumer.assignment.max.moves=0 (unbounded)": lambda: scale_up(0),
    "scale-up 2 -> 4, consumer.assignment.max.moves=2": lambda: scale_up(2),
}


def blocks() -> dict[str, str]:
    """Each scenario's README block (its title line, then its events)."""
    return {title: "\n".join([f"# {title}", *make()]) for title, make in SCENARIOS.items()}


if __name__ == "__main__":
    for block in blocks().values():
        print("```text")
        print(block)
        print("```\n")
