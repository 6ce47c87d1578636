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
from itertools import pairwise
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from pipeline.job import JobOptions, JobResult, run
from tests.harness import ServerProcess
from tests.pipeline import scenario

# every test here runs on the Spark session (its start and this module's jobs take most of a
# minute): make test-fast skips the module
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOPICS = ("orders", "events", "jobs", "clicks")
STREAMS_STEPS: list[tuple[int, int]] = []
"""(group epoch, members) of each step of the streams group, once Stable (StreamsGroupDescribe)."""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    log_dir = tmp_path_factory.mktemp("scenario") / "data"
    server = ServerProcess(log_dir, scenario.OVERRIDES).start()
    try:
        for topic in TOPICS:
            scenario.create_topic(server.bootstrap, topic)
        scenario.classic_group(server.bootstrap, "orders")
        scenario.consumer_group(server.bootstrap, "events")
        scenario.share_group(server.bootstrap, "jobs")
        STREAMS_STEPS[:] = scenario.streams_group(server.bootstrap, "clicks")
        scenario.plain_commits(server.bootstrap, "orders")
    finally:
        server.stop()
        server.kill()
    yield log_dir


@pytest.fixture(scope="module")
def streams_steps(store: Path) -> list[tuple[int, int]]:
    return STREAMS_STEPS


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


def _moved(before: dict[Any, Any] | None, after: dict[Any, Any]) -> int:
    if before is None:
        return 0
    return len([tp for tp in after if tp in before and before[tp] != after[tp]])


def _tasks(tasks: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(t["SubtopologyId"], p) for t in tasks for p in t["Partitions"]]


def expected_runs(dumped: list[dict[str, Any]]) -> dict[str, list[tuple[int, int, int]]]:
    """Per group: (epoch, members, partitions moved) of every assignment run, in log order. A
    share group's partition may have several owners: it moved if its set of owners changed. A
    streams group's "partitions" are its active tasks (subtopology id, partition)."""
    runs: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    previous: dict[str, dict[Any, Any] | None] = defaultdict(lambda: None)
    targets: dict[str, dict[str, list[Any]]] = defaultdict(dict)
    for r in sorted(dumped, key=lambda r: (r["partition"], r["offset"])):
        kind, key, value = r["type"], r["key"], r["value"]
        if kind == "GroupMetadata" and value is not None:
            owners = _classic_owners(value["members"])
            runs[key["group"]].append((value["generation"], len(value["members"]),
                                       _moved(previous[key["group"]], owners)))
            previous[key["group"]] = owners
        elif kind in ("ConsumerGroupTargetAssignmentMember", "ShareGroupTargetAssignmentMember"):
            if value is None:
                targets[key["GroupId"]].pop(key["MemberId"], None)
            else:
                targets[key["GroupId"]][key["MemberId"]] = [
                    (t["TopicId"], p) for t in value["TopicPartitions"] for p in t["Partitions"]]
        elif kind == "StreamsGroupTargetAssignmentMember":
            if value is None:
                targets[key["GroupId"]].pop(key["MemberId"], None)
            else:
                targets[key["GroupId"]][key["MemberId"]] = _tasks(value["ActiveTasks"])
        elif kind in ("ConsumerGroupTargetAssignmentMetadata", "ShareGroupTargetAssignmentMetadata",
                      "StreamsGroupTargetAssignmentMetadata") and value is not None:
            gid = key["GroupId"]
            sets: dict[Any, set[str]] = defaultdict(set)
            for m, tps in targets[gid].items():
                for tp in tps:
                    sets[tp].add(m)
            runs[gid].append((value["AssignmentEpoch"], len(targets[gid]),
                              _moved(previous[gid], sets)))
            previous[gid] = dict(sets)
    return dict(runs)


def records_of(dumped: list[dict[str, Any]], kind: str, group: str) -> list[dict[str, Any]]:
    """One group's records of one type, in log order."""
    return sorted((r for r in dumped if r["type"] == kind and r["key"]["GroupId"] == group),
                  key=lambda r: (r["partition"], r["offset"]))


def share_records(dumped: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The scenario's share group's records of one type, in log order."""
    return records_of(dumped, kind, scenario.SHARE_GROUP)


def streams_records(dumped: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The scenario's streams group's records of one type, in log order."""
    return records_of(dumped, kind, scenario.STREAMS_GROUP)


# --- the checks ------------------------------------------------------------------------------

def test_every_record_is_read(job: tuple[JobResult, Path], dumped: list[dict[str, Any]]) -> None:
    # TopicMetadata records in __cluster_metadata-0: the scenario's, the streams group's
    # internal topics (the coordinator created them) and Kafka's internal topics that its
    # groups used first (__consumer_offsets: a group's FindCoordinator; __share_group_state:
    # the share group's first heartbeat)
    kafka_internal = ("__consumer_offsets", "__share_group_state")
    topics = len(TOPICS) + len(scenario.STREAMS_INTERNAL_TOPICS) + len(kafka_internal)
    assert job[0].records == len(dumped) + topics
    # the share group consumed: share-partition state records are read too
    types = {r["type"] for r in dumped}
    assert {"ShareSnapshot", "ShareUpdate"} <= types
    assert {"StreamsGroupTopology", "StreamsGroupTargetAssignmentMember"} <= types


def test_assignment_runs_match_the_dump(job: tuple[JobResult, Path],
                                        dumped: list[dict[str, Any]]) -> None:
    expected = expected_runs(dumped)
    assert set(expected) == {scenario.CLASSIC_GROUP, scenario.CONSUMER_GROUP,
                             scenario.SHARE_GROUP, scenario.STREAMS_GROUP}
    runs = table(job, "assignment_runs").sort_values(["group_id", "partition", "offset"])
    got = {gid: [(int(r["epoch"]), int(r["members"]), int(r["partitions_moved"]))
                 for r in g.to_dict("records")] for gid, g in runs.groupby("group_id")}
    assert got == expected
    # the scenario's own shape: 3 classic members then one leaves; the consumer, share and
    # streams groups 1..3..1 (the share group's last leave writes an empty target)
    classic = expected[scenario.CLASSIC_GROUP]
    assert max(m for _, m, _ in classic) == 3
    for group in (scenario.CONSUMER_GROUP, scenario.SHARE_GROUP, scenario.STREAMS_GROUP):
        assert max(m for _, m, _ in expected[group]) == 3, group
        assert sum(moved for _, _, moved in expected[group]) > 0, group
    assert expected[scenario.SHARE_GROUP][-1][1] == 0
    types = runs.groupby("group_id")["group_type"].unique().map(list).to_dict()
    assert types == {scenario.CLASSIC_GROUP: ["classic"], scenario.CONSUMER_GROUP: ["consumer"],
                     scenario.SHARE_GROUP: ["share"], scenario.STREAMS_GROUP: ["streams"]}
    # standby tasks: streams groups only
    others = runs[runs.group_id != scenario.STREAMS_GROUP]
    assert others.standby_tasks.isna().all() and others.standby_tasks_moved.isna().all()


def test_share_runs_have_the_target_epoch_and_timestamp(job: tuple[JobResult, Path],
                                                        dumped: list[dict[str, Any]]) -> None:
    targets = share_records(dumped, "ShareGroupTargetAssignmentMetadata")
    runs = table(job, "assignment_runs")
    runs = runs[runs.group_id == scenario.SHARE_GROUP].sort_values(["partition", "offset"])
    assert list(runs.offset) == [r["offset"] for r in targets]
    assert list(runs.epoch) == [r["value"]["AssignmentEpoch"] for r in targets]
    # the run finished at the record's Timestamp; 0 (no assignor ran: the group emptied) falls
    # back to the record's own time
    assert list(runs.timestamp) == [r["value"]["Timestamp"] or r["timestamp"] for r in targets]
    assert list(runs.record_timestamp) == [r["timestamp"] for r in targets]
    assert targets[-1]["value"]["Timestamp"] == 0
    bumps = {r["value"]["Epoch"]: r["timestamp"]
             for r in share_records(dumped, "ShareGroupMetadata")}
    assert list(runs.epoch_bump_ms) == [bumps[e] for e in runs.epoch]
    finished = runs.timestamp.tolist()
    gaps = [None, *(b - a for a, b in pairwise(finished))]
    assert [None if pd.isna(v) else int(v) for v in runs.since_previous_ms] == gaps


def test_streams_runs(job: tuple[JobResult, Path], dumped: list[dict[str, Any]]) -> None:
    """A streams group's runs: the target's epoch and Timestamp (the assignment interval apart),
    its active tasks in ``partitions``, and its standby tasks counted on their own (a task's
    standby owners changed: moved)."""
    runs = table(job, "assignment_runs")
    runs = runs[runs.group_id == scenario.STREAMS_GROUP].sort_values(["partition", "offset"])
    targets = streams_records(dumped, "StreamsGroupTargetAssignmentMetadata")
    assert list(runs.offset) == [r["offset"] for r in targets]
    assert list(runs.epoch) == [r["value"]["AssignmentEpoch"] for r in targets]
    assert list(runs.timestamp) == [r["value"]["Timestamp"] for r in targets]
    assert list(runs.record_timestamp) == [r["timestamp"] for r in targets]
    bumps = {r["value"]["Epoch"]: r["timestamp"]
             for r in streams_records(dumped, "StreamsGroupMetadata") if r["value"]}
    assert list(runs.epoch_bump_ms) == [bumps[e] for e in runs.epoch]
    gaps = [int(v) for v in runs.since_previous_ms.iloc[1:]]
    assert pd.isna(runs.since_previous_ms.iloc[0])
    assert gaps == [b - a for a, b in pairwise(runs.timestamp)]
    assert min(gaps) >= scenario.STREAMS_INTERVAL_MS  # group.streams.assignment.interval.ms
    # recomputed from the dump: tasks with an active owner, and with standby owners
    active: dict[str, list[tuple[str, int]]] = {}
    standby: dict[str, list[tuple[str, int]]] = {}
    expected: list[tuple[int, int, int]] = []
    previous: dict[Any, set[str]] | None = None
    for r in sorted((r for r in dumped if r["type"].startswith("StreamsGroupTarget")
                     and r["key"]["GroupId"] == scenario.STREAMS_GROUP),
                    key=lambda r: (r["partition"], r["offset"])):
        if r["type"] == "StreamsGroupTargetAssignmentMember":
            member = r["key"]["MemberId"]
            active[member] = [] if r["value"] is None else _tasks(r["value"]["ActiveTasks"])
            standby[member] = [] if r["value"] is None else _tasks(r["value"]["StandbyTasks"])
        elif r["value"] is not None:
            owners: dict[Any, set[str]] = defaultdict(set)
            for member, tasks in standby.items():
                for task in tasks:
                    owners[task].add(member)
            assigned = {t for ts in active.values() for t in ts}
            expected.append((len(assigned), len(owners), _moved(previous, dict(owners))))
            previous = dict(owners)
    got = [(int(r["partitions"]), int(r["standby_tasks"]), int(r["standby_tasks_moved"]))
           for r in runs.to_dict("records")]
    assert got == expected
    # the scenario: 12 tasks once the internal topics exist, 6 standbys with 2+ processes
    assert max(p for p, _, _ in got) == scenario.STREAMS_TASKS
    assert max(s for _, s, _ in got) == scenario.STREAMS_STANDBY
    assert sum(m for _, _, m in got) > 0


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


def test_share_rebalances_and_summary(job: tuple[JobResult, Path],
                                      dumped: list[dict[str, Any]]) -> None:
    epochs = [r["value"]["Epoch"] for r in share_records(dumped, "ShareGroupMetadata")]
    rebalances = table(job, "rebalances")
    share = rebalances[rebalances.group_id == scenario.SHARE_GROUP]
    assert set(share.group_type) == {"share"}
    assert sorted(share.epoch) == sorted(set(epochs))
    # each scaling step settled (every member at the new target) before the next one
    done = share[share.status == "completed"]
    assert len(done) == len(epochs) - 1
    assert (done.duration_ms >= 0).all()
    assert (done.completed_ms >= done.target_ms).all()
    assert share.sort_values("epoch").status.iloc[-1] == "empty"  # the last member left
    summary = table(job, "group_summary").set_index("group_id")
    row = summary.loc[scenario.SHARE_GROUP]
    assert row["group_type"] == "share" and row["state"] == "empty"
    assert row["members_now"] == 0 and row["epoch_now"] == max(epochs)
    assert row["runs"] == len(share_records(dumped, "ShareGroupTargetAssignmentMetadata"))
    assert row["rebalances"] == len(set(epochs))
    assert row["rebalances_completed"] == len(done)
    assert pd.isna(row["offsets"])  # share groups commit no offsets


def test_streams_rebalances_and_summary(job: tuple[JobResult, Path],
                                        dumped: list[dict[str, Any]],
                                        streams_steps: list[tuple[int, int]]) -> None:
    """Every epoch the group was Stable at (StreamsGroupDescribe) is a completed rebalance;
    the last member's leave (an epoch bump and no target) is ``empty``."""
    epochs = [r["value"]["Epoch"] for r in streams_records(dumped, "StreamsGroupMetadata")]
    rebalances = table(job, "rebalances")
    streams = rebalances[rebalances.group_id == scenario.STREAMS_GROUP].sort_values("epoch")
    assert set(streams.group_type) == {"streams"}
    assert list(streams.epoch) == sorted(set(epochs))
    assert [members for _, members in streams_steps] == [1, 2, 3, 2, 1]
    done = streams[streams.status == "completed"]
    assert {epoch for epoch, _ in streams_steps} <= set(done.epoch)
    by_epoch = streams.set_index("epoch")
    for epoch, members in streams_steps:
        assert by_epoch.loc[epoch, "members"] == members, epoch
    assert (done.duration_ms >= 0).all()
    assert (done.completed_ms >= done.target_ms).all()
    assert (done.target_ms >= done.started_ms).all()
    assert set(streams.status) <= {"completed", "superseded", "empty"}
    assert streams.status.iloc[-1] == "empty" and streams.epoch.iloc[-1] == max(epochs)
    summary = table(job, "group_summary").set_index("group_id")
    row = summary.loc[scenario.STREAMS_GROUP]
    assert row["group_type"] == "streams" and row["state"] == "empty"
    assert row["members_now"] == 0 and row["epoch_now"] == max(epochs)
    runs = table(job, "assignment_runs")
    runs = runs[runs.group_id == scenario.STREAMS_GROUP]
    assert row["runs"] == len(streams_records(dumped, "StreamsGroupTargetAssignmentMetadata"))
    assert row["partitions_moved"] == runs.partitions_moved.sum()
    assert row["standby_tasks_moved"] == runs.standby_tasks_moved.sum() > 0
    assert row["last_run_epoch"] == runs.epoch.max()
    assert row["rebalances"] == len(set(epochs))
    assert row["rebalances_completed"] == len(done)
    assert pd.isna(row["offsets"])  # the scenario's streams members commit no offsets
    assert summary.drop(index=scenario.STREAMS_GROUP).standby_tasks_moved.isna().all()


def test_member_timeline(job: tuple[JobResult, Path], dumped: list[dict[str, Any]]) -> None:
    timeline = table(job, "member_timeline")
    for group in (scenario.CLASSIC_GROUP, scenario.CONSUMER_GROUP, scenario.SHARE_GROUP,
                  scenario.STREAMS_GROUP):
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
    assert set(consumer.group_type) == {"consumer"}


@pytest.mark.parametrize(("prefix", "group"), [("ShareGroup", scenario.SHARE_GROUP),
                                               ("StreamsGroup", scenario.STREAMS_GROUP)])
def test_share_and_streams_member_timeline(job: tuple[JobResult, Path],
                                           dumped: list[dict[str, Any]], prefix: str,
                                           group: str) -> None:
    """Joins and leaves are the member metadata records and their tombstones; an epoch event
    is each change of a member's epoch in its current assignment records."""
    expected: list[tuple[str, str, int | None, int]] = []
    last: dict[str, int] = {}
    for r in sorted((r for r in dumped if r["type"].startswith(prefix)
                     and r["key"]["GroupId"] == group),
                    key=lambda r: (r["partition"], r["offset"])):
        member = r["key"].get("MemberId")
        if r["type"] == f"{prefix}MemberMetadata":
            if r["value"] is None:
                expected.append((member, "left", None, r["offset"]))
                last.pop(member, None)
            elif member not in last:
                expected.append((member, "joined", None, r["offset"]))
                last[member] = -1
        elif r["type"] == f"{prefix}CurrentMemberAssignment" and r["value"] is not None:
            epoch = r["value"]["MemberEpoch"]
            if last.get(member) != epoch:
                expected.append((member, "epoch", epoch, r["offset"]))
                last[member] = epoch
    timeline = table(job, "member_timeline")
    mine = timeline[timeline.group_id == group].sort_values(["offset", "event"])
    assert set(mine.group_type) == {prefix.removesuffix("Group").lower()}
    got = [(r["member_id"], r["event"], None if pd.isna(r["epoch"]) else int(r["epoch"]),
            int(r["offset"])) for r in mine.to_dict("records")]
    assert sorted(got, key=lambda e: (e[3], e[1])) == sorted(expected,
                                                             key=lambda e: (e[3], e[1]))
    assert len({m for m, event, _, _ in got if event == "joined"}) == 3
    assert sum(1 for _, event, _, _ in got if event == "epoch") >= 6


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
    assert scenario.SHARE_GROUP in report and scenario.STREAMS_GROUP in report
    assert "(1 consumer, 1 share, 1 streams, 1 classic, 1 none)" in report  # groups by type
