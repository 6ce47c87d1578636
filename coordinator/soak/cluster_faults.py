"""The faults of ``soak chaos --brokers N`` (N > 1), drawn one at a time from a seeded random
generator: what a cluster goes through besides a crash of the whole server.

| kind | what the soak does |
| --- | --- |
| ``kill`` | SIGKILL of the server process, then a start on the same data and ports |
| ``stop`` | ``POST /brokers/<id>/stop`` of a running broker (never the last one running) |
| ``start`` | ``POST /brokers/<id>/start`` of a stopped broker |
| ``disconnect`` | ``POST /brokers/<id>/disconnect`` of a running broker: its connections drop |
| ``coordinator`` | ``POST /groups/<group>/coordinator`` to a running broker |
| ``leader`` | ``POST /partitions/<topic>/<p>/leader`` to a running broker |

``next_fault`` only picks; the soak applies the fault and then reads the brokers' states back
from the server (a kill may bring stopped brokers back), so the schedule never relies on its own
idea of the cluster for long.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

KILL = "kill"
STOP = "stop"
START = "start"
DISCONNECT = "disconnect"
COORDINATOR = "coordinator"
LEADER = "leader"
KINDS = (KILL, STOP, START, DISCONNECT, COORDINATOR, LEADER)

WEIGHTS: Mapping[str, float] = {KILL: 1.0, STOP: 2.0, START: 2.0, DISCONNECT: 1.0,
                                COORDINATOR: 2.0, LEADER: 2.0}
"""How often each kind is drawn, relative to the others, where it can be applied."""


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str
    broker: int | None = None
    group: str | None = None
    partition: int | None = None

    def describe(self) -> str:
        target = (f" group {self.group}" if self.group is not None else "") + \
            (f" partition {self.partition}" if self.partition is not None else "")
        to = f" broker {self.broker}" if self.broker is not None else ""
        return f"{self.kind}{target}{to}"


def possible(running: Sequence[int], stopped: Sequence[int]) -> list[str]:
    """The kinds that can be applied to a cluster with these brokers running and stopped."""
    kinds = [KILL]
    if len(running) > 1:
        kinds.append(STOP)
    if stopped:
        kinds.append(START)
    if running:
        kinds += [DISCONNECT, COORDINATOR, LEADER]
    return kinds


def next_fault(rng: random.Random, running: Sequence[int], stopped: Sequence[int],
               groups: Sequence[str], partitions: int,
               weights: Mapping[str, float] = WEIGHTS) -> Fault:
    """One fault for a cluster with ``running`` and ``stopped`` brokers (ids), among
    ``groups`` and the topic's ``partitions``."""
    running, stopped = sorted(running), sorted(stopped)
    kinds = [kind for kind in possible(running, stopped) if weights.get(kind, 0.0) > 0.0]
    if not kinds:
        raise ValueError("no fault kind has a weight above 0")
    kind = rng.choices(kinds, [weights[kind] for kind in kinds])[0]
    if kind == KILL:
        return Fault(KILL)
    if kind == STOP:
        return Fault(STOP, broker=rng.choice(running))
    if kind == START:
        return Fault(START, broker=rng.choice(stopped))
    broker = rng.choice(running)
    if kind == DISCONNECT:
        return Fault(DISCONNECT, broker=broker)
    if kind == COORDINATOR:
        return Fault(COORDINATOR, broker=broker, group=rng.choice(list(groups)))
    return Fault(LEADER, broker=broker, partition=rng.randrange(partitions))
