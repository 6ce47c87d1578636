"""A real scenario end to end: real clients against the real server, server stopped, the
pipeline run over its store, and the tables checked against ``python -m coordinator log dump``
(recomputed here independently of the pipeline's own code)."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from pipeline.job import JobOptions, JobResult, run
from tests.harness import ServerProcess
from tests.pipeline import scenario

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    log_dir = tmp_path_factory.mktemp("scenario") / "data"
    server = ServerProcess(log_dir, scenario.OVERRIDES).start()
    try:
        scenario.create_topic(server.bootstrap, "orders")
        scenario.create_topic(server.bootstrap, "events")
        scenario.classic_group(server.bootstrap, "orders")
        scenario.consumer_group(server.bootstrap, "events")
        scenario.plain_commits(server.bootstrap, "orders")
    finally:
        server.stop()
        server.kill()
    yield log_dir


@pytest.fixture(scope="module")
def job(spark: SparkSession, store: Path, tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[JobResult, Path]:
    out = tmp_path_factory.mktemp("pipeline-out")
    return run(spark, JobOptions([str(store)], out, quiet=True)), out


@pytest.fixture(scope="module")
def dumped(store: Path) -> list[dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", "--log-dirs",
                           str(store)], cwd=ROOT, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def table(job: tuple[JobResult, Path], name: str) -> pd.DataFrame:
    return pd.read_parquet(job[1] / name)


# --- independent recomputation from the dump -------------------------------------------------

def _classic_owners(members: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    owners = {}
    for m in members:
        data = base64.b64decode(m["assignment"])
        (topics,) = struct.unpack_from(">i", data, 2)
        pos = 6
        for _ in range(topics):
            (n,) = struct.unpack_from(">h", data, pos)
            topic = data[pos + 2: pos + 2 + n].decode()
            pos += 2 + n
            (count,) = struct.unpack_from(">i", data, pos)
            for p in struct.unpack_from(f">{count}i", data, pos + 4):
                owners[(topic, p)] = m["memberId"]
            pos += 4 + 4 * count
    return owners


def _moved(before: dict[Any, str] | None, after: dict[Any, str]) -> int:
    if before is None:
        return 0
    return len([tp for tp in after if tp in before and before[tp] != after[tp]])


def expected_runs(dumped: list[dict[str, Any]]) -> dict[str, list[tuple[int, int, int]]]:
    """Per group: (epoch, members, partitions moved) of every assignment run, in log order."""
    runs: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    previous: dict[str, dict[Any, str] | None] = defaultdict(lambda: None)
    targets: dict[str, dict[str, list[Any]]] = defaultdict(dict)
    for r in sorted(dumped, key=lambda r: (r["partition"], r["offset"])):
        kind, key, value = r["type"], r["key"], r["value"]
        if kind == "GroupMetadata" and value is not None:
            owners = _classic_owners(value["members"])
            runs[key["group"]].append((value["generation"], len(value["members"]),
                                       _moved(previous[key["group"]], owners)))
            previous[key["group"]] = owners
        elif kind == "ConsumerGroupTargetAssignmentMember":
            if value is None:
                targets[key["GroupId"]].pop(key["MemberId"], None)
            else:
                targets[key["GroupId"]][key["MemberId"]] = [
                    (t["TopicId"], p) for t in value["TopicPartitions"] for p in t["Partitions"]]
        elif kind == "ConsumerGroupTargetAssignmentMetadata" and value is not None:
            gid = key["GroupId"]
            owners = {tp: m for m, tps in targets[gid].items() for tp in tps}
            runs[gid].append((value["AssignmentEpoch"], len(targets[gid]),
                              _moved(previous[gid], owners)))
            previous[gid] = owners
    return dict(runs)


# --- the checks ------------------------------------------------------------------------------

def test_every_record_is_read(job: tuple[JobResult, Path], dumped: list[dict[str, Any]]) -> None:
    topics = 2  # TopicMetadata records in __cluster_metadata-0
    assert job[0].records == len(dumped) + topics


def test_assignment_runs_match_the_dump(job: tuple[JobResult, Path],
                                        dumped: list[dict[str, Any]]) -> None:
    expected = expected_runs(dumped)
    assert set(expected) == {scenario.CLASSIC_GROUP, scenario.CONSUMER_GROUP}
    runs = table(job, "assignment_runs").sort_values(["group_id", "partition", "offset"])
    got = {gid: [(int(r["epoch"]), int(r["members"]), int(r["partitions_moved"]))
                 for r in g.to_dict("records")] for gid, g in runs.groupby("group_id")}
    assert got == expected
    # the scenario's own shape: 3 classic members then one leaves; the consumer group 1..3..1
    classic = expected[scenario.CLASSIC_GROUP]
    assert max(m for _, m, _ in classic) == 3
    assert max(m for _, m, _ in expected[scenario.CONSUMER_GROUP]) == 3
    assert sum(moved for _, _, moved in expected[scenario.CONSUMER_GROUP]) > 0


def test_epochs_and_group_records(job: tuple[JobResult, Path],
                                  dumped: list[dict[str, Any]]) -> None:
    generations = [r["value"]["generation"] for r in dumped
                   if r["type"] == "GroupMetadata" and r["value"] is not None]
    epochs = [r["value"]["Epoch"] for r in dumped
              if r["type"] == "ConsumerGroupMetadata" and r["value"] is not None]
    rebalances = table(job, "rebalances")
    classic = rebalances[rebalances.group_id == scenario.CLASSIC_GROUP]
    assert sorted(classic.epoch) == sorted(generations)
    consumer = rebalances[rebalances.group_id == scenario.CONSUMER_GROUP]
    assert sorted(consumer.epoch) == sorted(set(epochs))
    done = consumer[consumer.status == "completed"]
    assert len(done) >= 3
    assert (done.duration_ms >= 0).all()
    assert (done.completed_ms >= done.target_ms).all()
    summary = table(job, "group_summary").set_index("group_id")
    assert summary.loc[scenario.CONSUMER_GROUP, "runs"] == len(
        [r for r in dumped if r["type"] == "ConsumerGroupTargetAssignmentMetadata"])
    assert summary.loc[scenario.CLASSIC_GROUP, "runs"] == len(generations)
    assert summary["p99_rebalance_ms"][scenario.CONSUMER_GROUP] >= 0


def test_member_timeline(job: tuple[JobResult, Path], dumped: list[dict[str, Any]]) -> None:
    timeline = table(job, "member_timeline")
    for group in (scenario.CLASSIC_GROUP, scenario.CONSUMER_GROUP):
        events = timeline[timeline.group_id == group]
        joined = set(events[events.event == "joined"].member_id)
        left = set(events[events.event == "left"].member_id)
        assert len(joined) == 3, group
        assert left == joined, group  # everyone left in the end
        for member in joined:
            mine = events[events.member_id == member].sort_values("offset")
            assert mine.event.iloc[0] == "joined" and mine.event.iloc[-1] == "left"
    members = {r["key"]["MemberId"] for r in dumped if r["type"] == "ConsumerGroupMemberMetadata"}
    consumer = timeline[timeline.group_id == scenario.CONSUMER_GROUP]
    assert set(consumer.member_id) == members


def test_offset_commits_and_expiration(job: tuple[JobResult, Path],
                                       dumped: list[dict[str, Any]]) -> None:
    counts: dict[tuple[str, str, int], int] = defaultdict(int)
    last: dict[tuple[str, str, int], int] = {}
    for r in dumped:
        if r["type"] == "OffsetCommit" and r["value"] is not None:
            k = (r["key"]["group"], r["key"]["topic"], r["key"]["partition"])
            counts[k] += 1
            last[k] = r["value"]["offset"]
    commits = table(job, "offset_commits")
    got = {(r["group_id"], r["topic"], int(r["topic_partition"])):
           (int(r["commits"]), int(r["last_offset"]))
           for r in commits.to_dict("records")}
    assert got == {k: (counts[k], last[k]) for k in counts}
    assert {k[0] for k in counts} == {scenario.CLASSIC_GROUP, scenario.CONSUMER_GROUP,
                                      scenario.COMMIT_GROUP}
    assert all(counts[(scenario.COMMIT_GROUP, "orders", p)] == 3 for p in range(6))
    expiration = table(job, "offset_expiration")
    plain = expiration[expiration.group_id == scenario.COMMIT_GROUP]
    assert set(plain.rule) == {"no-group"}
    assert (plain.expires_at_ms == plain.last_commit_ms + 10080 * 60_000).all()
    classic = expiration[expiration.group_id == scenario.CLASSIC_GROUP]
    assert set(classic.rule) == {"group-empty"}  # every member left: KIP-211's clock runs


def test_report_and_pngs(job: tuple[JobResult, Path]) -> None:
    out = job[1]
    report = (out / "report.html").read_text()
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == 4
    for png in pngs:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", png
        width, height = struct.unpack(">II", data[16:24])
        assert data[12:16] == b"IHDR" and width >= 400 and height >= 300, png
        assert len(data) > 10_000, png
        assert data.rstrip(b"\x00").endswith(b"IEND\xaeB`\x82"), png
        assert f"src='{png.name}'" in report
    assert scenario.CONSUMER_GROUP in report and scenario.CLASSIC_GROUP in report
