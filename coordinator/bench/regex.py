"""``python -m coordinator bench regex``: what resolving regex subscriptions costs, and where.

Against ``--topics`` topic names (default 10,000; one in ten matches the regex):

* ``resolve_ms``: one resolution of the group's regexes (what a background worker spends:
  ``consumer.regex.resolve_all``, Kafka's ``refreshRegularExpressions``);
* ``heartbeat_inline_ms`` / ``heartbeat_background_ms``: the event-loop time of the heartbeat
  of a member bringing a new regex, resolving it in the handler (as before issue 24) or
  sending it to the background executor (as the server does now);
* ``topic_change_inline_ms`` / ``topic_change_background_ms``: the same for the write event a
  created topic starts, for ``--groups`` groups subscribed by regex on the partition.

Handlers run in virtual time (``coordinator.testing``), without a server; medians of
``--runs``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.consumer.heartbeat import refresh_subscription_metadata
from coordinator.groups.consumer.regex import resolve_all
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from storage.machine import with_machine

REGEX = "orders-.*"


def topic_names(count: int) -> list[str]:
    """``count`` names, one in ten matching ``REGEX``."""
    return [f"orders-{i:06d}" if i % 10 == 0 else f"events-{i:06d}" for i in range(count)]


def context(names: list[str], background: bool) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0,
                                                     assignor_offload=False),
                               offload=background)
    for name in names:
        ctx.create_topic(name, 1)
    return ctx


def heartbeat_ms(names: list[str], background: bool, runs: int) -> float:
    ctx = context(names, background)
    samples = []
    for run in range(runs):
        regex = f"{REGEX}|run-{run}"  # a new regex each time: the group has not resolved it
        began = time.perf_counter()
        ctx.heartbeat(group_id=f"g{run}", member_id="m", regex=regex)
        samples.append((time.perf_counter() - began) * 1000.0)
    return statistics.median(samples)


def topic_change_ms(names: list[str], background: bool, runs: int, groups: int) -> float:
    ctx = context(names, background)
    for g in range(groups):
        ctx.heartbeat(group_id=f"g{g}", member_id="m", regex=REGEX)
        if background:
            ctx.finish_tasks()
    samples = []
    for run in range(runs):
        name = f"orders-new-{run}"
        ctx.create_topic(name, 1)
        began = time.perf_counter()
        ctx.apply(refresh_subscription_metadata(ctx.shard, ctx.now, ctx.env, name))
        samples.append((time.perf_counter() - began) * 1000.0)
        if background:
            ctx.finish_tasks()
    return statistics.median(samples)


def run_bench(topics: int, groups: int, runs: int) -> dict[str, Any]:
    names = topic_names(topics)
    resolve = statistics.median(resolve_all(((REGEX,), tuple(names)))[1] for _ in range(runs))
    return {
        "case": "regex", "topics": topics, "groups": groups, "runs": runs,
        "resolve_ms": round(resolve, 2),
        "heartbeat_inline_ms": round(heartbeat_ms(names, False, runs), 2),
        "heartbeat_background_ms": round(heartbeat_ms(names, True, runs), 2),
        "topic_change_inline_ms": round(topic_change_ms(names, False, runs, groups), 2),
        "topic_change_background_ms": round(topic_change_ms(names, True, runs, groups), 2),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=10,
                        help="groups subscribed by regex when a topic is created")
    parser.add_argument("--runs", type=int, default=5, help="medians reported")
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace) -> int:
    result = run_bench(args.topics, args.groups, args.runs)
    if args.json:
        print(json.dumps(with_machine(result)))
        return 0
    for key, value in result.items():
        print(f"  {key:28} {value}")
    return 0
