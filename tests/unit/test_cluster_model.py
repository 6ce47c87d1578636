"""The pure cluster model (``coordinator/cluster/``) and the per-broker configs: placement,
moves and their leader epochs, what a stop moves, OffsetForLeaderEpoch's end offsets, what
survives a restart, the routing answers, and ``cluster.listeners`` / ``cluster.racks``."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.cluster import BrokerNode, Cluster, ClusterError, routing, state_file
from coordinator.cluster.model import COORDINATOR, PARTITION_LEADER, PartitionState
from coordinator.config import ConfigError, ServerConfig
from coordinator.config.cluster import broker_specs
from protocol import ErrorCode


def three(partitions: int = 6, replication: int = 3) -> Cluster:
    return Cluster([BrokerNode(n) for n in (1, 2, 3)], partitions, replication)


def test_partitions_are_spread_with_their_replication_factor() -> None:
    cluster = three()
    cluster.set_replication("t", 3)
    states = [cluster.partition("t", i) for i in range(6)]
    assert {s.leader for s in states} == {1, 2, 3}
    assert all(sorted(s.replicas) == [1, 2, 3] and s.leader == s.replicas[0] for s in states)
    assert all(s.leader_epoch == 0 for s in states)
    # a topic without a factor has one replica; the coordinator partitions go round from 1
    assert len(cluster.partition("other", 0).replicas) == 1
    assert [c.leader for c in cluster.coordinators] == [1, 2, 3, 1, 2, 3]
    assert cluster.coordinators_led_by(2) == [1, 4]


def test_the_replication_factor_is_refused_above_the_running_brokers() -> None:
    cluster = three()
    cluster.check_replication(3)
    with pytest.raises(ClusterError, match="only 3 broker"):
        cluster.check_replication(4)
    cluster.stop(3, lambda topic, index: 0)
    with pytest.raises(ClusterError, match=r"factor of 3 cannot be reached because only 2"):
        cluster.check_replication(3)


def test_a_move_bumps_the_epoch_and_records_where_it_starts() -> None:
    cluster = three()
    cluster.set_replication("t", 2)
    state = cluster.partition("t", 0)
    first = state.leader
    outside = next(n for n in (1, 2, 3) if n not in state.replicas)
    move = cluster.move_partition("t", 0, outside, 40)
    assert move is not None and (move.kind, move.from_node, move.to_node, move.leader_epoch) == (
        PARTITION_LEADER, first, outside, 1)
    assert state.leader == outside and state.replicas[0] == outside and len(state.replicas) == 2
    assert cluster.move_partition("t", 0, outside, 50) is None  # already there: no new epoch
    cluster.move_partition("t", 0, first, 70)
    assert state.leader_epoch == 2 and state.epoch_starts == [(0, 0), (1, 40), (2, 70)]
    assert cluster.moves == 2


def test_end_offsets_for_leader_epochs_as_kafka_answers() -> None:
    state = PartitionState(1, 4, (1,), [(0, 0), (2, 10), (4, 25)])
    assert state.end_offset_for(4, 30) == (4, 30)  # the latest: the log end
    assert state.end_offset_for(2, 30) == (2, 25)  # where the next starts
    assert state.end_offset_for(3, 30) == (2, 25)  # an epoch without batches: its floor's
    assert state.end_offset_for(0, 30) == (0, 10)
    assert state.end_offset_for(5, 30) == (-1, -1)  # newer than the leader's
    assert state.end_offset_for(-1, 30) == (-1, -1)
    assert PartitionState(1, 2, (1,), [(1, 5), (2, 9)]).end_offset_for(0, 30) == (0, 5)


def test_a_stop_moves_what_the_broker_leads_to_running_replicas() -> None:
    cluster = three()
    cluster.set_replication("t", 3)
    led = {i: cluster.partition("t", i).leader for i in range(6)}
    moves = cluster.stop(2, lambda topic, index: 100 + index)
    moved = {m.partition for m in moves if m.kind == PARTITION_LEADER}
    assert moved == {i for i, leader in led.items() if leader == 2}
    assert {m.partition for m in moves if m.kind == COORDINATOR} == {1, 4}
    for i in range(6):
        state = cluster.partition("t", i)
        assert state.leader != 2
        assert state.leader_epoch == (1 if i in moved else 0)
        assert state.isr(cluster.running) == tuple(n for n in state.replicas if n != 2)
        if i in moved:
            assert state.epoch_starts[-1] == (1, 100 + i)
    assert not cluster.led_by(2) and not cluster.coordinators_led_by(2)
    assert cluster.running_ids() == [1, 3] and cluster.controller_id == 1
    assert cluster.stop(2, lambda topic, index: 0) == []  # stopped already
    assert cluster.start(2) and not cluster.start(2)
    assert not cluster.led_by(2)  # nothing moves back by itself


def test_the_last_running_broker_and_unknown_brokers_are_refused() -> None:
    cluster = three()
    cluster.stop(1, lambda topic, index: 0)
    cluster.stop(2, lambda topic, index: 0)
    with pytest.raises(ClusterError, match="last running broker"):
        cluster.stop(3, lambda topic, index: 0)
    with pytest.raises(ClusterError, match="unknown broker 9"):
        cluster.broker(9)
    with pytest.raises(ClusterError, match="broker 1 is stopped"):
        cluster.move_coordinator(0, 1)
    assert all(c.leader == 3 for c in cluster.coordinators)


def test_a_partition_placed_after_a_stop_is_led_by_a_running_replica() -> None:
    cluster = three()
    cluster.stop(1, lambda topic, index: 0)
    cluster.set_replication("t", 1)
    assert all(cluster.partition("t", i).leader in (2, 3) for i in range(6))


def test_routing_answers() -> None:
    cluster = three()
    cluster.move_coordinator(0, 2, loading_until=10.0)
    assert routing.coordinator_error(cluster, 1, [0], now=5.0) is ErrorCode.not_coordinator
    assert routing.coordinator_error(cluster, 2, [0], now=5.0) \
        is ErrorCode.coordinator_load_in_progress
    assert routing.coordinator_error(cluster, 2, [0], now=10.0) is None
    # a classic Heartbeat of a loading group is answered NONE, as Kafka does
    assert routing.coordinator_error(cluster, 2, [0], now=5.0, api_key=12) is ErrorCode.none
    assert routing.coordinator_error(cluster, 2, [0, 1], now=10.0) is None  # 1: on 2 already
    assert routing.coordinator_error(cluster, 2, [0, 2], now=10.0) is ErrorCode.not_coordinator
    state = cluster.partition("t", 0)
    cluster.move_partition("t", 0, state.leader % 3 + 1, 0)
    leader = state.leader
    assert routing.leader_error(cluster, leader % 3 + 1, "t", 0) \
        is ErrorCode.not_leader_or_follower
    assert routing.leader_error(cluster, leader, "t", 0) is None
    assert routing.leader_error(cluster, leader, "t", 0, 1) is None
    assert routing.leader_error(cluster, leader, "t", 0, 0) is ErrorCode.fenced_leader_epoch
    assert routing.leader_error(cluster, leader, "t", 0, 2) is ErrorCode.unknown_leader_epoch


class _Body:
    transactional_id = "a"
    transactions = ()
    transactional_ids = ("b", "c")


def test_transactional_ids_of_a_request() -> None:
    assert routing.transactional_ids(_Body()) == ["a", "b", "c"]


def test_leaders_and_epochs_survive_a_restart(tmp_path: Path) -> None:
    cluster = three()
    cluster.set_replication("t", 3)
    cluster.move_partition("t", 1, cluster.partition("t", 1).leader % 3 + 1, 7)
    cluster.move_coordinator(5, 1)
    state_file.save(tmp_path, cluster)
    again = three()
    assert state_file.load(tmp_path, again)
    assert again.partitions == cluster.partitions and again.replication == {"t": 3}
    assert (again.coordinators[5].leader, again.coordinators[5].leader_epoch) == (1, 1)
    # a cluster of other brokers keeps what fits it
    two = Cluster([BrokerNode(1), BrokerNode(2)], 6, 3)
    assert state_file.load(tmp_path, two)
    assert all(set(s.replicas) <= {1, 2} for s in two.partitions.values())
    assert not state_file.load(tmp_path / "nowhere", three())


def _config(**values: str) -> ServerConfig:
    return ServerConfig.from_sources({"listeners": "PLAINTEXT://127.0.0.1:9092",
                         **values})


def test_broker_listeners_default_to_free_ports() -> None:
    specs = broker_specs(_config(**{"cluster.brokers": "3"}))
    assert [s.node_id for s in specs] == [1, 2, 3]
    assert [(s.listeners[0].host, s.listeners[0].port) for s in specs] == [
        ("127.0.0.1", 9092), ("127.0.0.1", 0), ("127.0.0.1", 0)]
    assert [s.rack for s in specs] == [None, None, None]


def test_cluster_listeners_racks_and_advertised_listeners() -> None:
    specs = broker_specs(_config(**{
        "cluster.brokers": "3", "cluster.listeners": "PLAINTEXT://127.0.0.1:9093,"
        "PLAINTEXT://127.0.0.1:9094", "cluster.racks": "a,b,",
        "cluster.advertised.listeners": ",PLAINTEXT://kafka-3:19094"}))
    assert [s.listeners[0].port for s in specs] == [9092, 9093, 9094]
    assert [s.rack for s in specs] == ["a", "b", None]
    assert [(s.advertised[0].host, s.advertised[0].port) for s in specs[1:]] == [
        ("127.0.0.1", 9093), ("kafka-3", 19094)]
    # one entry per broker 1..N: the first is broker 1's own
    specs = broker_specs(_config(**{"cluster.brokers": "2", "cluster.listeners":
                                    "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9095"}))
    assert specs[1].listeners[0].port == 9095


@pytest.mark.parametrize("values, message", [
    ({"cluster.listeners": "PLAINTEXT://127.0.0.1:9093"}, "one entry per broker 2..3"),
    ({"cluster.listeners": "SASL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:0"},
     "not one of broker 1's listeners"),
    ({"cluster.racks": "a,b"}, "one rack per broker 1..3"),
    ({"cluster.brokers": "0"}, "at least 1"),
])
def test_bad_cluster_configs_are_refused(values: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(**{"cluster.brokers": "3", **values})


def test_partition_racks_are_the_racks_of_the_replicas_brokers() -> None:
    from coordinator.cluster.racks import partition_racks

    assert partition_racks(None, None) is None  # one broker without a rack: no rack data
    one = partition_racks(None, "r1")
    assert one is not None and one("t", 3) == (("r1",), ("r1",), ("r1",))
    assert partition_racks(Cluster([BrokerNode(n) for n in (1, 2, 3)], 6, 1), None) is None
    racked = Cluster([BrokerNode(1, "a"), BrokerNode(2, "b"), BrokerNode(3)], 6, 1)
    racks = partition_racks(racked, None)
    assert racks is not None
    racked.replication["t"] = 2
    found = racks("t", 3)
    assert found is not None
    for index, partition_rack in enumerate(found):
        expected = {racked.brokers[n].rack for n in racked.partition("t", index).replicas}
        assert set(partition_rack) == expected - {None}
    assert any(len(r) == 2 for r in found) and any(len(r) == 1 for r in found)
