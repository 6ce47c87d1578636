"""The parent side of the raw-wire benches: worker processes that run a load plan each
(``heartbeat_load``, ``commit_load``) over one shared window, the server's CPU over it (from
/proc), and the numbers of every worker together."""

from __future__ import annotations

import contextlib
import multiprocessing
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from .procfs import children, thread_cpu_ns
from .request_loop import Outcome, percentile

START_MARGIN_S = 0.3
"""From telling the workers the window to its start (each has a start time to wait for)."""


def _cpu(pid: int | None) -> dict[int, int]:
    """CPU ns of each live thread of the server process and of its live children."""
    if pid is None:
        return {}
    threads = thread_cpu_ns(pid)
    for child in children(pid):
        with contextlib.suppress(OSError):
            threads.update(thread_cpu_ns(child))
    return threads


def _cpu_between(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU seconds the threads of ``after`` used since ``before`` (a thread started meanwhile:
    all of its time; one that ended meanwhile is not counted)."""
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9


def split(items: int, parts: int) -> list[int]:
    """``items`` spread over ``parts`` as evenly as can be."""
    return [items // parts + (1 if k < items % parts else 0) for k in range(parts)]


def run_workers(target: Callable[[Any, Connection], None], plans: list[Any],
                server_pid: int | None, seconds: float, warmup: float
                ) -> tuple[list[Outcome], float | None, float]:
    """Start a worker process per plan (``target(plan, pipe)``: it reports ("ready", n), then
    gets (start, counted from, end) and sends its ``Outcome``), run them over the same window,
    and return their outcomes, the server's CPU % over the counted window and its CPU
    seconds."""
    ctx = multiprocessing.get_context("spawn")
    pipes, procs = [], []
    for plan in plans:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=target, args=(plan, child), daemon=True)
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    try:
        for pipe in pipes:
            answer = pipe.recv()
            if answer[0] != "ready":
                raise RuntimeError(f"load generator failed: {answer[1]}")
        start_at = time.perf_counter() + START_MARGIN_S
        counted_from = start_at + warmup
        end_at = counted_from + seconds
        for pipe in pipes:
            pipe.send((start_at, counted_from, end_at))
        time.sleep(max(0.0, counted_from - time.perf_counter()))
        cpu_before, wall_before = _cpu(server_pid), time.perf_counter()
        time.sleep(max(0.0, end_at - time.perf_counter()))
        cpu_after, wall_after = _cpu(server_pid), time.perf_counter()
        outcomes: list[Outcome] = []
        for pipe in pipes:
            outcome = pipe.recv()
            if isinstance(outcome, tuple):
                raise RuntimeError(f"load generator failed: {outcome[1]}")
            outcomes.append(outcome)
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    used = _cpu_between(cpu_before, cpu_after)
    pct = None if server_pid is None else round(100.0 * used / (wall_after - wall_before), 1)
    return outcomes, pct, used


def summary(outcomes: list[Outcome], seconds: float) -> dict[str, Any]:
    """Throughput and latency over every worker's window."""
    latencies = sorted(x for o in outcomes for x in o.latencies_ms)
    return {
        "answered": sum(o.answered for o in outcomes),
        "per_s": round(sum(o.answered for o in outcomes) / seconds),
        "p50_ms": round(percentile(latencies, 0.50), 3),
        "p99_ms": round(percentile(latencies, 0.99), 3),
        "max_ms": round(latencies[-1], 3) if latencies else None,
        "generator_cpu_pct": round(100.0 * sum(o.cpu_s for o in outcomes) / seconds, 1),
        "errors": sum(o.errors for o in outcomes),
        "first_error": next((o.first_error for o in outcomes if o.first_error), None),
    }
