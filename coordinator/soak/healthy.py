"""The well-behaved client of a soak: one KIP-848 member heartbeating on its own connection.

It runs in a process of its own (``start``), so the load generator's work does not add to the
latencies it measures. Every answer must come with no error and within the session timeout;
anything else is a failure, reported with the latencies when it stops.
"""

from __future__ import annotations

import asyncio
import datetime
import multiprocessing
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any

import protocol
from protocol import ErrorCode

from ..bench.storm_client import HB_REQUEST, Wire

__all__ = ["HealthyClient", "HealthyReport"]

GROUP = "soak-healthy-group"
TOPIC = "soak-healthy-topic"
ANSWER_TIMEOUT_S = 5.0
HEARTBEAT_EVERY_S = 0.05
"""At most this long between an answer and the next heartbeat (the server's interval is
longer): many samples for the percentiles."""


@dataclass(slots=True)
class HealthyReport:
    latencies_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def _heartbeat(member_id: str, epoch: int) -> Any:
    joining = epoch == 0
    return protocol.make(
        HB_REQUEST, group_id=GROUP, member_id=member_id, member_epoch=epoch, instance_id=None,
        rack_id=None, rebalance_timeout=datetime.timedelta(milliseconds=60000 if joining else -1),
        subscribed_topic_names=(TOPIC,) if joining else None, subscribed_topic_regex=None,
        server_assignor=None, topic_partitions=() if joining else None)


async def _heartbeat_until(bootstrap: str, stop: Event, ready: Event,
                           report: HealthyReport) -> None:
    try:
        wire = await Wire.connect(bootstrap, client_id="soak-healthy")
    except OSError as exc:
        report.failures.append(f"cannot connect: {exc}")
        return
    member_id, epoch, interval_s = str(uuid.uuid4()), 0, 0.1
    try:
        while not stop.is_set():
            try:
                response, elapsed = await asyncio.wait_for(
                    wire.request(_heartbeat(member_id, epoch)), ANSWER_TIMEOUT_S)
            except TimeoutError:
                report.failures.append(f"no answer to a heartbeat within {ANSWER_TIMEOUT_S}s")
                return
            except (ConnectionError, OSError, asyncio.IncompleteReadError) as exc:
                report.failures.append(f"connection lost: {exc!r}")
                return
            report.latencies_ms.append(elapsed * 1000.0)
            if response.error_code != ErrorCode.none:
                report.failures.append(f"heartbeat at epoch {epoch}: {response.error_code!r}")
                epoch = 0  # rejoin, as a consumer would
            else:
                epoch = response.member_epoch
                interval_s = response.heartbeat_interval.total_seconds()
                ready.set()
            await asyncio.sleep(min(interval_s, HEARTBEAT_EVERY_S))
        response, _ = await wire.request(_heartbeat(member_id, -1))  # leave the group
        if response.error_code != ErrorCode.none:
            report.failures.append(f"leaving: {response.error_code!r}")
    finally:
        await wire.close()


def _main(bootstrap: str, stop: Event, ready: Event, results: Connection) -> None:
    report = HealthyReport()
    try:
        asyncio.run(_heartbeat_until(bootstrap, stop, ready, report))
    except Exception as exc:  # reported, not raised: the parent decides
        report.failures.append(f"client error: {exc!r}")
    results.send(report)


class HealthyClient:
    """``start()`` it once the server is up; ``finish()`` stops it and returns its report."""

    def __init__(self, bootstrap: str) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._ready = context.Event()
        self._results, child = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_main, args=(bootstrap, self._stop, self._ready, child), name="soak-healthy",
            daemon=True)

    def start(self, timeout: float = 30.0) -> bool:
        """Start it; True once it is a member of its group (within ``timeout``), False if it
        failed to get there (``finish`` says why)."""
        self._process.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if not self._process.is_alive() or time.monotonic() > deadline:
                return False
        return True

    def alive(self) -> bool:
        return self._process.is_alive()

    def finish(self, timeout: float = 15.0) -> HealthyReport:
        self._stop.set()
        if self._results.poll(timeout):
            report: HealthyReport = self._results.recv()
        else:
            report = HealthyReport(failures=[f"no report within {timeout}s"])
        self._process.join(timeout)
        if self._process.is_alive():
            self._process.kill()
        return report
