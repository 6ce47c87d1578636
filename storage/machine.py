"""The machine-speed yardstick every bench prints: one fixed Python micro-loop's ns/op.

A bench's absolute figures hold only on the machine that made them; ``machine_ns_per_op``
beside them says how fast that machine runs Python, so runs on two machines can be compared
(a ``dict.get`` of a small int key per op, the best of a few rounds). It lives here, in the
lowest package every bench may import (``coordinator``'s benches, ``pipeline``'s, and the
CLI's rows of ``assignors``' bench).
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

LOOPS = 200_000
ROUNDS = 5
KEY = "machine_ns_per_op"
"""The key of the figure in every bench's JSON rows."""


@cache
def machine_ns_per_op() -> float:
    """ns per op of the micro-loop in this process (measured once: the best of ``ROUNDS``)."""
    table = {i: i for i in range(64)}
    get = table.get
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter_ns()
        for i in range(LOOPS):
            get(i & 63)
        best = min(best, (time.perf_counter_ns() - started) / LOOPS)
    return round(best, 1)


def with_machine(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with ``machine_ns_per_op`` added."""
    return {**row, KEY: machine_ns_per_op()}
