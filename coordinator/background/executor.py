"""The group coordinator's background executor (seed 000): a pool of worker processes.

``group.coordinator.background.threads`` workers, started from a ``forkserver`` so the asyncio
process is never forked. A task is a module-level function and a payload; the payload is
pickled here (its size and pickling time are the transfer cost the stats keep) and unpickled in
the worker. ``submit`` calls ``done(outcome)`` on the event loop with the task's result, or the
exception it raised. Queue and processing times and the idle ratio go to
:class:`~coordinator.background_stats.BackgroundStats`.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import select
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from coordinator.observability.logs import get_logger

from .stats import BackgroundStats

log = get_logger("coordinator.executor")

PRELOAD = ("coordinator.groups.common.assignor_job", "coordinator.groups.streams.task_job",
           "coordinator.groups.consumer.regex_job")
"""Modules the forkserver imports once, so each worker starts with them loaded."""

Task = Callable[[Any], Any]
Done = Callable[[Any], None]
"""Receives the task's result, or the ``BaseException`` it failed with."""


WORKER_NICENESS = 10
"""Workers run at a lower CPU priority than the event loop: on a small machine an assignor run
then takes longer rather than every other group's requests. Where the OS has ``SCHED_IDLE``
(Linux) workers use it instead: they run on CPU time nothing else wants, and the event loop's
wakeups preempt them at once (a niced worker may finish its time slice first)."""


def _noop() -> int:
    return 0


def _init_worker(niceness: int, server_pid: int) -> None:
    _exit_with(server_pid)
    idle = getattr(os, "SCHED_IDLE", None)
    if idle is not None:
        try:
            os.sched_setscheduler(0, idle, os.sched_param(0))
            return
        except OSError:
            pass
    with contextlib.suppress(OSError):
        os.nice(niceness)


def _exit_with(server_pid: int) -> None:
    """End this worker when the server process ends, however it ends (SIGKILL too). The pool's
    workers hold both ends of its pipes and the forkserver's liveness pipe themselves, so after
    a server killed without a shutdown they would wait forever, and keep the forkserver alive."""

    def watch() -> None:
        try:
            pidfd = os.pidfd_open(server_pid)
        except ProcessLookupError:  # a server stopped as its workers started: gone already
            pass
        except (AttributeError, OSError):  # not Linux >= 5.3: poll
            while True:
                try:
                    os.kill(server_pid, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(1.0)
        else:
            select.select([pidfd], [], [])
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-server", daemon=True).start()


def scheduling_of(_: object = None) -> tuple[int, int]:
    """The calling process's (scheduling policy, niceness), to check a worker's (tests)."""
    return os.sched_getscheduler(0), os.nice(0)


def _run(task: Task, payload: bytes) -> tuple[float, float, Any]:
    """In the worker: (start, finish, result); times are ``time.monotonic()``."""
    started = time.monotonic()
    result = task(pickle.loads(payload))
    return started, time.monotonic(), result


class BackgroundExecutor:
    def __init__(self, workers: int, start_method: str = "forkserver") -> None:
        self.workers = workers
        self.start_method = start_method
        self.stats = BackgroundStats(workers)
        self._pool: ProcessPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_flight = 0
        self._on_first_use = False
        self._starting: asyncio.Task[None] | None = None
        self._waiting: list[tuple[Task, Any, Done]] = []
        """Tasks submitted while the workers start in the background (``start(wait=False)``)."""

    @classmethod
    def from_config(cls, config: Any) -> BackgroundExecutor:
        return cls(config["group.coordinator.background.threads"])

    @property
    def running(self) -> bool:
        return self._pool is not None

    @property
    def in_flight(self) -> int:
        return self._in_flight + len(self._waiting)

    async def start(self, eager: bool = True, wait: bool = True) -> None:
        """Start the workers and wait until each has imported what tasks need. Not ``eager``
        (no group type offloads unless a group's config asks, as in the test profile): the
        first ``submit`` starts them, and the server starts without waiting for them. Not
        ``wait`` (the server's start): the workers start in the background, and tasks
        submitted meanwhile run once they are up; the server serves without waiting for the
        forkserver's imports."""
        self._loop = asyncio.get_running_loop()
        if not eager:
            self._on_first_use = True
            log.info("background executor starts on first use", workers=self.workers)
            return
        self._starting = self._loop.create_task(self._start_workers())
        if wait:
            await self._starting
            if self._pool is None:
                raise RuntimeError("the background executor's workers did not start")

    async def _start_workers(self) -> None:
        assert self._loop is not None
        # Starting processes blocks: do it on a thread, not on the event loop.
        try:
            pool = await asyncio.to_thread(self._make_pool)
        except Exception as exc:  # cannot fork, no forkserver: the tasks fail, the next retries
            log.error("background executor failed to start", error=repr(exc))
            waiting, self._waiting = self._waiting, []
            self._on_first_use = self._starting is not None
            for _, _, done in waiting:
                done(exc)
            return
        if self._starting is None:  # stopped meanwhile
            pool.shutdown(wait=False, cancel_futures=True)
            return
        self._pool = pool
        waiting, self._waiting = self._waiting, []
        for task, payload, done in waiting:
            self.submit(task, payload, done)
        warm = [self._loop.run_in_executor(pool, _noop) for _ in range(self.workers)]
        try:
            await asyncio.gather(*warm)
        except Exception as exc:  # a worker died: the next submit replaces the pool
            log.error("background executor failed to start", error=repr(exc))
            return
        log.info("background executor started", workers=self.workers,
                 start_method=self.start_method)

    def _make_pool(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context(self.start_method)
        if self.start_method == "forkserver":
            context.set_forkserver_preload(list(PRELOAD))
        pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_init_worker,
                                   initargs=(WORKER_NICENESS, os.getpid()))
        for _ in range(self.workers):
            pool.submit(_noop)  # the workers start now, off the event loop
        return pool

    def submit(self, task: Task, payload: Any, done: Done) -> None:
        """Run ``task(payload)`` in a worker; ``done`` gets its outcome on the event loop."""
        if self._pool is None and self._on_first_use:
            self._on_first_use = False
            self._pool = self._make_pool()  # blocks the loop while the workers fork, once
            log.info("background executor started", workers=self.workers,
                     start_method=self.start_method)
        if self._pool is None and self._starting is not None and not self._starting.done():
            self._waiting.append((task, payload, done))  # runs once the workers are up
            return
        pool, loop = self._pool, self._loop
        if pool is None or loop is None:
            raise RuntimeError("the background executor is not running")
        began = time.perf_counter()
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        self.stats.task_sent(len(data), (time.perf_counter() - began) * 1000.0)
        submitted = time.monotonic()
        try:
            future = pool.submit(_run, task, data)
        except BrokenProcessPool:
            # A worker died (killed, out of memory): replace the pool once, then retry. This
            # blocks the loop while the new workers fork, which only happens after a crash.
            log.error("background worker pool broken; restarting it", workers=self.workers)
            pool.shutdown(wait=False, cancel_futures=True)
            pool = self._pool = self._make_pool()
            future = pool.submit(_run, task, data)
        self._in_flight += 1

        def finished(future: Future[tuple[float, float, Any]]) -> None:
            loop.call_soon_threadsafe(self._finished, future, submitted, done)

        future.add_done_callback(finished)

    def _finished(self, future: Future[tuple[float, float, Any]], submitted: float,
                  done: Done) -> None:
        self._in_flight -= 1
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            now = time.monotonic()
            self.stats.task_done(submitted, now, now, failed=True)
            log.error("background task failed", error=repr(error))
            done(error)
            return
        started, ended, result = future.result()
        self.stats.task_done(submitted, started, ended)
        done(result)

    async def stop(self) -> None:
        self._on_first_use = False
        starting, self._starting = self._starting, None
        self._waiting.clear()
        if starting is not None and not starting.done():
            # the pool being made in its thread is shut down by _start_workers, or here
            await asyncio.gather(starting, return_exceptions=True)
        pool, self._pool = self._pool, None
        if pool is None:
            return
        await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)
        log.info("background executor stopped", tasks=self.stats.tasks)
