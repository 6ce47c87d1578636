"""``bench assignor --assignor streams-sticky``: the streams task assignor's benchmark at a tiny
size, its JSON keys next to a consumer group assignor's, and its input builder."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from assignors import StickyTaskAssignor, bench
from assignors.bench_input import STREAMS_STICKY, BenchCase, build_task_spec

UNIFORM_KEYS = {
    "assignor", "members", "topics", "partitions_per_topic", "partitions", "subscriptions",
    "incremental", "racks", "runs", "min_ms", "median_ms", "max_ms",
}
STREAMS_KEYS = {
    "members_per_process", "members_assigned", "processes", "subtopologies",
    "stateful_subtopologies", "tasks", "standby_replicas", "standby_tasks", "change",
    "moved_active_tasks", "min_active_per_member", "max_active_per_member",
}
TINY = ["--members", "12", "--topics", "6", "--partitions-per-topic", "5", "--runs", "3"]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    return parser.parse_args(argv)


def test_uniform_keys_are_what_we_think() -> None:
    result = bench.run(parse(["--assignor", "uniform", *TINY]))
    assert set(result) == UNIFORM_KEYS


@pytest.mark.parametrize("replicas", [0, 1])
@pytest.mark.parametrize("change", [None, "add", "remove"])
def test_streams_bench_small(replicas: int, change: str | None) -> None:
    argv = ["--assignor", STREAMS_STICKY, *TINY, "--standby-replicas", str(replicas)]
    if change:
        argv.append("--incremental")
    if change == "remove":
        argv.append("--remove")
    result = bench.run(parse(argv))
    assert set(result) == UNIFORM_KEYS | STREAMS_KEYS
    assert result["assignor"] == STREAMS_STICKY
    assert result["members"] == 12
    assert result["partitions"] == result["tasks"] == 30
    assert result["incremental"] is (change is not None)
    assert result["change"] == change
    assert result["members_per_process"] == 2
    assert result["subtopologies"] == 6 and result["stateful_subtopologies"] == 3
    assert result["members_assigned"] == (11 if change == "remove" else 12)
    # "add": 5 processes of 2 threads from scratch, then newMember on its own process
    assert result["processes"] == (7 if change == "add" else 6)
    assert result["standby_tasks"] == 15 * replicas
    assert (result["moved_active_tasks"] is None) is (change is None)
    min_ms, median_ms, max_ms = result["min_ms"], result["median_ms"], result["max_ms"]
    assert isinstance(min_ms, float) and isinstance(median_ms, float)
    assert isinstance(max_ms, float)
    assert 0 <= min_ms <= median_ms <= max_ms


def test_streams_options_are_streams_only() -> None:
    with pytest.raises(ValueError, match="streams-sticky"):
        bench.run(parse(["--assignor", "uniform", *TINY, "--standby-replicas", "1"]))
    with pytest.raises(ValueError, match="incremental"):
        bench.run(parse(["--assignor", STREAMS_STICKY, *TINY, "--remove"]))


def test_task_spec_like_kafkas_jmh() -> None:
    spec = build_task_spec(BenchCase(STREAMS_STICKY, 5, 4, 3, members_per_process=2,
                                     standby_replicas=1))
    assert [(m.member_id, m.process_id) for m in spec.members] == [
        ("member-0", "process-0"), ("member-1", "process-0"), ("member-2", "process-1"),
        ("member-3", "process-1"), ("member-4", "process-2")]
    assert [(s.subtopology_id, s.num_tasks, s.stateful) for s in spec.subtopologies] == [
        ("topic-0_subtopology", 3, True), ("topic-1_subtopology", 3, False),
        ("topic-2_subtopology", 3, True), ("topic-3_subtopology", 3, False)]
    assert spec.num_standby_replicas == 1
    added = build_task_spec(BenchCase(STREAMS_STICKY, 5, 4, 3, incremental=True))
    assert added.members[-1].process_id == "process-newMember"
    assert [m.member_id for m in added.members[:-1]] == [f"member-{i}" for i in range(4)]
    first = StickyTaskAssignor().assign(
        build_task_spec(BenchCase(STREAMS_STICKY, 4, 4, 3)))
    for m in added.members[:-1]:
        assert m.active == first.member(m.member_id).active
    removed = build_task_spec(BenchCase(STREAMS_STICKY, 5, 4, 3, incremental=True, remove=True))
    assert [m.member_id for m in removed.members] == [f"member-{i}" for i in range(4)]
    full = StickyTaskAssignor().assign(build_task_spec(BenchCase(STREAMS_STICKY, 5, 4, 3)))
    for m in removed.members:  # the previous target of all five, without member-4
        assert m.active == full.member(m.member_id).active


def test_cli_prints_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "coordinator", "bench", "assignor", "--assignor", STREAMS_STICKY,
         *TINY, "--standby-replicas", "1", "--incremental", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    result = json.loads(out)
    # the CLI adds the machine's speed (storage.machine) to the bench's own keys
    assert set(result) == UNIFORM_KEYS | STREAMS_KEYS | {"machine_ns_per_op"}
    assert result["machine_ns_per_op"] > 0
    assert result["change"] == "add"
