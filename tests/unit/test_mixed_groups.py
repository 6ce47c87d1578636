"""Mixed groups and online migration (issue 5 item 7), in virtual time: a classic group upgraded
by a consumer protocol member, classic members inside a consumer group (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, session timeouts), seed 000's REBALANCE_IN_PROGRESS rule, the downgrade
and ``group.consumer.migration.policy``."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.consumer_protocol_subscription.v1.data import (
    ConsumerProtocolSubscription,
    TopicPartition,
)
from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.primitive import i32

from coordinator.groups import classic_protocol
from coordinator.groups.classic.consumer_protocol import decode_assignment, encode_assignment
from coordinator.groups.classic.join import JoinRequest, SyncRequest, join_key
from coordinator.groups.classic.model import ClassicGroup, ClassicGroupState
from coordinator.groups.classic.session import HeartbeatRequest as ClassicHeartbeat
from coordinator.groups.consumer import env as consumer_env
from coordinator.groups.consumer.env import ConsumerGroupEnv, ConsumerGroupSettings
from coordinator.groups.consumer.heartbeat import HeartbeatRequest, heartbeat
from coordinator.groups.consumer.model import ConsumerGroup
from coordinator.groups.replay import new_shard
from coordinator.runtime import CoordinatorError, Pending
from coordinator.testing import ShardContext
from coordinator.testing.consumer_group_context import Topic, Topics
from protocol import ErrorCode

G = "g"
SESSION = 10_000
_write = entity_writer(ConsumerProtocolSubscription)


def subscription(owned: dict[str, Sequence[int]] | None = None, topics: Sequence[str] = ("t",)
                 ) -> bytes:
    buffer = io.BytesIO()
    buffer.write(b"\x00\x01")
    _write(buffer, ConsumerProtocolSubscription(
        topics=tuple(topics), user_data=None, owned_partitions=tuple(
            TopicPartition(topic=TopicName(t), partitions=tuple(i32(p) for p in ps))
            for t, ps in (owned or {}).items())))
    return buffer.getvalue()


class Mixed:
    """A shard context with topics and an installed consumer group environment."""

    def __init__(self, policy: str = "bidirectional", interval_ms: int = 0) -> None:
        self.ctx = ShardContext({"group.initial.rebalance.delay.ms": 0}, now_ms=1_000_000)
        self.topics = Topics()
        self.topics.by_name["t"] = Topic("t", uuid.UUID(int=1), 4)
        self.env = ConsumerGroupEnv(ConsumerGroupSettings(
            assignment_interval_ms=interval_ms, assignor_offload=False,
            migration_policy=policy), self.topics)

    # --- classic ----------------------------------------------------------------------------
    def join(self, member_id: str = "", owned: dict[str, Sequence[int]] | None = None,
             protocols: tuple[str, ...] = ("cooperative-sticky",)) -> Any:
        sub = subscription(owned)
        request = JoinRequest(G, member_id, None, SESSION, 30_000, "consumer",
                              tuple((name, sub) for name in protocols), "client", "/h", True)
        return self.ctx.run(lambda shard, now: classic_protocol.join(shard, request, now))

    def new_classic(self, **kwargs: Any) -> tuple[str, Any]:
        first = self.join(**kwargs)
        assert first.error is ErrorCode.member_id_required
        return first.member_id, self.join(first.member_id, **kwargs)

    def sync(self, member_id: str, generation: int,
             assignments: dict[str, bytes] | None = None) -> Any:
        request = SyncRequest(G, generation, member_id, None, "consumer", None,
                              tuple((assignments or {}).items()))
        return self.ctx.run(lambda shard, now: classic_protocol.sync(shard, request, now))

    def beat(self, member_id: str, generation: int) -> ErrorCode:
        request = ClassicHeartbeat(G, generation, member_id, None)
        return self.ctx.run(lambda shard, now: classic_protocol.heartbeat(shard, request, now))

    def leave(self, member_id: str) -> list[ErrorCode]:
        return self.ctx.run(lambda shard, now: classic_protocol.leave(
            shard, G, [(member_id, None, None)], now))

    # --- consumer protocol ------------------------------------------------------------------
    def heartbeat(self, member_id: str, epoch: int = 0,
                  owned: dict[str, Sequence[int]] | None = None) -> Any:
        tid = self.topics.by_name["t"].topic_id
        request = HeartbeatRequest(
            G, member_id, epoch, rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=("t",) if epoch == 0 else None,
            owned=tuple((tid, tuple(ps)) for _, ps in (owned or {}).items())
            if owned is not None or epoch == 0 else None)
        return self.ctx.run(lambda shard, now: heartbeat(shard, now, self.env, request))

    # --- reads ------------------------------------------------------------------------------
    def group(self) -> Any:
        return self.ctx.shard.groups[G]

    def owned(self, member_id: str) -> list[int]:
        member = self.group().member(member_id)
        return sorted(p for ps in member.assigned_partitions.values() for p in ps)

    def assert_exclusive(self) -> None:
        group = self.group()
        seen: set[Any] = set()
        for member in group.members.values():
            for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
                for topic_id, partitions in assignment.items():
                    for p in partitions:
                        assert (topic_id, p) not in seen, f"partition {p} owned twice"
                        seen.add((topic_id, p))


@pytest.fixture(autouse=True)
def _env_restored() -> Iterator[None]:
    saved = consumer_env._installed
    yield
    consumer_env._installed = saved


def mixed(policy: str = "bidirectional", interval_ms: int = 0) -> Mixed:
    m = Mixed(policy, interval_ms)
    consumer_env.install(m.env)
    return m


def classic_group(m: Mixed) -> tuple[str, str, int]:
    """A stable classic group of two members: a owns t-0,1, b owns t-2,3."""
    a, _ = m.new_classic()
    b, pending_b = m.new_classic()
    assert isinstance(pending_b, Pending)
    outcome = m.join(a)  # a rejoins the rebalance b started
    generation = outcome.generation_id
    assert m.ctx.answer(join_key(G, b)).generation_id == generation
    assignments = {a: encode_assignment([("t", [0, 1])]), b: encode_assignment([("t", [2, 3])])}
    assert m.sync(a, generation, assignments).error is ErrorCode.none
    assert m.sync(b, generation).error is ErrorCode.none
    assert m.group().state is ClassicGroupState.STABLE
    return a, b, generation


def rejoin(m: Mixed, member_id: str) -> tuple[int, list[int]]:
    """A classic member's JoinGroup + SyncGroup: (generation, partitions it was given)."""
    outcome = m.join(member_id, owned={"t": m.owned(member_id)})
    assert outcome.error is ErrorCode.none, outcome
    synced = m.sync(member_id, outcome.generation_id)
    assert synced.error is ErrorCode.none, synced
    parts = decode_assignment(synced.assignment)
    assert parts is not None
    return outcome.generation_id, sorted(p for _, ps in parts for p in ps)


def test_upgrade_converts_the_classic_group_and_reconciles_without_double_ownership() -> None:
    m = mixed()
    a, b, generation = classic_group(m)
    first = m.heartbeat("c")
    group = m.group()
    assert isinstance(group, ConsumerGroup)
    assert m.owned(a) == [0, 1] and m.owned(b) == [2, 3]
    member_a, member_c = group.member(a), group.member("c")
    assert member_a is not None and member_a.classic is not None
    assert member_c is not None and member_c.classic is None
    assert first.member_epoch == group.assignment_epoch > generation
    assert m.owned("c") == []  # everything is still held by the classic members
    m.assert_exclusive()
    # Seed 000: the classic members are behind the target assignment epoch and must rejoin.
    assert m.beat(a, generation) is ErrorCode.rebalance_in_progress
    for member in (a, b):
        gen, given = rejoin(m, member)
        m.assert_exclusive()
        if m.beat(member, gen) is ErrorCode.rebalance_in_progress:
            gen, given = rejoin(m, member)  # revoked: now at the target epoch
        assert m.beat(member, gen) is ErrorCode.none
        assert given == m.owned(member)
        m.assert_exclusive()
    response = m.heartbeat("c", first.member_epoch, owned={"t": []})
    m.assert_exclusive()
    assert sorted(m.owned(a) + m.owned(b) + m.owned("c")) == [0, 1, 2, 3]
    assert m.owned("c") and response.member_epoch == m.group().assignment_epoch


def test_replay_rebuilds_the_mixed_group() -> None:
    m = mixed()
    a, _b, _ = classic_group(m)
    m.heartbeat("c")
    shard = new_shard(0)
    for written in m.ctx.written:
        shard.replay(written.offset, written.key, written.value)
    rebuilt = shard.groups[G]
    assert isinstance(rebuilt, ConsumerGroup)
    assert set(rebuilt.members) == set(m.group().members)
    member = rebuilt.member(a)
    assert member is not None and member == m.group().member(a)
    assert member.classic is not None and member.classic.session_timeout_ms == SESSION


def test_empty_classic_group_is_replaced_whatever_the_policy() -> None:
    m = mixed("disabled")
    a, _ = m.new_classic()
    m.leave(a)
    assert isinstance(m.group(), ClassicGroup) and not m.group().members
    m.heartbeat("c")
    assert isinstance(m.group(), ConsumerGroup)


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_upgrade_refused_by_the_policy(policy: str) -> None:
    m = mixed(policy)
    classic_group(m)
    with pytest.raises(CoordinatorError) as raised:
        m.heartbeat("c")
    assert raised.value.code is ErrorCode.group_id_not_found
    assert isinstance(m.group(), ClassicGroup)


@pytest.mark.parametrize(("policy", "downgraded"), [
    ("bidirectional", True), ("downgrade", True), ("upgrade", False), ("disabled", False)])
def test_downgrade_when_the_last_consumer_member_leaves(policy: str, downgraded: bool) -> None:
    m = mixed("bidirectional")
    a, b, _ = classic_group(m)
    response = m.heartbeat("c")
    m.env.settings = ConsumerGroupSettings(assignor_offload=False, migration_policy=policy,
                                           assignment_interval_ms=0)
    m.heartbeat("c", -1)
    group = m.group()
    if downgraded:
        assert isinstance(group, ClassicGroup)
        assert group.state is ClassicGroupState.PREPARING_REBALANCE
        assert set(group.members) == {a, b}
        # The classic members rejoin the classic group and rebalance as usual.
        assert m.beat(a, response.member_epoch) is not ErrorCode.none
        m.join(a, owned={"t": [0, 1]})
        m.join(b, owned={"t": [2, 3]})
        assert m.ctx.answer(join_key(G, a)).error is ErrorCode.none
    else:
        assert isinstance(group, ConsumerGroup) and set(group.members) == {a, b}


def test_classic_member_joins_a_consumer_group() -> None:
    m = mixed()
    first = m.heartbeat("c")
    assert m.owned("c") == [0, 1, 2, 3]
    member_id, outcome = m.new_classic()
    assert outcome.error is ErrorCode.none and outcome.protocol_type == "consumer"
    assert outcome.protocol_name == "cooperative-sticky"
    assert m.sync(member_id, outcome.generation_id).error is ErrorCode.none
    assert m.sync(member_id, outcome.generation_id + 5).error is ErrorCode.illegal_generation
    # c revokes half; the classic member gets them on its next join.
    m.heartbeat("c", first.member_epoch, owned={"t": [0, 1, 2, 3]})
    revoked = m.heartbeat("c", first.member_epoch, owned={"t": m.owned("c")})
    m.assert_exclusive()
    assert m.beat(member_id, outcome.generation_id) is ErrorCode.rebalance_in_progress
    generation, given = rejoin(m, member_id)
    assert given and sorted(given + m.owned("c")) == [0, 1, 2, 3]
    assert generation == revoked.member_epoch
    assert m.beat(member_id, generation) is ErrorCode.none
    # A protocol no classic member supports is refused.
    assert m.join(protocols=("roundrobin",)).error is ErrorCode.inconsistent_group_protocol


def test_rebalance_in_progress_only_when_behind_the_target_assignment_epoch() -> None:
    m = mixed(interval_ms=1000)
    m.heartbeat("c")
    member_id, outcome = m.new_classic()
    generation = outcome.generation_id
    m.sync(member_id, generation)
    m.ctx.advance(1001)
    m.heartbeat("c", m.group().member("c").member_epoch, owned={"t": m.owned("c")})
    generation, _ = rejoin(m, member_id)
    assert m.beat(member_id, generation) is ErrorCode.none
    m.heartbeat("d")  # bumps the group epoch; the interval delays the target assignment
    group = m.group()
    assert group.group_epoch > group.assignment_epoch == generation
    assert m.beat(member_id, generation) is ErrorCode.none  # seed 000: not behind the target
    m.ctx.advance(1001)
    m.heartbeat("d", group.member("d").member_epoch, owned={"t": []})
    assert m.group().assignment_epoch == m.group().group_epoch
    assert m.beat(member_id, generation) is ErrorCode.rebalance_in_progress


def test_classic_member_leaves_and_times_out() -> None:
    m = mixed()
    m.heartbeat("c")
    x, _ = m.new_classic()
    y, _ = m.new_classic()
    assert m.leave(x) == [ErrorCode.none]
    assert x not in m.group().members
    assert m.leave("nobody") == [ErrorCode.unknown_member_id]
    m.ctx.advance(SESSION + 1)  # y never heartbeats; c's session (45 s) is still running
    assert y not in m.group().members and "c" in m.group().members


def test_empty_consumer_group_is_replaced_by_a_classic_join() -> None:
    m = mixed("disabled")
    m.heartbeat("c")
    m.heartbeat("c", -1)
    assert isinstance(m.group(), ConsumerGroup) and not m.group().members
    m.new_classic()
    assert isinstance(m.group(), ClassicGroup) and len(m.group().members) == 1


def test_classic_member_commits_with_its_generation() -> None:
    m = mixed()
    m.heartbeat("c")
    member_id, outcome = m.new_classic()

    def commit(generation: int) -> Any:
        return m.group().validate_offset_commit(SimpleNamespace(
            member_id=member_id, generation_id=generation, api_version=8))

    assert commit(outcome.generation_id) is None
    assert commit(outcome.generation_id + 1) is ErrorCode.illegal_generation
