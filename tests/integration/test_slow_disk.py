"""A slow and a failing disk under one coordinator partition, through an LD_PRELOAD shim
(``tests/integration/faultfs``) on the server.

- While the fsync of one partition's log stalls, the groups of the other partitions are
  answered promptly, and the stalled commit is answered once its fsync is done.
- EIO on one partition's writes is handled like a full disk: that partition's commits get
  NOT_COORDINATOR (not acknowledged), the others go on, the server stays up, the partition
  takes writes again once the disk heals, and nothing acknowledged is lost across a kill -9.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import confluent_kafka
import pytest

from coordinator.runtime import partition_for
from protocol import ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration import faultfs
from tests.integration.conftest import WireClient
from tests.integration.test_offsets_durability import (
    TOPIC,
    Acked,
    assert_all_committed,
    create_topics,
    wire_offset_commit,
)

PARTITIONS = 4
STALLED = 0  # the coordinator partition whose disk misbehaves
STALL_MS = 1500
PROMPT_S = 0.5
CONFIG = {"offsets.topic.num.partitions": str(PARTITIONS)}


def group_on(partition: int, prefix: str) -> str:
    return next(f"{prefix}-{n}" for n in range(1000)
                if partition_for(f"{prefix}-{n}", PARTITIONS) == partition)


@pytest.fixture(scope="module")
def disk(tmp_path_factory: pytest.TempPathFactory) -> faultfs.FaultFs:
    directory = tmp_path_factory.mktemp("faultfs")
    return faultfs.FaultFs(faultfs.build(directory), directory / "faultfs.ctl")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory,
           disk: faultfs.FaultFs) -> Iterator[ServerProcess]:
    """One server for the module (the EIO test, last, ends it with a kill -9)."""
    process = ServerProcess(tmp_path_factory.mktemp("slow-disk") / "data", CONFIG,
                            env=disk.env).start()
    try:
        process.wait_loaded()
        create_topics(process.bootstrap, {TOPIC: 2})
        yield process
    finally:
        process.stop()
        process.kill()


@pytest.fixture(autouse=True)
def healed(disk: faultfs.FaultFs) -> Iterator[None]:
    disk.heal()
    yield
    disk.heal()


def timed_commit(client: WireClient, group: str, offset: int) -> tuple[float, float,
                                                                         dict[int, ErrorCode]]:
    started = time.monotonic()
    result = wire_offset_commit(client, group, {0: offset})
    return started, time.monotonic(), result


@pytest.mark.slow
def test_groups_on_other_partitions_are_answered_while_one_partition_fsync_stalls(
        server: ServerProcess, disk: faultfs.FaultFs) -> None:
    stalled_group = group_on(STALLED, "stalled")
    others = [group_on(p, "other") for p in range(PARTITIONS) if p != STALLED]
    with WireClient(server.bootstrap, timeout=20) as slow, \
            WireClient(server.bootstrap) as fast:
        for group in [stalled_group, *others]:  # every log written once before the stall
            assert wire_offset_commit(fast, group, {0: 1}) == {0: ErrorCode.none}

        disk.delay_fsync(f"__consumer_offsets-{STALLED}/", STALL_MS)
        stalled: list[tuple[float, float, dict[int, ErrorCode]]] = []
        thread = threading.Thread(target=lambda: stalled.append(
            timed_commit(slow, stalled_group, 2)))
        thread.start()
        during: list[float] = []  # latencies of commits sent and answered during the stall
        offset = 2
        while thread.is_alive():
            for group in others:
                offset += 1
                started, ended, result = timed_commit(fast, group, offset)
                assert result == {0: ErrorCode.none}
                if thread.is_alive():
                    during.append(ended - started)
        thread.join()

    [(started, ended, result)] = stalled
    assert result == {0: ErrorCode.none}
    assert ended - started >= STALL_MS / 1000 * 0.9, "the shim did not stall the fsync"
    assert len(during) >= 5, during
    assert max(during) < PROMPT_S, f"commits waited for another partition's fsync: {during}"

    # a real client's group on another partition commits promptly during a second stall
    disk.delay_fsync(f"__consumer_offsets-{STALLED}/", STALL_MS)
    with WireClient(server.bootstrap, timeout=20) as slow:
        thread = threading.Thread(target=timed_commit, args=(slow, stalled_group, 3))
        thread.start()
        consumer = confluent_kafka.Consumer({"bootstrap.servers": server.bootstrap,
                                             "group.id": others[0],
                                             "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 0, 100)],
                            asynchronous=False)  # connects and finds its coordinator
            started = time.monotonic()
            consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 0, 101)],
                            asynchronous=False)
            took = time.monotonic() - started
            still_stalled = thread.is_alive()
        finally:
            consumer.close()
            thread.join()
    assert still_stalled, "the stall ended before the real client's commit"
    assert took < PROMPT_S, took


def test_eio_on_writes_is_handled_like_a_full_disk(
        server: ServerProcess, disk: faultfs.FaultFs) -> None:
    failing_group = group_on(STALLED, "failing")
    others = [group_on(p, "other") for p in range(PARTITIONS) if p != STALLED]
    acked: Acked = {}
    with WireClient(server.bootstrap, timeout=10) as client:
        for group in [failing_group, *others]:
            assert wire_offset_commit(client, group, {0: 10}) == {0: ErrorCode.none}
            acked[(group, TOPIC, 0)] = 10

        disk.fail_writes(f"__consumer_offsets-{STALLED}/")
        refused: set[ErrorCode] = set()
        for attempt in range(5):
            [code] = wire_offset_commit(client, failing_group, {0: 20 + attempt}).values()
            refused.add(code)
            for group in others:  # the other partitions keep taking commits
                assert wire_offset_commit(client, group, {0: 20 + attempt}) == {
                    0: ErrorCode.none}
                acked[(group, TOPIC, 0)] = 20 + attempt
        # the write fails: NOT_COORDINATOR, as for a full disk; while the partition reloads
        # its log, COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS; never success
        assert ErrorCode.not_coordinator in refused, refused
        assert refused <= {ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
                           ErrorCode.coordinator_load_in_progress}, refused
        assert server.alive()
        server.wait_event("coordinator fsync failed", partition=STALLED)

        disk.heal()  # the partition takes writes again
        wait_until(lambda: wire_offset_commit(client, failing_group, {0: 30}) == {
            0: ErrorCode.none}, 10, interval=0.1, message="a commit after the disk healed")
        acked[(failing_group, TOPIC, 0)] = 30

    assert_all_committed(server.bootstrap, acked)
    server.kill()
    restarted = ServerProcess(server.log_dir, CONFIG).start()  # without the shim
    try:
        assert_all_committed(restarted.bootstrap, acked)
    finally:
        restarted.stop()
        restarted.kill()
