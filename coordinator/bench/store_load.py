"""``python -m coordinator bench load``: start-to-serving time of a server whose store holds
millions of records, with and without snapshots.

The store is written with the storage API (not through clients): offset commits of 1,000 groups,
20 on each coordinator partition, each committing the 8 partitions of one of its 8 topics at a
time (one batch of 8 records), so 64,000 keys hold the latest offsets and every other record is
superseded, as in a store of long-running consumers. "With snapshots" snapshots every partition
at its log end (``storage.snapshot.take``), as a running server does every
``coordinator.log.max.record.bytes.between.snapshots``; a server would also have a tail of up
to that many bytes per partition to replay.

Timed: from starting ``python -m coordinator serve`` (a new process) until an OffsetFetch of one
group on every coordinator partition is answered without COORDINATOR_LOAD_IN_PROGRESS; each
answer is checked against the offsets written. The probe asks every 2 ms for the groups not
answered yet, as a client asks for its group until it is served (asking again for the served
groups' 64 offsets each would have the server spend a third of its time on the bench's
answers while it loads). The server's own load time (its ``coordinator partitions loaded``
log line) is reported beside it. The store is in the page cache (just written), as after a
quick restart, and so is the server's bytecode: the bench compiles the server's modules first
(``compileall``, as a pip install does and as Python does at a first start), so that it times
starts, not the compilation of ~250 modules that an environment with
``PYTHONDONTWRITEBYTECODE`` set would redo at every start (``PYTHONPYCACHEPREFIX`` set to an
empty directory measures that case: 0.2-0.3 s more).

The reference, in the same run: a raw sequential read of the same segment files, framing only
(``storage.bench.raw_read``: ``raw_read_s``, ``raw_read_bytes_per_s``,
``raw_read_records_per_s``), and ``start_to_serving_vs_raw_read``, the start-to-serving time
as a multiple of that read's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import struct
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import structlog.testing

import protocol
from coordinator.runtime.partitioner import partition_for
from coordinator.testing import ServerProcess
from coordinator.testing.connection import Connection
from coordinator.testing.server_process import compile_server
from protocol import ErrorCode
from storage import snapshot
from storage.bench import raw_read, segment_files
from storage.machine import with_machine
from storage.records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from storage.store import Store

PARTITIONS = 50
GROUPS_PER_PARTITION = 20
TOPICS = 8
TOPIC_PARTITIONS = 8
LOAD_IN_PROGRESS = int(ErrorCode.coordinator_load_in_progress)
_OFFSET = struct.Struct(">q")


def _groups() -> dict[int, list[str]]:
    """``GROUPS_PER_PARTITION`` group ids on each coordinator partition."""
    by_partition: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    n = 0
    while any(len(groups) < GROUPS_PER_PARTITION for groups in by_partition.values()):
        group = f"bench-load-{n}"
        n += 1
        groups = by_partition[partition_for(group, PARTITIONS)]
        if len(groups) < GROUPS_PER_PARTITION:
            groups.append(group)
    return by_partition


def build_store(log_dir: Path, records: int) -> dict[str, Any]:
    """Write ``records`` offset commits (see the module); returns what the check needs."""
    started = time.perf_counter()
    now = int(time.time() * 1000)  # fresh commits: none expires when the server starts
    by_partition = _groups()
    groups = [(p, g) for p, gs in by_partition.items() for g in gs]
    topic_ids = [uuid.UUID(int=t + 1) for t in range(TOPICS)]
    # key bytes per (group, topic, partition); value bytes from a template with the offset,
    # OffsetCommitValue's first field, put in place (encoding 5M values would take longer than
    # writing them)
    templates = [encode_value(OffsetCommitValue(offset=0, leader_epoch=3, metadata="",
                                                commit_timestamp=now, topic_id=topic_ids[t]))
                 or b"" for t in range(TOPICS)]
    keys = {(g, t): [encode_key(OffsetCommitKey(group=g, topic=f"orders-{t}", partition=p))
                     for p in range(TOPIC_PARTITIONS)]
            for _, g in groups for t in range(TOPICS)}
    latest: dict[tuple[str, int], int] = {}
    written = 0
    commit = 0
    with Store.open(log_dir, PARTITIONS) as store:
        while written < records:
            partition, group = groups[commit % len(groups)]
            topic = (commit // len(groups)) % TOPICS
            template = templates[topic]
            count = min(TOPIC_PARTITIONS, records - written)
            offset = _OFFSET.pack(commit)
            batch = [(key, template[:2] + offset + template[10:])
                     for key in keys[group, topic][:count]]
            store.partition(partition).append_batch(batch, now)
            latest[group, topic] = commit
            written += count
            commit += 1
        store.flush()
        size = store.size_bytes
    return {"records": records, "store_bytes": size, "keys": len(latest) * TOPIC_PARTITIONS,
            "build_s": round(time.perf_counter() - started, 1), "latest": latest,
            "probe": [gs[0] for _, gs in sorted(by_partition.items())]}


def take_snapshots(log_dir: Path) -> float:
    """Snapshot every partition at its log end; the seconds it took."""
    started = time.perf_counter()
    with Store.open(log_dir, PARTITIONS) as store, structlog.testing.capture_logs():
        for p in range(PARTITIONS):  # (their snapshot_written lines are not the bench's)
            plog = store.partition(p)
            snapshot.take(plog, plog.next_offset)
    return time.perf_counter() - started


def _offset_fetch(groups: list[str]) -> Any:
    from kio.schema.offset_fetch.v8.request import OffsetFetchRequest, OffsetFetchRequestGroup

    return protocol.make(OffsetFetchRequest, groups=tuple(
        protocol.make(OffsetFetchRequestGroup, group_id=g, topics=None) for g in groups),
        require_stable=False)


def time_start(log_dir: Path, built: dict[str, Any]) -> dict[str, float]:
    """Start a server on ``log_dir``; seconds until every probe group is served."""
    waiting = list(built["probe"])
    served: list[Any] = []
    started = time.perf_counter()
    server = ServerProcess(log_dir, {"log.cleaner.enable": "false"}).start(timeout=300)
    try:
        accepting = time.perf_counter() - started
        wire = Connection("127.0.0.1", server.port, "bench-load", 30)
        try:
            while True:
                response = wire.request(_offset_fetch(waiting))
                served += [g for g in response.groups if g.error_code != LOAD_IN_PROGRESS]
                waiting = [g.group_id for g in response.groups
                           if g.error_code == LOAD_IN_PROGRESS]
                if not waiting:
                    serving = time.perf_counter() - started
                    break
                time.sleep(0.002)
        finally:
            wire.close()
        _check(served, built)
        # (its log line may come a moment after the last answer: waited for, untimed)
        loaded = server.wait_loaded(timeout=60).event("coordinator partitions loaded") or {}
        return {"start_to_serving_s": serving, "start_to_accepting_s": accepting,
                "server_load_time_s": float(loaded.get("load_time_ms", 0.0)) / 1000.0}
    finally:
        server.stop(timeout=60)
        server.kill()


def _check(groups: list[Any], built: dict[str, Any]) -> None:
    """Every probe group was served, with the offsets written last."""
    if sorted(g.group_id for g in groups) != sorted(built["probe"]):
        raise AssertionError(f"served {sorted(g.group_id for g in groups)}, "
                             f"expected {sorted(built['probe'])}")
    latest = built["latest"]
    for group in groups:
        if group.error_code != 0:
            raise AssertionError(f"{group.group_id}: error {group.error_code}")
        for topic in group.topics:
            t = int(topic.name.rsplit("-", 1)[1])
            for p in topic.partitions:
                expected = latest.get((group.group_id, t))
                if p.committed_offset != expected:
                    raise AssertionError(f"{group.group_id} {topic.name}-{p.partition_index}: "
                                         f"{p.committed_offset}, expected {expected}")


def run_size(records: int, runs: int, directory: str | None) -> list[dict[str, Any]]:
    compile_server()
    tmp = Path(tempfile.mkdtemp(prefix="bench-load-", dir=directory))
    try:
        built = build_store(tmp, records)
        common = {k: built[k] for k in ("records", "store_bytes", "keys", "build_s")}
        rows = []
        for case in ("without snapshots", "with snapshots"):
            extra: dict[str, Any] = {}
            if case == "with snapshots":
                extra["snapshot_s"] = round(take_snapshots(tmp), 2)
            ceiling = raw_read(segment_files(tmp))
            samples = [time_start(tmp, built) for _ in range(runs)]
            row: dict[str, Any] = {"case": case, **common, **extra, "runs": runs}
            for key in samples[0]:
                row[key] = round(statistics.median(s[key] for s in samples), 3)
            row.update({k: v for k, v in ceiling.items() if k != "raw_read_records"})
            row["start_to_serving_vs_raw_read"] = round(
                row["start_to_serving_s"] / max(ceiling["raw_read_s"], 1e-3), 1)
            row["samples_start_to_serving_s"] = [round(s["start_to_serving_s"], 3)
                                                 for s in samples]
            rows.append(row)
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", default="1000000,5000000",
                        help="store sizes, comma-separated (default 1000000,5000000)")
    parser.add_argument("--runs", type=int, default=3, help="starts per case; medians reported")
    parser.add_argument("--directory", default=None, help="where the stores are written")
    parser.add_argument("--json", action="store_true", help="JSON lines")


def run(args: argparse.Namespace) -> int:
    for records in (int(n) for n in args.records.split(",")):
        for row in run_size(records, args.runs, args.directory):
            if args.json:
                print(json.dumps(with_machine(row)), flush=True)
            else:
                print(f"{row['records']:>9} records, {row['case']:18}: start to serving "
                      f"{row['start_to_serving_s']:.3f} s (server load "
                      f"{row['server_load_time_s']:.3f} s; runs "
                      f"{row['samples_start_to_serving_s']})", flush=True)
    return 0
