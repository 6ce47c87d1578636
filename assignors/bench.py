"""``python -m assignors.bench``: time an assignor on Kafka's JMH benchmark inputs.

``add_arguments`` and ``run`` are what ``python -m coordinator bench assignor`` wires up.
``--all`` runs the issue's target table and prints one JSON line per case.

``--subscriptions`` picks who subscribes to what (see :mod:`assignors.bench_input`):
``homogeneous`` and ``heterogeneous`` (Kafka's JMH buckets, really independent homogeneous
sub-groups) and two patterns that exercise the general heterogeneous path: ``overlapping``
(member ``i`` subscribes to ``--window`` consecutive topics from ``(--stride * i) mod
topics``, one connected group) and ``random`` (``--window`` topics drawn at random per member,
seeded).

``--assignor streams-sticky`` times the streams groups' task assignor (KIP-1071) on the input
of Kafka's ``StreamsStickyAssignorBenchmark`` (see :mod:`assignors.bench_input`): ``--topics``
subtopologies of ``--partitions-per-topic`` tasks, ``--members`` members on processes of
``--members-per-process`` threads, ``--standby-replicas``; ``--incremental`` adds a member to
the previous target, ``--incremental --remove`` removes one.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping

from assignors.bench_input import (
    DEFAULT_STRIDE,
    STREAMS_STICKY,
    SUBSCRIPTIONS,
    BenchCase,
    build_spec,
    build_task_spec,
)
from assignors.registry import ASSIGNORS, get_assignor
from assignors.spec import AssignmentSpec
from assignors.sticky_task import StickyTaskAssignor
from assignors.task_spec import TaskAssignment, TaskAssignmentSpec

RUNS = 30
WARMUP_RUNS = 5
WARMUP_SECONDS = 0.5

# (case, Kafka's Java median in ms on a 2-core machine, JDK 17, warm JIT) from issue 7
TARGETS: list[tuple[BenchCase, float | None]] = [
    (BenchCase("uniform", 1000, 1000, 50, "homogeneous", False), 1.0),
    (BenchCase("uniform", 1000, 1000, 50, "homogeneous", True), 0.40),
    (BenchCase("uniform", 1000, 1000, 50, "heterogeneous", False), 17.4),
    (BenchCase("uniform", 1000, 1000, 50, "heterogeneous", True), 22.0),
    (BenchCase("range", 1000, 1000, 50, "homogeneous", False), 3.0),
    (BenchCase("range", 1000, 1000, 50, "homogeneous", True), 2.7),
    (BenchCase("range", 1000, 1000, 50, "heterogeneous", False), 9.5),
    (BenchCase("uniform", 5000, 1000, 100, "homogeneous", False), 2.5),
    (BenchCase("uniform", 5000, 1000, 100, "heterogeneous", False), 98.0),
    (BenchCase("uniform", 100, 100, 50, "homogeneous", False), 0.4),
    (BenchCase("uniform", 100, 100, 50, "homogeneous", True), 0.4),
    (BenchCase("uniform", 100, 100, 50, "heterogeneous", False), 0.4),
    (BenchCase("uniform", 100, 100, 50, "heterogeneous", True), 0.4),
    (BenchCase("range", 100, 100, 50, "homogeneous", False), 0.4),
    (BenchCase("range", 100, 100, 50, "homogeneous", True), 0.4),
    (BenchCase("range", 100, 100, 50, "heterogeneous", False), 0.4),
    (BenchCase("range", 100, 100, 50, "heterogeneous", True), 0.4),
    (BenchCase("uniform", 1000, 1000, 50, "homogeneous", False, 3), None),
    (BenchCase("uniform", 1000, 1000, 50, "homogeneous", True, 3), None),
    (BenchCase("uniform", 1000, 1000, 50, "homogeneous", False, 5), None),
    (BenchCase("uniform", 1000, 1000, 50, "homogeneous", True, 5), None),
    (BenchCase("uniform", 1000, 1000, 50, "heterogeneous", False, 5), None),
    (BenchCase("range", 1000, 1000, 50, "homogeneous", True, 5), None),
    # lag has no Kafka counterpart
    (BenchCase("lag", 100, 100, 50, "homogeneous", False), None),
    (BenchCase("lag", 100, 100, 50, "homogeneous", True), None),
    (BenchCase("lag", 1000, 1000, 50, "homogeneous", False), None),
    (BenchCase("lag", 1000, 1000, 50, "heterogeneous", False), None),
    # the general heterogeneous path (issue 22): overlapping subscriptions (member i: 200
    # consecutive topics from 7i mod 1000, one connected group) and random subsets of 100
    # topics; Kafka's Java uniform assignor on the overlapping input, same machine: 35 ms
    # full, 21 ms one member joining, 135 ms at 5,000 members / 100k partitions
    (BenchCase("uniform", 1000, 1000, 50, "overlapping"), 35.0),
    (BenchCase("uniform", 1000, 1000, 50, "overlapping", True), 21.0),
    (BenchCase("uniform", 1000, 1000, 50, "overlapping", False, 3), None),
    (BenchCase("uniform", 1000, 1000, 50, "overlapping", True, 3), None),
    (BenchCase("uniform", 1000, 1000, 50, "overlapping", False, 5), None),
    (BenchCase("uniform", 1000, 1000, 50, "overlapping", True, 5), None),
    (BenchCase("uniform", 1000, 1000, 50, "random"), None),
    (BenchCase("uniform", 1000, 1000, 50, "random", True), None),
    (BenchCase("uniform", 1000, 1000, 50, "random", False, 3), None),
    (BenchCase("uniform", 1000, 1000, 50, "random", True, 3), None),
    (BenchCase("uniform", 1000, 1000, 50, "random", False, 5), None),
    (BenchCase("uniform", 1000, 1000, 50, "random", True, 5), None),
    (BenchCase("uniform", 5000, 1000, 100, "overlapping"), 135.0),
    (BenchCase("range", 1000, 1000, 50, "overlapping"), None),
    (BenchCase("range", 1000, 1000, 50, "overlapping", True), None),
    (BenchCase("range", 1000, 1000, 50, "overlapping", False, 3), None),
    (BenchCase("range", 1000, 1000, 50, "overlapping", False, 5), None),
    (BenchCase("range", 1000, 1000, 50, "random"), None),
    (BenchCase("range", 1000, 1000, 50, "random", True), None),
    (BenchCase("range", 1000, 1000, 50, "random", False, 5), None),
    (BenchCase("lag", 1000, 1000, 50, "overlapping"), None),
    (BenchCase("lag", 1000, 1000, 50, "overlapping", True), None),
    (BenchCase("lag", 1000, 1000, 50, "random"), None),
    (BenchCase("lag", 1000, 1000, 50, "random", True), None),
    # streams groups' task assignor: 50k tasks, 500 processes x 2 threads (Kafka's JMH has
    # no published number for this size)
    (BenchCase(STREAMS_STICKY, 1000, 1000, 50), None),
    (BenchCase(STREAMS_STICKY, 1000, 1000, 50, incremental=True), None),
    (BenchCase(STREAMS_STICKY, 1000, 1000, 50, incremental=True, remove=True), None),
    (BenchCase(STREAMS_STICKY, 1000, 1000, 50, standby_replicas=1), None),
    (BenchCase(STREAMS_STICKY, 1000, 1000, 50, incremental=True, standby_replicas=1), None),
    (BenchCase(STREAMS_STICKY, 1000, 1000, 50, incremental=True, remove=True,
               standby_replicas=1), None),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--assignor", choices=[*sorted(ASSIGNORS), STREAMS_STICKY],
                        default="uniform")
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions-per-topic", type=int, default=50)
    parser.add_argument("--subscriptions", choices=SUBSCRIPTIONS, default="homogeneous")
    parser.add_argument(
        "--window", type=int, default=None,
        help="overlapping/random: topics per member (default 200 overlapping, 100 random)",
    )
    parser.add_argument(
        "--stride", type=int, default=DEFAULT_STRIDE,
        help="overlapping: member i's topics start at topic (stride * i) mod topics",
    )
    parser.add_argument(
        "--incremental", action="store_true",
        help="start from the full assignment of members-1 members and add one member",
    )
    parser.add_argument("--racks", type=int, default=0, help="number of racks (0: no racks)")
    parser.add_argument(
        "--members-per-process", type=int, default=2,
        help="streams-sticky: threads per Streams process (members share a process id)",
    )
    parser.add_argument(
        "--standby-replicas", type=int, default=0,
        help="streams-sticky: num.standby.replicas (every second subtopology is stateful)",
    )
    parser.add_argument(
        "--remove", action="store_true",
        help="streams-sticky with --incremental: start from the target of all members and "
        "remove the last one instead of adding one",
    )
    parser.add_argument(
        "--json", action="store_true",
        help="print JSON (the only output format; accepted for symmetry with other benches)",
    )
    parser.add_argument("--runs", type=int, default=RUNS, help=argparse.SUPPRESS)
    parser.add_argument(
        "--java", action="store_true",
        help="uniform/range: also time Kafka's Java assignor on the same input, in the same "
        "run (built with javac from apache/kafka's sources; assignors/java_reference.py)",
    )
    parser.add_argument(
        "--kafka-source", default=None,
        help="with --java: apache/kafka's sources (a checkout or a bare git repository; "
        "default $KAFKA_SOURCE, else a sparse clone into ~/.cache/coordinator-bench)",
    )
    parser.add_argument(
        "--all", action="store_true", help="run the whole target table, one JSON line per case"
    )


def _samples(assign: Callable[[], object], runs: int) -> list[float]:
    """Warm up, then time ``runs`` calls of ``assign``; ms each."""
    started = time.perf_counter()
    warmups = 0
    while warmups < WARMUP_RUNS or time.perf_counter() - started < WARMUP_SECONDS:
        assign()
        warmups += 1
        if warmups >= 1000:
            break
    gc.collect()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        assign()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return samples


def time_case(case: BenchCase, runs: int = RUNS, java: bool = False,
              kafka_source: str | None = None) -> dict[str, object]:
    """Build the case, warm up, time ``runs`` assignments; min / median / max in ms. With
    ``java`` (uniform and range), Kafka's Java assignor on the same input afterwards
    (:mod:`assignors.java_reference`): ``java_median_ms``, ``ratio_to_java``."""
    if case.assignor == STREAMS_STICKY:
        task_assignor = StickyTaskAssignor()
        task_spec = build_task_spec(case, task_assignor)
        samples = _samples(lambda: task_assignor.assign(task_spec), runs)
        extra = _streams_details(case, task_spec, task_assignor.assign(task_spec))
    else:
        assignor = get_assignor(case.assignor)
        spec = build_spec(case, assignor)
        samples = _samples(lambda: assignor.assign(spec), runs)
        extra = {}
        if java:
            extra = _java(spec, case.assignor, runs, kafka_source, statistics.median(samples))
        if case.topics_per_member is not None:
            extra["window"] = case.topics_per_member
            if case.subscriptions == "overlapping":
                extra["stride"] = case.stride
    return {
        "assignor": case.assignor,
        "members": case.members,
        "topics": case.topics,
        "partitions_per_topic": case.partitions_per_topic,
        "partitions": case.topics * case.partitions_per_topic,
        "subscriptions": case.subscriptions,
        "incremental": case.incremental,
        "racks": case.racks,
        "runs": runs,
        "min_ms": round(min(samples), 3),
        "median_ms": round(statistics.median(samples), 3),
        "max_ms": round(max(samples), 3),
        **extra,
    }


def _java(spec: AssignmentSpec, assignor: str, runs: int, kafka_source: str | None,
          median_ms: float) -> dict[str, object]:
    if assignor not in ("uniform", "range"):
        raise ValueError("--java times Kafka's uniform and range assignors")
    from assignors.java_reference import time_java

    result = time_java(spec, assignor, runs, kafka_source)
    return {"java_min_ms": round(result["min_ms"], 3),
            "java_median_ms": round(result["median_ms"], 3),
            "ratio_to_java": round(median_ms / result["median_ms"], 3),
            "java_assigned_partitions": result["assigned_partitions"],
            "kafka_revision": result["kafka_revision"], "input_sha256": result["input_sha256"]}


def _streams_details(
    case: BenchCase, spec: TaskAssignmentSpec, result: TaskAssignment
) -> dict[str, object]:
    """The streams-specific keys: the shape of the timed spec and of its result."""
    active_counts = []
    standby_tasks = 0
    moved = 0
    for member in spec.members:
        target = result.member(member.member_id)
        active_counts.append(sum(len(p) for p in target.active.values()))
        standby_tasks += sum(len(p) for p in target.standby.values())
        moved += sum(len(p - member.active.get(s, frozenset()))
                     for s, p in target.active.items())
    change = ("remove" if case.remove else "add") if case.incremental else None
    return {
        "members_per_process": case.members_per_process,
        "members_assigned": len(spec.members),
        "processes": len({m.process_id for m in spec.members}),
        "subtopologies": len(spec.subtopologies),
        "stateful_subtopologies": sum(1 for s in spec.subtopologies if s.stateful),
        "tasks": sum(s.num_tasks for s in spec.subtopologies),
        "standby_replicas": case.standby_replicas,
        "standby_tasks": standby_tasks,
        "change": change,
        "moved_active_tasks": moved if case.incremental else None,
        "min_active_per_member": min(active_counts, default=0),
        "max_active_per_member": max(active_counts, default=0),
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    """Time the case described by ``args`` (see :func:`add_arguments`)."""
    case = BenchCase(
        assignor=args.assignor,
        members=args.members,
        topics=args.topics,
        partitions_per_topic=args.partitions_per_topic,
        subscriptions=args.subscriptions,
        incremental=args.incremental,
        racks=args.racks,
        members_per_process=args.members_per_process,
        standby_replicas=args.standby_replicas,
        remove=args.remove,
        window=getattr(args, "window", None),
        stride=getattr(args, "stride", DEFAULT_STRIDE),
    )
    if case.assignor != STREAMS_STICKY and (case.remove or case.standby_replicas):
        raise ValueError("--remove and --standby-replicas are streams-sticky options")
    if case.topics_per_member is None and (
        case.window is not None or case.stride != DEFAULT_STRIDE
    ):
        raise ValueError("--window and --stride go with --subscriptions overlapping/random")
    return time_case(case, getattr(args, "runs", RUNS), getattr(args, "java", False),
                     getattr(args, "kafka_source", None))


def run_all(runs: int = RUNS, extra: Mapping[str, object] | None = None
            ) -> list[dict[str, object]]:
    """Time every case of :data:`TARGETS`, printing one JSON line each as it finishes (with
    the keys of ``extra`` too, such as the CLI's ``machine_ns_per_op``)."""
    results = []
    for case, kafka_ms in TARGETS:
        result = time_case(case, runs)
        result["kafka_median_ms"] = kafka_ms
        result.update(extra or {})
        print(json.dumps(result), flush=True)
        results.append(result)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assignors.bench", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.all:
        run_all(args.runs)
    else:
        print(json.dumps(run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
