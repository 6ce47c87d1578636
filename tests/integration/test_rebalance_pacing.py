"""Rebalances without offload's extra heartbeat (issue 24), with real confluent-kafka
``group.protocol=consumer`` members against a server with Kafka's defaults (``serve``: offload
on, a 1,000 ms assignment interval, 5,000 ms heartbeats). Before, each case took one heartbeat
interval more: a new group's first assignment 5 s, a leave's partitions 10 s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.bench.rebalance import first_assignment_ms, leave_to_owned_ms, ten_members_ms
from coordinator.bench.server_runs import create_topic
from tests.harness import ServerProcess

HEARTBEAT_INTERVAL_MS = 5000  # the serve profile's group.consumer.heartbeat.interval.ms


@pytest.fixture(scope="module")
def serve_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data: Path = tmp_path_factory.mktemp("pacing") / "data"
    with ServerProcess(data, {"metrics.listener": "http://127.0.0.1:0"},
                       profile="serve") as server:
        server.wait_loaded()
        create_topic(server.bootstrap, "paced-one", 3)
        create_topic(server.bootstrap, "paced-ten", 10)
        create_topic(server.bootstrap, "paced-two", 4)
        yield server


def test_a_new_group_gets_its_first_assignment_without_a_second_heartbeat(
        serve_server: ServerProcess) -> None:
    took = first_assignment_ms(serve_server.bootstrap, "paced-one", "paced-one")
    assert took < HEARTBEAT_INTERVAL_MS / 5, took  # 5,000 ms before; ~0.1 s on an idle laptop
    offloaded = serve_server.event("offloaded target assignment", group_id="paced-one")
    assert offloaded is not None and offloaded["group_epoch"] == 2  # seed 000: epoch 2 first


def test_ten_members_subscribing_at_once_share_the_first_assignment(
        serve_server: ServerProcess) -> None:
    slowest = ten_members_ms(serve_server.bootstrap, "paced-ten", "paced-ten")
    assert slowest < HEARTBEAT_INTERVAL_MS / 2.5, slowest


@pytest.mark.slow
def test_a_leaving_members_partitions_move_within_one_heartbeat_interval(
        serve_server: ServerProcess) -> None:
    took = leave_to_owned_ms(serve_server.bootstrap, "paced-two", "paced-two", 4)
    assert took < HEARTBEAT_INTERVAL_MS + 250, took  # 10,000 ms before: two intervals
