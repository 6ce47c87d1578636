"""The cluster-mode chaos soak's fault schedule: every kind is drawn, none is drawn where it
cannot apply (the last running broker is never stopped, only stopped brokers are started, moves
go to running brokers), and a seed gives the same schedule."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from coordinator.soak import cluster_faults
from coordinator.soak.cluster_faults import (
    COORDINATOR,
    DISCONNECT,
    KILL,
    KINDS,
    LEADER,
    START,
    STOP,
    Fault,
    next_fault,
    possible,
)

GROUPS = ("chaos-consumer", "chaos-classic")


def simulate(seed: int, steps: int, brokers: int = 3) -> list[Fault]:
    """Faults applied to a model cluster, as the soak applies them (a kill starts every
    broker again)."""
    rng = random.Random(seed)
    stopped: set[int] = set()
    faults = []
    for _ in range(steps):
        running = [b for b in range(1, brokers + 1) if b not in stopped]
        fault = next_fault(rng, running, sorted(stopped), GROUPS, 6)
        if fault.kind == STOP:
            assert fault.broker in running and len(running) > 1
            stopped.add(fault.broker)
        elif fault.kind == START:
            assert fault.broker in stopped
            stopped.discard(fault.broker)
        elif fault.kind == KILL:
            stopped.clear()
        else:
            assert fault.broker in running
        faults.append(fault)
    return faults


def test_every_kind_is_drawn_and_each_applies_where_drawn() -> None:
    faults = simulate(seed=1, steps=2000)
    kinds = Counter(fault.kind for fault in faults)
    assert set(kinds) == set(KINDS)
    assert kinds[KILL] < kinds[STOP]  # kills are the rarer fault in cluster mode
    assert all(f.group in GROUPS for f in faults if f.kind == COORDINATOR)
    assert all(0 <= f.partition < 6 for f in faults if f.kind == LEADER)  # type: ignore[operator]


def test_a_seed_gives_the_same_schedule() -> None:
    assert simulate(seed=5, steps=200) == simulate(seed=5, steps=200)
    assert simulate(seed=5, steps=200) != simulate(seed=6, steps=200)


def test_what_can_apply() -> None:
    assert possible([1], [2, 3]) == [KILL, START, DISCONNECT, COORDINATOR, LEADER]
    assert possible([1, 2, 3], []) == [KILL, STOP, DISCONNECT, COORDINATOR, LEADER]
    rng = random.Random(0)
    for _ in range(200):
        assert next_fault(rng, [2], [1, 3], GROUPS, 3).kind != STOP


def test_weights_choose_the_kinds() -> None:
    rng = random.Random(0)
    only_moves = {kind: 0.0 for kind in KINDS} | {LEADER: 1.0}
    assert {next_fault(rng, [1, 2], [], GROUPS, 3, only_moves).kind for _ in range(50)} == {LEADER}
    with pytest.raises(ValueError):
        next_fault(rng, [1], [], GROUPS, 3, {START: 1.0})
    assert sum(cluster_faults.WEIGHTS.values()) > 0


def test_a_fault_describes_itself() -> None:
    assert Fault(STOP, broker=2).describe() == "stop broker 2"
    assert Fault(COORDINATOR, broker=3, group="g").describe() == "coordinator group g broker 3"
    assert Fault(KILL).describe() == "kill"
