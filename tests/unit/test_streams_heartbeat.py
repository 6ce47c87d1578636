"""StreamsGroupHeartbeat (KIP-1071, Kafka 4.3) as a pure handler in virtual time: request
validation, joining, epochs and fencing, the topology against the metadata (statuses and the
internal topics to create), revocation before assignment, standbys, leaving, session and
rebalance timeouts, SHUTDOWN_APPLICATION, endpoints, group epoch bumps, per-group overrides,
the group size limit and the replacement of an empty classic group. Seed 000's initial delay,
interval and offload are in ``test_streams_seed000.py``; replay in ``test_streams_replay.py``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from coordinator.groups.classic.model import ClassicGroup, ClassicGroupState
from coordinator.groups.streams.env import StreamsGroupSettings
from coordinator.groups.streams.heartbeat import (
    ASSIGNMENT_DELAYED,
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    HeartbeatRequest,
    rebalance_key,
    session_key,
    validate,
)
from coordinator.groups.streams.model import Endpoint, GroupState, MemberState
from coordinator.groups.streams.topology import CopartitionGroup, InternalTopic, TopicInfo
from coordinator.runtime import CoordinatorError, Result
from coordinator.testing.streams_group_context import (
    G,
    StreamsGroupContext,
    active_tasks,
    plain,
    subtopology,
    tasks,
    topology,
)
from protocol import ErrorCode
from storage.records import (
    GroupMetadataKey,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTopologyKey,
)

STATELESS = topology(subtopology("0", ("input",)))
STATEFUL = topology(subtopology("0", ("input",), changelogs=("app-store-changelog",)))


@pytest.fixture
def ctx() -> StreamsGroupContext:
    context = StreamsGroupContext()
    context.create_topic("input", 4)
    context.topology = STATELESS
    return context


def with_standbys(ctx: StreamsGroupContext) -> None:
    """A stateful subtopology with two tasks (its changelog created), one standby replica."""
    ctx.create_topic("two", 2)
    ctx.create_topic("app-store-changelog", 2)
    ctx.topology = topology(subtopology("0", ("two",), changelogs=("app-store-changelog",)))
    ctx.set_group_config(streams_num_standby_replicas=1)


def codes(response: Any) -> list[int]:
    return [code for code, _ in response.statuses]


def kinds(ctx: StreamsGroupContext, since: int) -> list[str]:
    """The record types written since ``since``, tombstones marked with a ``-``."""
    return [("-" if r.tombstone else "") + type(r.key).__name__.removeprefix("StreamsGroup")
            .removesuffix("Key") for r in ctx.records(since=since)]


# --- validation before the group is touched (spec §1.4) ----------------------------------------
def join_request(**changes: Any) -> HeartbeatRequest:
    base = HeartbeatRequest(G, "m1", 0, rebalance_timeout_ms=300000, topology=STATELESS,
                            active_tasks={}, standby_tasks={}, warmup_tasks={},
                            process_id="p1", client_tags=())
    return replace(base, **changes)


def steady_request(**changes: Any) -> HeartbeatRequest:
    return replace(HeartbeatRequest(G, "m1", 5), **changes)


INVALID_REQUESTS = [
    (join_request(instance_id="i1"), "Static membership is not yet supported."),
    (join_request(task_offsets=True), "TaskOffsets are not supported yet."),
    (join_request(task_end_offsets=True), "TaskEndOffsets are not supported yet."),
    (steady_request(active_tasks={}, standby_tasks={}, warmup_tasks=tasks({"0": [1]})),
     "WarmupTasks are not supported yet."),
    (join_request(topology=topology(subtopology("0", regex=("in.*",)))),
     "Regular expressions for source topics are not supported yet."),
    (join_request(member_id="  "), "MemberId can't be empty."),
    (join_request(group_id=""), "GroupId can't be empty."),
    (join_request(rack_id=" "), "RackId can't be empty."),
    (join_request(rebalance_timeout_ms=-1),
     "RebalanceTimeoutMs must be provided in first request."),
    (join_request(active_tasks=None), "ActiveTasks must be empty when (re-)joining."),
    (join_request(active_tasks=tasks({"0": [0]})),
     "ActiveTasks must be empty when (re-)joining."),
    (join_request(standby_tasks=None), "StandbyTasks must be empty when (re-)joining."),
    (join_request(standby_tasks=tasks({"0": [0]})),
     "StandbyTasks must be empty when (re-)joining."),
    (join_request(warmup_tasks=None), "WarmupTasks must be empty when (re-)joining."),
    (join_request(topology=None), "Topology must be non-null when (re-)joining."),
    (steady_request(member_epoch=-2), "InstanceId can't be null."),
    (steady_request(member_epoch=-3),
     "MemberEpoch is -3, but must be greater than or equal to -2."),
    (steady_request(active_tasks={}), "If one task-type is non-null, all must be non-null."),
    (steady_request(active_tasks={}, standby_tasks={}),
     "If one task-type is non-null, all must be non-null."),
    (steady_request(topology=STATELESS), "Topology can only be provided when (re-)joining."),
    # the unsupported features come first (GCS order)
    (join_request(instance_id="i1", member_id=""), "Static membership is not yet supported."),
    (join_request(member_id="", group_id=""), "MemberId can't be empty."),
]


@pytest.mark.parametrize(("request_", "message"), INVALID_REQUESTS)
def test_invalid_requests_fail_with_kafkas_message(request_: HeartbeatRequest,
                                                   message: str) -> None:
    with pytest.raises(CoordinatorError) as raised:
        validate(request_)
    assert raised.value.code is ErrorCode.invalid_request
    assert raised.value.message == message


def test_valid_join_and_steady_requests_pass() -> None:
    validate(join_request())
    validate(steady_request())
    validate(steady_request(member_epoch=-1))
    validate(steady_request(active_tasks={}, standby_tasks={}, warmup_tasks={}))


def test_a_changelog_topic_with_a_partition_count_is_an_invalid_topology() -> None:
    bad = topology(subtopology("0", ("input",), changelogs=(TopicInfo("cl", 3),)))
    with pytest.raises(CoordinatorError) as raised:
        validate(join_request(topology=bad))
    assert raised.value.code is ErrorCode.streams_invalid_topology
    assert raised.value.message == ("Changelog topic cl must have an undefined partition count, "
                                    "but it is set to 3.")
    # Kafka checks it after the other joining checks and before the task-list ones
    with pytest.raises(CoordinatorError) as raised:
        validate(join_request(topology=bad, rebalance_timeout_ms=-1))
    assert raised.value.code is ErrorCode.invalid_request


def test_kafka_internal_topics_and_invalid_names_are_refused(ctx: StreamsGroupContext) -> None:
    error = ctx.error_of("m1", topology=topology(subtopology("0", ("__consumer_offsets",))))
    assert error.code is ErrorCode.streams_invalid_topology
    assert error.message == ("Use of Kafka internal topics __consumer_offsets in a Kafka Streams "
                             "topology is prohibited.")
    error = ctx.error_of("m1", topology=topology(subtopology("0", ("bad name",))))
    assert error.code is ErrorCode.streams_invalid_topology
    assert error.message == "Topic names bad name are not valid topic names."
    assert ctx.written == [] and G not in ctx.shard.groups


# --- joining ------------------------------------------------------------------------------------
def test_the_first_member_creates_the_group_and_gets_every_task(
        ctx: StreamsGroupContext) -> None:
    mark = ctx.mark()
    response = ctx.heartbeat("m1")
    assert response.member_id == "m1"
    assert response.member_epoch == 2  # a new group is at epoch 1, the join bumps it
    assert plain(response.tasks) == {"active": {"0": {0, 1, 2, 3}}, "standby": {},
                                     "warmup": {}}
    assert response.statuses == []
    assert response.heartbeat_interval_ms == 5000
    assert response.endpoint_information_epoch == 0
    assert response.endpoints == []  # the client's -1 differs from the group's 0
    assert response.internal_topics == ()
    # Kafka's order: member, topology, group epoch, target (member then metadata), current
    assert kinds(ctx, mark) == ["MemberMetadata", "Topology", "Metadata",
                                "TargetAssignmentMember", "TargetAssignmentMetadata",
                                "CurrentMemberAssignment"]
    metadata = ctx.last_value(StreamsGroupMetadataKey)
    assert (metadata.epoch, metadata.validated_topology_epoch) == (2, 0)
    assert [(kv.key, kv.value) for kv in metadata.assignment_configs] == [
        ("num.standby.replicas", "0")]
    member = ctx.last_value(StreamsGroupMemberMetadataKey)
    assert (member.process_id, member.client_id, member.client_host,
            member.rebalance_timeout_ms, member.topology_epoch) == (
        "process-m1", "client", "/127.0.0.1", 300000, 0)
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch, group.state) == (2, 2, GroupState.STABLE)
    m1 = ctx.member("m1")
    assert (m1.member_epoch, m1.previous_member_epoch, m1.state) == (2, 0, MemberState.STABLE)
    assert m1.assigned.epochs == {"0": {0: 2, 1: 2, 2: 2, 3: 2}}


def test_a_steady_heartbeat_writes_nothing_and_returns_no_tasks(
        ctx: StreamsGroupContext) -> None:
    ctx.heartbeat("m1")
    mark = ctx.mark()
    response = ctx.heartbeat("m1", 2, endpoint_epoch=0)
    assert (response.member_epoch, response.tasks, response.endpoints) == (2, None, None)
    assert response.statuses == []
    assert ctx.mark() == mark


def test_a_second_member_takes_half_of_the_tasks_sticky(ctx: StreamsGroupContext) -> None:
    """Spec §3.3 example 2: a held all four; it keeps the first two, b gets the others."""
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    ctx.converge(a, b)
    assert (a.active, b.active) == ({"0": {0, 1}}, {"0": {2, 3}})
    assert ctx.group().state is GroupState.STABLE
    assert ctx.group().group_epoch == ctx.group().assignment_epoch == 3


def test_unknown_group_and_other_group_types(ctx: StreamsGroupContext) -> None:
    error = ctx.error_of("m1", 3)
    assert (error.code, error.message) == (ErrorCode.group_id_not_found,
                                           "Streams group app not found.")
    ctx.shard.groups["other"] = ClassicGroup("other", ClassicGroupState.STABLE, "consumer")
    for epoch in (0, 3):
        error = ctx.error_of("m1", epoch, group_id="other")
        assert (error.code, error.message) == (ErrorCode.group_id_not_found,
                                               "Group other is not a streams group.")


def test_an_empty_classic_group_is_replaced(ctx: StreamsGroupContext) -> None:
    ctx.run(lambda shard, now: Result([ClassicGroup(G).record()]))
    assert isinstance(ctx.shard.groups[G], ClassicGroup)
    mark = ctx.mark()
    response = ctx.heartbeat("m1")
    assert response.member_epoch == 2
    assert response.endpoint_information_epoch == 0
    written = ctx.records(since=mark)
    assert isinstance(written[0].key, GroupMetadataKey) and written[0].tombstone
    assert ctx.group().group_epoch == 2


def test_unknown_member(ctx: StreamsGroupContext) -> None:
    ctx.heartbeat("m1")
    error = ctx.error_of("ghost", 2)
    assert (error.code, error.message) == (ErrorCode.unknown_member_id,
                                           "Member ghost is not a member of group app.")


def test_group_max_size(ctx: StreamsGroupContext) -> None:
    small = StreamsGroupContext(replace(ctx.env.settings, max_size=2), topics=ctx.topics)
    small.topology = STATELESS
    small.heartbeat("a")
    small.heartbeat("b")
    error = small.error_of("c")
    assert (error.code, error.message) == (
        ErrorCode.group_max_size_reached,
        "The streams group has reached its maximum capacity of 2 members.")
    # Kafka 4.3 checks the size before looking the member up: a full group refuses a rejoin
    assert small.error_of("a").code is ErrorCode.group_max_size_reached
    # steady heartbeats are not joins
    assert small.heartbeat("a", 2).member_epoch == 2


# --- epochs and fencing -------------------------------------------------------------------------
def test_a_greater_epoch_is_fenced(ctx: StreamsGroupContext) -> None:
    ctx.heartbeat("m1")
    error = ctx.error_of("m1", 3)
    assert error.code is ErrorCode.fenced_member_epoch
    assert error.message == (
        "The streams group member has a greater member epoch (3) than the one known by the "
        "group coordinator (2). The member must abandon all its partitions and rejoin.")


def test_a_smaller_epoch_is_fenced_unless_it_is_the_previous_one_with_owned_tasks(
        ctx: StreamsGroupContext) -> None:
    a, b = ctx.client("a"), ctx.client("b")
    a.join()       # epoch 2, all four tasks
    a.heartbeat()  # reports them
    b.join()       # epoch 3
    a.heartbeat()  # revoke 2, 3 (UNREVOKED_TASKS at 2)
    a.heartbeat()  # acks: STABLE at 3, previous epoch 2
    assert (ctx.member("a").member_epoch, ctx.member("a").previous_member_epoch) == (3, 2)
    # the previous epoch with owned tasks that are a subset of the assigned ones: accepted
    response = ctx.heartbeat("a", 2, active={"0": [0]}, standby={}, warmup={})
    assert response.member_epoch == 3
    # without owned tasks, or with a task it does not hold: fenced
    message = ("The streams group member has a smaller member epoch (2) than the one known by "
               "the group coordinator (3). The member must abandon all its partitions and "
               "rejoin.")
    for owned in (None, {"0": [0, 2]}):
        error = ctx.error_of("a", 2, active=owned, standby=None if owned is None else {},
                             warmup=None if owned is None else {})
        assert (error.code, error.message) == (ErrorCode.fenced_member_epoch, message)
    error = ctx.error_of("a", 1, active={}, standby={}, warmup={})
    assert error.code is ErrorCode.fenced_member_epoch


def test_a_fenced_client_rejoins_with_the_same_member_id_and_keeps_its_tasks(
        ctx: StreamsGroupContext) -> None:
    a = ctx.client("a")
    a.join()
    a.heartbeat()
    mark = ctx.mark()
    response = a.rejoin()  # Kafka's testStreamsGroupMemberCanRejoinWithEpochZero
    assert response.member_epoch == 2
    assert active_tasks(response) == {"0": {0, 1, 2, 3}}
    assert ctx.mark() == mark  # nothing changed: no record, no bump


# --- the topology against the metadata -----------------------------------------------------------
def test_missing_source_topics_hold_every_task(ctx: StreamsGroupContext) -> None:
    ctx.topology = topology(subtopology("0", ("input", "zeta", "beta")))
    response = ctx.heartbeat("m1")
    assert response.statuses == [(MISSING_SOURCE_TOPICS, "Source topics beta, zeta are missing.")]
    assert response.member_epoch == 2
    assert active_tasks(response) == {}
    assert response.internal_topics == ()
    group = ctx.group()
    assert (group.state, group.validated_topology_epoch) == (GroupState.NOT_READY, -1)
    assert ctx.last_value(StreamsGroupMetadataKey).validated_topology_epoch == -1
    # the status stays until the topics exist; then the group becomes ready with a bump
    assert codes(ctx.heartbeat("m1", 2)) == [MISSING_SOURCE_TOPICS]
    ctx.create_topic("beta", 4)
    ctx.create_topic("zeta", 2)
    response = ctx.heartbeat("m1", 2)
    assert response.statuses == []
    assert response.member_epoch == 3
    assert active_tasks(response) == {"0": {0, 1, 2, 3}}
    assert (ctx.group().state, ctx.group().validated_topology_epoch) == (GroupState.STABLE, 0)


def test_more_than_three_missing_source_topics_are_summarized(ctx: StreamsGroupContext) -> None:
    ctx.topology = topology(subtopology("0", ("e", "d", "c", "b", "a")))
    response = ctx.heartbeat("m1")
    assert response.statuses == [
        (MISSING_SOURCE_TOPICS, "Source topics a, b, c and 2 additional topics are missing.")]


def test_missing_internal_topics_are_reported_with_their_partition_counts(
        ctx: StreamsGroupContext) -> None:
    """Repartition topics get the largest input of the subtopology writing them, changelogs one
    partition per task of their subtopology."""
    ctx.create_topic("clicks", 6)
    ctx.topology = topology(
        subtopology("0", ("input", "clicks"), sinks=("app-by-user-repartition",),
                    changelogs=("app-dedup-changelog",)),
        subtopology("1", (), repartition=("app-by-user-repartition",),
                    changelogs=("app-counts-changelog",)))
    response = ctx.heartbeat("m1")
    assert response.statuses == [
        (MISSING_INTERNAL_TOPICS, "Internal topics are missing: app-by-user-repartition, "
                                  "app-counts-changelog, app-dedup-changelog")]
    assert response.internal_topics == (
        InternalTopic("app-by-user-repartition", 6, -1, ()),
        InternalTopic("app-counts-changelog", 6, -1, ()),
        InternalTopic("app-dedup-changelog", 6, -1, ()))
    assert active_tasks(response) == {}
    assert ctx.group().state is GroupState.NOT_READY
    # the API layer creates them; the topic change refreshes the group; the next heartbeat
    # finds it ready, bumps once and assigns the tasks
    assert ctx.create_internal_topics(response.internal_topics) == [
        "app-by-user-repartition", "app-counts-changelog", "app-dedup-changelog"]
    response = ctx.heartbeat("m1", 2)
    assert response.statuses == [] and response.internal_topics == ()
    assert response.member_epoch == 3
    assert active_tasks(response) == {
        "0": set(range(6)), "1": set(range(6))}
    assert ctx.group().configured.subtopologies["1"].num_tasks == 6


def test_internal_topics_keep_a_fixed_count_their_replication_factor_and_configs(
        ctx: StreamsGroupContext) -> None:
    ctx.topology = topology(
        subtopology("0", ("input",), sinks=("app-rekey-repartition",)),
        subtopology("1", (), repartition=(TopicInfo("app-rekey-repartition", 3, 2,
                                                    (("cleanup.policy", "delete"),)),),
                    changelogs=(TopicInfo("app-agg-changelog", 0, -1),)))
    response = ctx.heartbeat("m1")
    assert response.internal_topics == (
        InternalTopic("app-agg-changelog", 3, -1, ()),
        InternalTopic("app-rekey-repartition", 3, 2, (("cleanup.policy", "delete"),)))


def test_copartitioned_repartition_topic_takes_the_source_topics_count(
        ctx: StreamsGroupContext) -> None:
    """A join: subtopology 1 reads ``input`` (4 partitions) and a repartition topic written by
    subtopology 0 from ``small`` (2 partitions); co-partitioning makes the repartition topic 4."""
    ctx.create_topic("small", 2)
    ctx.topology = topology(
        subtopology("0", ("small",), sinks=("app-join-repartition",)),
        subtopology("1", ("input",), repartition=("app-join-repartition",),
                    changelogs=("app-join-store-changelog",),
                    copartition=(CopartitionGroup(source_topics=(0,),
                                                  repartition_source_topics=(0,)),)))
    response = ctx.heartbeat("m1")
    assert response.internal_topics == (InternalTopic("app-join-repartition", 4),
                                        InternalTopic("app-join-store-changelog", 4))
    ctx.create_internal_topics(response.internal_topics)
    response = ctx.heartbeat("m1", 2)
    assert active_tasks(response) == {"0": {0, 1}, "1": {0, 1, 2, 3}}


def test_copartitioned_source_topics_with_different_counts(ctx: StreamsGroupContext) -> None:
    ctx.create_topic("right", 3)
    ctx.topology = topology(subtopology(
        "0", ("input", "right"), copartition=(CopartitionGroup(source_topics=(0, 1)),)))
    response = ctx.heartbeat("m1")
    assert response.statuses == [
        (INCORRECTLY_PARTITIONED_TOPICS,
         "Following topics do not have the same number of partitions: [{input=4, right=3}]")]
    assert active_tasks(response) == {}
    assert ctx.group().state is GroupState.NOT_READY
    ctx.add_partitions("right", 4)
    response = ctx.heartbeat("m1", 2)
    assert response.statuses == []
    assert active_tasks(response) == {"0": {0, 1, 2, 3}}


def test_an_existing_internal_topic_with_another_count(ctx: StreamsGroupContext) -> None:
    ctx.topology = STATEFUL
    ctx.create_topic("app-store-changelog", 2)
    response = ctx.heartbeat("m1")
    assert response.statuses == [
        (INCORRECTLY_PARTITIONED_TOPICS, "Existing topic app-store-changelog has different "
                                         "number of partitions: expected 4, found 2")]
    assert response.internal_topics == ()


def test_a_topology_that_cannot_be_configured_fails_the_heartbeat(
        ctx: StreamsGroupContext) -> None:
    ctx.topology = topology(
        subtopology("0", (), sinks=("app-b",), repartition=("app-a",)),
        subtopology("1", (), sinks=("app-a",), repartition=("app-b",)))
    error = ctx.error_of("m1")
    assert error.code is ErrorCode.streams_invalid_topology
    assert error.message == ("Failed to compute number of partitions for all repartition "
                             "topics. There may be loops in the topology that cannot be "
                             "resolved.")
    assert ctx.written == [] and G not in ctx.shard.groups


def test_owned_tasks_must_exist_in_the_configured_topology(ctx: StreamsGroupContext) -> None:
    ctx.heartbeat("m1")
    error = ctx.error_of("m1", 2, active={"9": [0]}, standby={}, warmup={})
    assert (error.code, error.message) == (ErrorCode.invalid_request,
                                           "Subtopology 9 does not exist in the topology.")
    error = ctx.error_of("m1", 2, active={"0": [0]}, standby={"0": [7]}, warmup={})
    assert (error.code, error.message) == (
        ErrorCode.invalid_request,
        "Task 7 for subtopology 0 is invalid. Number of tasks for this subtopology: 4")


def test_a_member_with_an_older_topology_epoch_is_stale_but_assigned(
        ctx: StreamsGroupContext) -> None:
    a = ctx.client("a", topology=replace(STATELESS, epoch=1))
    b = ctx.client("b", topology=STATELESS)
    a.join()
    a.heartbeat()
    response = b.join()
    assert response.statuses == [
        (STALE_TOPOLOGY, "The member's topology epoch 0 is behind the group's topology epoch 1.")]
    assert ctx.group().topology.epoch == 1
    assert ctx.member("b").topology_epoch == 0
    ctx.converge(a, b)
    assert codes(b.last) == [STALE_TOPOLOGY]
    assert (a.active, b.active) == ({"0": {0, 1}}, {"0": {2, 3}})


def test_topology_updates_are_not_supported(ctx: StreamsGroupContext) -> None:
    ctx.heartbeat("a")
    other = topology(subtopology("0", ("input",)), subtopology("1", ("input",)))
    for epoch in (0, 1):
        error = ctx.error_of("b", topology=replace(other, epoch=epoch))
        assert (error.code, error.message) == (ErrorCode.invalid_request,
                                               "Topology updates are not supported yet.")
    # the same topology, subtopologies in another order, is the same topology
    same = topology(subtopology("0", ("input",)))
    assert ctx.heartbeat("b", topology=same).member_epoch == 3


# --- revocation before assignment -------------------------------------------------------------
def test_a_task_moves_only_after_its_old_owner_revoked_it(ctx: StreamsGroupContext) -> None:
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    a.heartbeat()
    response = b.join()
    assert response.member_epoch == 3
    assert active_tasks(response) == {}
    assert ctx.member("b").state is MemberState.UNRELEASED_TASKS
    assert ctx.group().state is GroupState.RECONCILING

    response = a.heartbeat(hold=True)  # learns of the revocation: keeps its epoch
    assert response.member_epoch == 2
    assert active_tasks(response) == {"0": {0, 1}}
    member_a = ctx.member("a")
    assert member_a.state is MemberState.UNREVOKED_TASKS
    assert member_a.pending_revocation.active == {"0": frozenset({2, 3})}
    assert ctx.shard.timers.is_scheduled(rebalance_key(G, "a"))

    # b gets nothing while a still owns the tasks (a heartbeat without owned lists, or one
    # that still lists them, does not acknowledge)
    assert b.heartbeat().tasks is None and b.active == {}
    response = ctx.heartbeat("a", 2, active={"0": [0, 1, 2]}, standby={}, warmup={})
    assert response.member_epoch == 2 and ctx.member("a").state is MemberState.UNREVOKED_TASKS
    assert b.heartbeat().tasks is None

    response = a.heartbeat()  # reports {0, 1}: the revocation is acknowledged
    assert response.member_epoch == 3 and response.tasks is None
    assert ctx.member("a").state is MemberState.STABLE
    assert not ctx.shard.timers.is_scheduled(rebalance_key(G, "a"))
    response = b.heartbeat()
    assert active_tasks(response) == {"0": {2, 3}}
    assert ctx.member("b").assigned.epochs == {"0": {2: 3, 3: 3}}
    assert ctx.member("a").assigned.epochs == {"0": {0: 2, 1: 2}}  # kept tasks keep theirs
    ctx.converge(a, b)
    assert ctx.group().state is GroupState.STABLE


def test_a_task_is_never_active_on_two_members(ctx: StreamsGroupContext) -> None:
    clients = [ctx.client(m) for m in ("a", "b", "c", "d")]
    for joined in range(1, 5):
        clients[joined - 1].join()
        for _ in range(6):
            for c in clients[:joined]:
                c.heartbeat()
                owners: dict[tuple[str, int], str] = {}
                for m in ctx.group().members.values():
                    for held in (m.assigned, m.pending_revocation):
                        for s, parts in held.active.items():
                            for p in parts:
                                assert (s, p) not in owners, f"{s}-{p} on two members"
                                owners[(s, p)] = m.member_id
    ctx.converge(*clients)
    assert sorted(len(c.owned.active.get("0", ())) for c in clients) == [1, 1, 1, 1]


# --- standbys -------------------------------------------------------------------------------------
def test_standbys_never_on_the_process_of_their_active(ctx: StreamsGroupContext) -> None:
    with_standbys(ctx)
    # both join before the first target (spec §3.3 example 3: fresh members)
    ctx.set_group_config(streams_num_standby_replicas=1, streams_initial_rebalance_delay_ms=100)
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    ctx.advance(100)
    ctx.converge(a, b)
    assert (a.active, a.standby) == ({"0": {0}}, {"0": {1}})
    assert (b.active, b.standby) == ({"0": {1}}, {"0": {0}})
    metadata = ctx.last_value(StreamsGroupMetadataKey)
    assert [(kv.key, kv.value) for kv in metadata.assignment_configs] == [
        ("num.standby.replicas", "1")]


@pytest.mark.parametrize("standbys", [1, 2])
def test_a_process_never_holds_a_task_twice(ctx: StreamsGroupContext, standbys: int) -> None:
    """Members share processes (threads of one Kafka Streams instance): a task's active and
    standby replicas are all on different processes, as many standbys as other processes
    allow."""
    ctx.create_topic("six", 6)
    ctx.create_topic("app-store-changelog", 6)
    ctx.topology = topology(subtopology("0", ("six",), changelogs=("app-store-changelog",)))
    ctx.set_group_config(streams_num_standby_replicas=standbys)
    clients = [ctx.client(f"m{i}", process_id=f"p{i % 3}") for i in range(5)]
    for c in clients:
        c.join()
        ctx.converge(*[x for x in clients if x.epoch or x is c])
        processes: dict[int, list[str]] = {}
        for x in clients:
            if x.epoch == 0:
                continue
            for p in (*x.active.get("0", ()), *x.standby.get("0", ())):
                processes.setdefault(p, []).append(x.process_id)
        for p, holders in processes.items():
            assert len(holders) == len(set(holders)), f"task 0_{p} twice on one process"
        live = {x.process_id for x in clients if x.epoch}
        expected = 1 + min(standbys, len(live) - 1)
        assert sorted(processes) == list(range(6))
        assert {len(h) for h in processes.values()} == {expected}


def test_no_standby_when_the_only_process_holds_the_active(ctx: StreamsGroupContext) -> None:
    with_standbys(ctx)
    a1, a2 = ctx.client("a1", process_id="p"), ctx.client("a2", process_id="p")
    a1.join()
    a2.join()
    ctx.converge(a1, a2)
    # spec §3.3 example 4: the actives are spread, no standby fits on the one process
    assert (a1.active, a2.active) == ({"0": {0}}, {"0": {1}})
    assert a1.standby == {} and a2.standby == {}


def test_stateless_subtopologies_get_no_standbys(ctx: StreamsGroupContext) -> None:
    ctx.create_topic("app-store-changelog", 4)
    ctx.topology = topology(subtopology("0", ("input",)),
                            subtopology("1", ("input",), changelogs=("app-store-changelog",)))
    ctx.set_group_config(streams_num_standby_replicas=1)
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    ctx.converge(a, b)
    assert set(a.standby) | set(b.standby) == {"1"}
    for s in ("0", "1"):
        assert a.active.get(s, set()) | b.active.get(s, set()) == {0, 1, 2, 3}
    for x, y in ((a, b), (b, a)):
        assert x.standby.get("1", set()) == y.active.get("1", set())


def test_a_promoted_standby_is_revoked_before_it_becomes_active(
        ctx: StreamsGroupContext) -> None:
    """Spec §3.3 example 5: a leaves; b, which held 0_0 as standby, gets it active, but only
    after its record no longer lists the standby (Kafka 4.3)."""
    with_standbys(ctx)
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    ctx.converge(a, b)
    assert (b.active, b.standby) == ({"0": {1}}, {"0": {0}})
    a.leave()
    response = b.heartbeat()
    assert plain(response.tasks) == {"active": {"0": {1}}, "standby": {}, "warmup": {}}
    assert ctx.member("b").state is MemberState.UNREVOKED_TASKS
    b.heartbeat()  # acknowledges the standby's revocation: the active task waits for the record
    assert ctx.member("b").state is MemberState.UNRELEASED_TASKS
    response = b.heartbeat()
    assert plain(response.tasks) == {"active": {"0": {0, 1}}, "standby": {}, "warmup": {}}
    assert ctx.member("b").state is MemberState.STABLE


# --- leaving and timeouts -------------------------------------------------------------------------
def test_leaving(ctx: StreamsGroupContext) -> None:
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    ctx.converge(a, b)
    epoch = ctx.group().group_epoch
    mark = ctx.mark()
    response = a.leave()
    assert (response.member_id, response.member_epoch) == ("a", -1)
    assert response.statuses == [] and response.tasks is None
    assert response.heartbeat_interval_ms == 0 and response.endpoint_information_epoch == 0
    assert kinds(ctx, mark) == ["-CurrentMemberAssignment", "-TargetAssignmentMember",
                                "-MemberMetadata", "Metadata"]
    assert ctx.last_value(StreamsGroupMetadataKey).epoch == epoch + 1
    assert ctx.group().group_epoch == epoch + 1 and "a" not in ctx.group().members
    assert not ctx.shard.timers.is_scheduled(session_key(G, "a"))
    # no target is computed now; b's next heartbeat does it and b takes everything
    assert ctx.group().assignment_epoch == epoch
    ctx.converge(b)
    assert b.active == {"0": {0, 1, 2, 3}}
    assert ctx.group().assignment_epoch == epoch + 1


def test_leaving_an_unknown_group_or_as_an_unknown_member(ctx: StreamsGroupContext) -> None:
    error = ctx.error_of("a", -1)
    # GMM.streamsGroupLeave -> streamsGroup(): not the heartbeat's "Streams group ..." text
    assert (error.code, error.message) == (ErrorCode.group_id_not_found,
                                           "Group app not found.")
    ctx.shard.groups["other"] = ClassicGroup("other", ClassicGroupState.STABLE, "consumer")
    error = ctx.error_of("a", -1, group_id="other")
    assert (error.code, error.message) == (ErrorCode.group_id_not_found,
                                           "Group other is not a streams group.")
    ctx.heartbeat("a")
    error = ctx.error_of("b", -1)
    assert (error.code, error.message) == (ErrorCode.unknown_member_id,
                                           "Member b is not a member of group app.")


def test_the_last_member_leaving_leaves_an_empty_group(ctx: StreamsGroupContext) -> None:
    ctx.heartbeat("a")
    ctx.heartbeat("a", -1)
    group = ctx.group()
    assert group.state is GroupState.EMPTY and group.group_epoch == 3
    assert group.topology is not None  # the topology stays with the group


def test_session_timeout_fences_a_silent_member(ctx: StreamsGroupContext) -> None:
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    ctx.converge(a, b)
    epoch = ctx.group().group_epoch
    ctx.advance(44_000)
    a.heartbeat()  # a stays alive; b is silent
    mark = ctx.mark()
    assert ctx.advance(999) == []
    assert ctx.advance(1) == [session_key(G, "b")]
    assert kinds(ctx, mark) == ["-CurrentMemberAssignment", "-TargetAssignmentMember",
                                "-MemberMetadata", "Metadata"]
    assert "b" not in ctx.group().members and ctx.group().group_epoch == epoch + 1
    error = ctx.error_of("b", b.epoch)
    assert error.code is ErrorCode.unknown_member_id
    b.rejoin()
    ctx.converge(a, b)
    assert len(a.active["0"]) == len(b.active["0"]) == 2


def test_the_session_timeout_of_the_group(ctx: StreamsGroupContext) -> None:
    ctx.set_group_config(streams_session_timeout_ms=50_000)
    ctx.heartbeat("a")
    assert ctx.advance(49_999) == []
    assert ctx.advance(1) == [session_key(G, "a")]


def test_rebalance_timeout_fences_a_member_that_does_not_revoke(
        ctx: StreamsGroupContext) -> None:
    a, b = ctx.client("a", rebalance_timeout_ms=10_000), ctx.client("b")
    a.join()
    a.heartbeat()
    b.join()
    a.heartbeat(hold=True)  # UNREVOKED_TASKS from now on
    for _ in range(3):
        ctx.advance(3_000)
        a.heartbeat(hold=True)  # alive, but never acknowledges
        b.heartbeat()
    assert b.active == {}
    fired = ctx.advance(1_000)
    assert fired == [rebalance_key(G, "a")]
    assert "a" not in ctx.group().members
    ctx.converge(b)
    assert b.active == {"0": {0, 1, 2, 3}}
    error = ctx.error_of("a", a.epoch)
    assert error.code is ErrorCode.unknown_member_id


def test_a_member_that_revokes_in_time_is_not_fenced(ctx: StreamsGroupContext) -> None:
    a, b = ctx.client("a", rebalance_timeout_ms=10_000), ctx.client("b")
    a.join()
    a.heartbeat()
    b.join()
    a.heartbeat(hold=True)
    ctx.advance(9_000)
    a.heartbeat()
    b.heartbeat()
    assert ctx.advance(2_000) == []  # past the rebalance timeout: cancelled
    assert "a" in ctx.group().members and ctx.member("a").state is MemberState.STABLE


# --- SHUTDOWN_APPLICATION -------------------------------------------------------------------------
SHUTDOWN_DETAIL = ("Streams group member {} encountered a fatal error and requested a shutdown "
                   "for the entire application.")


def test_a_shutdown_request_reaches_every_member(ctx: StreamsGroupContext) -> None:
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    ctx.converge(a, b)
    b.shutdown = True
    response = b.heartbeat()
    assert response.statuses == [(SHUTDOWN_APPLICATION, SHUTDOWN_DETAIL.format("b"))]
    assert a.heartbeat().statuses == [(SHUTDOWN_APPLICATION, SHUTDOWN_DETAIL.format("b"))]
    # the first requester is named, whoever asks next
    a.shutdown = True
    assert a.heartbeat().statuses == [(SHUTDOWN_APPLICATION, SHUTDOWN_DETAIL.format("b"))]
    c = ctx.client("c")
    assert codes(c.join()) == [SHUTDOWN_APPLICATION]
    # it lasts until the group is empty
    for client in (a, b, c):
        client.leave()
    assert ctx.group().shutdown_requested_by is None
    assert codes(ctx.client("d").join()) == []


def test_a_leaving_member_can_request_the_shutdown(ctx: StreamsGroupContext) -> None:
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    a.shutdown = True
    assert a.leave().statuses == []
    assert b.heartbeat().statuses == [(SHUTDOWN_APPLICATION, SHUTDOWN_DETAIL.format("a"))]


def test_statuses_come_in_kafkas_order(ctx: StreamsGroupContext) -> None:
    """STALE_TOPOLOGY, ASSIGNMENT_DELAYED, the topic status, SHUTDOWN_APPLICATION."""
    delayed = StreamsGroupContext(StreamsGroupSettings(assignor_offload=False),
                                  topics=ctx.topics)
    delayed.topology = topology(subtopology("0", ("input", "missing")), epoch=1)
    delayed.heartbeat("a")
    response = delayed.heartbeat("b", topology=replace(delayed.topology, epoch=0),
                                 shutdown=True)
    assert codes(response) == [STALE_TOPOLOGY, ASSIGNMENT_DELAYED, MISSING_SOURCE_TOPICS,
                               SHUTDOWN_APPLICATION]


# --- endpoints (interactive queries) --------------------------------------------------------------
def test_endpoints_and_the_endpoint_information_epoch(ctx: StreamsGroupContext) -> None:
    a = ctx.client("a", user_endpoint=Endpoint("host-a", 8080))
    b = ctx.client("b", user_endpoint=Endpoint("host-b", 8080))
    quiet = ctx.client("quiet")  # no endpoint: never listed, never bumps the epoch
    response = a.join()
    # the group was created by this heartbeat: epoch 0, the client's -1 differs
    assert response.endpoint_information_epoch == 0
    assert [(e.endpoint, e.active) for e in response.endpoints or []] == [
        (Endpoint("host-a", 8080), (("input", (0, 1, 2, 3)),))]
    response = a.heartbeat()
    assert response.endpoints is None  # the client echoed 0
    response = b.join()
    assert response.endpoint_information_epoch == 1  # b got (empty) tasks with an endpoint
    assert [e.endpoint.host for e in response.endpoints or []] == ["host-a", "host-b"]
    response = quiet.join()
    assert response.endpoint_information_epoch == 1
    assert [e.endpoint.host for e in response.endpoints or []] == ["host-a", "host-b"]
    ctx.converge(a, b, quiet)
    epoch = ctx.group().endpoint_epoch
    assert epoch > 1
    response = quiet.heartbeat()
    assert response.endpoints is None and response.endpoint_information_epoch == epoch
    # a member's own entry comes last, built from its updated state
    response = ctx.heartbeat("b", b.epoch, endpoint_epoch=-1)
    entries = {e.endpoint.host: e for e in response.endpoints or []}
    assert [e.endpoint.host for e in response.endpoints or []] == ["host-a", "host-b"]
    served = [set(dict(entries[h].active).get("input", ())) for h in ("host-a", "host-b")]
    others = set(quiet.active.get("0", ()))
    assert served[0] | served[1] | others == {0, 1, 2, 3} and not served[0] & served[1]


def test_standby_partitions_of_endpoints(ctx: StreamsGroupContext) -> None:
    with_standbys(ctx)
    a = ctx.client("a", user_endpoint=Endpoint("host-a", 1))
    b = ctx.client("b", user_endpoint=Endpoint("host-b", 1))
    a.join()
    b.join()
    ctx.converge(a, b)
    response = ctx.heartbeat("a", a.epoch, endpoint_epoch=-1)
    entries = {e.endpoint.host: e for e in response.endpoints or []}
    assert (entries["host-a"].active, entries["host-a"].standby) == ((("two", (0,)),),
                                                                     (("two", (1,)),))
    assert (entries["host-b"].active, entries["host-b"].standby) == ((("two", (1,)),),
                                                                     (("two", (0,)),))


def test_endpoints_of_a_group_not_ready_have_no_partitions(ctx: StreamsGroupContext) -> None:
    """Kafka 4.3 fails such a heartbeat (NoSuchElementException); we list the endpoint with
    empty partition lists (spec §9)."""
    ctx.topology = topology(subtopology("0", ("missing",)))
    response = ctx.heartbeat("a", user_endpoint=Endpoint("h", 1))
    assert codes(response) == [MISSING_SOURCE_TOPICS]
    assert [(e.endpoint, e.active, e.standby) for e in response.endpoints or []] == [
        (Endpoint("h", 1), (), ())]


# --- group epoch bumps ----------------------------------------------------------------------------
def test_what_bumps_the_group_epoch(ctx: StreamsGroupContext) -> None:
    a = ctx.client("a")
    a.join()
    a.heartbeat()
    assert ctx.group().group_epoch == 2
    a.heartbeat()
    assert ctx.group().group_epoch == 2  # a plain heartbeat does not
    ctx.heartbeat("a", 0, rack_id="rack-1")  # member metadata changed
    assert ctx.group().group_epoch == 3
    ctx.heartbeat("a", 3, client_id="other-client")  # so does the client id
    assert ctx.group().group_epoch == 4
    ctx.create_topic("unrelated", 1)
    ctx.heartbeat("a", 4, client_id="other-client")
    assert ctx.group().group_epoch == 4  # not a topic the topology needs
    ctx.add_partitions("input", 6)  # a required topic grew: new metadata hash
    response = ctx.heartbeat("a", 4, client_id="other-client")
    assert ctx.group().group_epoch == 5 and response.member_epoch == 5
    assert active_tasks(response) == {"0": set(range(6))}
    ctx.set_group_config(streams_num_standby_replicas=1)  # the assignment configs changed
    ctx.heartbeat("a", 5, client_id="other-client")
    assert ctx.group().group_epoch == 6
    assert ctx.group().assignment_configs == (("num.standby.replicas", "1"),)
    ctx.delete_topic("input")  # the topology is not ready any more
    response = ctx.heartbeat("a", 6, client_id="other-client")
    assert ctx.group().group_epoch == 7 and codes(response) == [MISSING_SOURCE_TOPICS]
    assert ctx.group().validated_topology_epoch == -1
    assert active_tasks(response) == {}


def test_the_heartbeat_interval_of_the_group(ctx: StreamsGroupContext) -> None:
    ctx.set_group_config(streams_heartbeat_interval_ms=7000)
    assert ctx.heartbeat("a").heartbeat_interval_ms == 7000
    ctx.set_group_config()
    assert ctx.heartbeat("a", 2).heartbeat_interval_ms == 5000


def test_the_group_records_carry_the_topology_as_received(ctx: StreamsGroupContext) -> None:
    ctx.heartbeat("a")
    value = ctx.last_value(StreamsGroupTopologyKey)
    assert value == STATELESS.to_record()
    target = ctx.last_value(StreamsGroupTargetAssignmentMemberKey)
    assert [(t.subtopology_id, t.partitions) for t in target.active_tasks] == [
        ("0", (0, 1, 2, 3))]
    current = ctx.last_value(StreamsGroupCurrentMemberAssignmentKey)
    assert [(t.subtopology_id, t.partitions, t.assignment_epochs)
            for t in current.active_tasks] == [("0", (0, 1, 2, 3), (2, 2, 2, 2))]
    assert ctx.last_value(StreamsGroupTargetAssignmentMetadataKey).timestamp == ctx.now
