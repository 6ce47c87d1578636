"""The load of ``bench telemetry``: client instances that get their subscription, then push a
librdkafka-like payload (nine consumer metrics as OTLP, zstd-compressed, about 500 bytes) every
push interval, shared over a few raw-wire connections, in a process of its own."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import zstandard
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2

import protocol

from .wire import Wire, message
from .wire import run as run_loop

GAUGES = ("coordinator.assigned.partitions", "coordinator.rebalance.latency.avg",
          "coordinator.rebalance.latency.max", "coordinator.commit.latency.avg",
          "coordinator.commit.latency.max", "fetch.manager.fetch.latency.avg",
          "fetch.manager.fetch.latency.max", "poll.idle.ratio.avg")
ZSTD = 4


@dataclass(frozen=True, slots=True)
class LoadPlan:
    bootstrap: str
    clients: int
    connections: int


@dataclass(slots=True)
class LoadOutcome:
    pushes: int = 0
    errors: dict[int, int] = field(default_factory=dict)
    push_ms: list[float] = field(default_factory=list)


def payload(rng: random.Random, client: int) -> bytes:
    data = metrics_pb2.MetricsData()
    resource = data.resource_metrics.add()
    for key, value in (("group_id", f"bench-telemetry-{client % 50}"),
                       ("member_id", f"member-{client}")):
        resource.resource.attributes.append(KeyValue(key=key,
                                                     value=AnyValue(string_value=value)))
    scope = resource.scope_metrics.add()
    now = time.time_ns()
    for name in GAUGES:
        metric = scope.metrics.add(name=f"org.apache.kafka.consumer.{name}")
        metric.gauge.data_points.add(as_double=rng.random() * 100, time_unix_nano=now)
    total = scope.metrics.add(name="org.apache.kafka.consumer.coordinator.rebalance.latency.total")
    total.sum.is_monotonic = True
    total.sum.aggregation_temporality = metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
    total.sum.data_points.add(as_int=rng.randrange(3), time_unix_nano=now)
    return zstandard.ZstdCompressor().compress(data.SerializeToString())


async def _client(wire: Wire, client: int, stop: asyncio.Event, outcome: LoadOutcome) -> None:
    get_type = message("get_telemetry_subscriptions", 0, "GetTelemetrySubscriptionsRequest")
    push_type = message("push_telemetry", 0, "PushTelemetryRequest")
    rng = random.Random(client)
    answer, _ = await wire.request(protocol.make(get_type, client_instance_id=uuid.UUID(int=0)))
    instance, subscription = answer.client_instance_id, answer.subscription_id
    interval_s = answer.push_interval.total_seconds()
    await asyncio.sleep(rng.random() * interval_s)  # spread, as clients' jitter does
    while not stop.is_set():
        started = time.monotonic()
        pushed, took = await wire.request(protocol.make(
            push_type, client_instance_id=instance, subscription_id=subscription, terminating=False,
            compression_type=ZSTD, metrics=payload(rng, client)))
        code = int(pushed.error_code)
        if code:
            outcome.errors[code] = outcome.errors.get(code, 0) + 1
        else:
            outcome.pushes += 1
            outcome.push_ms.append(took * 1000)
        # the next push a little after the interval since this one (the server measures
        # from when it received the push)
        await asyncio.sleep(max(0.0, interval_s * 1.02 - (time.monotonic() - started)))


async def _main(plan: LoadPlan, pipe: Connection) -> None:
    wires = [await Wire.connect(plan.bootstrap, client_id=f"bench-telemetry-{i}")
             for i in range(plan.connections)]
    stop = asyncio.Event()
    outcome = LoadOutcome()
    tasks = [asyncio.create_task(_client(wires[i % len(wires)], i, stop, outcome))
             for i in range(plan.clients)]
    pipe.send(("ready", plan.clients))
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, pipe.recv)  # the stop signal
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    for wire in wires:
        await wire.close()
    pipe.send(outcome)


def worker_main(plan: LoadPlan, pipe: Connection) -> None:
    try:
        run_loop(_main(plan, pipe))
    except BaseException as exc:  # reported to the parent, which fails the run
        pipe.send(("error", repr(exc)))


def start(plan: LoadPlan) -> tuple[Any, Connection]:
    """The load's process, running once it answered ready; ``stop(...)`` ends it."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=worker_main, args=(plan, child), daemon=True)
    proc.start()
    answer = parent.recv()
    if answer[0] != "ready":
        raise RuntimeError(f"telemetry load failed: {answer[1]}")
    return proc, parent


def stop(proc: Any, pipe: Connection) -> LoadOutcome:
    pipe.send("stop")
    outcome = pipe.recv()
    proc.join(10)
    if isinstance(outcome, tuple):
        raise RuntimeError(f"telemetry load failed: {outcome[1]}")
    return outcome
