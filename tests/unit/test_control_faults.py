"""The control endpoint's fault rules (``coordinator/control/faults.py``): what ``POST /faults``
accepts, which requests a rule matches, how counts and seconds end it, and the error answers
built from the kio schemas (``coordinator/control/responses.py``)."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from typing import Any

import pytest

import protocol
from coordinator.control.faults import (
    CLOSE,
    DELAY,
    FREEZE,
    PATCH,
    FaultInjector,
    FaultRule,
    FaultSpecError,
    group_ids,
    member_ids,
)
from coordinator.control.responses import error_body
from coordinator.observability.collector import LabelledCount
from metrics import gauge_families
from protocol import ApiKey, ErrorCode


def request(api: ApiKey, version: int, **values: Any) -> Any:
    return protocol.make(protocol.schema(api, version).request_type, **values)


def item_class(cls: type, name: str) -> Any:
    """The entity class of ``cls``'s array field ``name``."""
    found = next(f for f in dataclasses.fields(cls) if f.name == name)
    return typing.get_args(found.type)[0]


def offset_commit(group: str = "orders", member: str = "m-1", version: int = 9) -> Any:
    cls = protocol.schema(ApiKey.OFFSET_COMMIT, version).request_type
    topic = item_class(cls, "topics")
    partition = item_class(topic, "partitions")
    return protocol.make(cls, group_id=group, member_id=member, topics=(
        protocol.make(topic, name="t", partitions=(
            protocol.make(partition, partition_index=0, committed_offset=5),
            protocol.make(partition, partition_index=3, committed_offset=9))),))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def injector(clock: Clock | None = None, **kwargs: Any) -> FaultInjector:
    return FaultInjector(clock=clock or Clock(), **kwargs)


# --- what POST /faults accepts -------------------------------------------------------------------
def test_an_error_rule_takes_kafka_names_or_codes() -> None:
    by_name = FaultRule.parse({"kind": "error", "api": "OffsetCommit",
                               "error": "REBALANCE_IN_PROGRESS", "count": 2})
    assert (by_name.api, by_name.error, by_name.count) == (
        ApiKey.OFFSET_COMMIT, ErrorCode.rebalance_in_progress, 2)
    by_code = FaultRule.parse({"kind": "error", "api": 8, "error": 27})
    assert (by_code.api, by_code.error) == (ApiKey.OFFSET_COMMIT, ErrorCode.rebalance_in_progress)
    assert FaultRule.parse({"kind": "error", "api": "OFFSET_COMMIT", "error": "27"}).error \
        is ErrorCode.rebalance_in_progress


@pytest.mark.parametrize("spec, words", [
    ([], "JSON object"),
    ({"kind": "explode"}, "unknown kind 'explode'"),
    ({"kind": "error", "api": "OffsetCommit"}, "needs an error"),
    ({"kind": "error", "error": "NOT_A_KAFKA_ERROR"}, "unknown error 'NOT_A_KAFKA_ERROR'"),
    ({"kind": "error", "error": 9999}, "unknown error code 9999"),
    ({"kind": "error", "error": "NONE"}, "NONE is not an error"),
    ({"kind": "error", "error": 27, "api": "Commit"}, "unknown API 'Commit'"),
    ({"kind": "error", "error": 27, "api": "ApiVersions"}, "ApiVersions is not subject"),
    ({"kind": "error", "error": 27, "count": 0}, "count must be a positive integer"),
    ({"kind": "error", "error": 27, "seconds": -1}, "seconds must be a positive number"),
    ({"kind": "error", "error": 27, "group": 5}, "group must be a string"),
    ({"kind": "error", "error": 27, "colour": "red"}, "unknown field(s) colour"),
    ({"kind": "delay", "api": "Fetch"}, "needs delay_ms"),
    ({"kind": "close", "delay_ms": 5}, "delay_ms is for kind delay"),
    ({"kind": "close", "error": 27}, "error is not for kind close"),
    ({"kind": "freeze", "group": "g"}, "needs the group and the member"),
    ({"kind": "freeze", "group": "g", "member": "m", "count": 1}, "bound it with seconds"),
    ({"kind": "freeze", "group": "g", "member": "m", "api": "OffsetCommit"},
     "a freeze swallows heartbeats"),
    ({"kind": "unavailable"}, "needs the group"),
    ({"kind": "unavailable", "group": "g", "error": "REBALANCE_IN_PROGRESS"},
     "NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS"),
])
def test_bad_rules_are_refused_with_a_reason(spec: Any, words: str) -> None:
    with pytest.raises(FaultSpecError) as refused:
        FaultRule.parse(spec)
    assert words in str(refused.value)


def test_defaults_of_close_and_unavailable() -> None:
    assert FaultRule.parse({"kind": "close", "api": "Heartbeat"}).count == 1
    assert FaultRule.parse({"kind": "close", "seconds": 2}).count is None
    assert FaultRule.parse({"kind": "unavailable", "group": "g"}).error is \
        ErrorCode.not_coordinator


# --- what a request names ------------------------------------------------------------------------
def test_group_and_member_ids_of_requests() -> None:
    assert group_ids(ApiKey.OFFSET_COMMIT, offset_commit("orders")) == {"orders"}
    assert member_ids(offset_commit(member="m-1")) == {"m-1"}
    assert group_ids(ApiKey.DESCRIBE_GROUPS,
                     request(ApiKey.DESCRIBE_GROUPS, 5, groups=("a", "b"))) == {"a", "b"}
    assert group_ids(ApiKey.DELETE_GROUPS,
                     request(ApiKey.DELETE_GROUPS, 2, groups_names=("a",))) == {"a"}
    assert group_ids(ApiKey.CONSUMER_GROUP_DESCRIBE,
                     request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=("c",))) == {"c"}
    fetch = protocol.schema(ApiKey.OFFSET_FETCH, 9).request_type
    group = item_class(fetch, "groups")
    body: Any = protocol.make(fetch, groups=(protocol.make(group, group_id="g", member_id="m"),))
    assert (group_ids(ApiKey.OFFSET_FETCH, body), member_ids(body)) == ({"g"}, {"m"})
    # FindCoordinator: group keys only (not transactional ids)
    assert group_ids(ApiKey.FIND_COORDINATOR,
                     request(ApiKey.FIND_COORDINATOR, 0, key="g")) == {"g"}
    assert group_ids(ApiKey.FIND_COORDINATOR, request(
        ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=("g", "h"))) == {"g", "h"}
    assert group_ids(ApiKey.FIND_COORDINATOR, request(
        ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=("tx",))) == set()
    leave = protocol.schema(ApiKey.LEAVE_GROUP, 4).request_type
    member = item_class(leave, "members")
    body = protocol.make(leave, group_id="g", members=(protocol.make(member, member_id="x"),
                                                       protocol.make(member, member_id="y")))
    assert member_ids(body) == {"x", "y"}


# --- matching ------------------------------------------------------------------------------------
def test_a_rule_matches_its_api_group_member_and_client_only() -> None:
    faults = injector()
    faults.add(FaultRule.parse({"kind": "error", "api": "OffsetCommit", "error": 27,
                                "group": "orders", "member": "m-1", "client_id": "app"}))
    body = offset_commit("orders", "m-1")
    assert faults.match(ApiKey.OFFSET_FETCH, "app", body) is None  # another API
    assert faults.match(ApiKey.OFFSET_COMMIT, "other", body) is None  # another client
    assert faults.match(ApiKey.OFFSET_COMMIT, "app", offset_commit("billing", "m-1")) is None
    assert faults.match(ApiKey.OFFSET_COMMIT, "app", offset_commit("orders", "m-2")) is None
    found = faults.match(ApiKey.OFFSET_COMMIT, "app", body)
    assert found is not None and found.kind == "error"
    assert found.rule.injected == 1


def test_any_api_is_every_api_but_api_versions() -> None:
    faults = injector()
    faults.add(FaultRule.parse({"kind": "close", "seconds": 5}))
    versions = request(ApiKey.API_VERSIONS, 3)
    assert faults.match(ApiKey.API_VERSIONS, "app", versions) is None
    found = faults.match(ApiKey.METADATA, "app", request(ApiKey.METADATA, 12))
    assert found is not None and found.kind == CLOSE and "rule 1" in found.reason


def test_count_ends_a_rule_and_the_next_one_applies() -> None:
    faults = injector()
    first = faults.add(FaultRule.parse({"kind": "error", "api": "OffsetCommit", "error": 27,
                                        "count": 2}))
    faults.add(FaultRule.parse({"kind": "delay", "api": "OffsetCommit", "delay_ms": 250}))
    kinds = []
    for _ in range(3):
        found = faults.match(ApiKey.OFFSET_COMMIT, "app", offset_commit())
        assert found is not None
        kinds.append(found.kind)
    assert kinds == ["error", "error", DELAY]
    assert [rule.id for rule in faults.rules()] == [2]
    assert first.ended is not None and first.ended.is_set()
    found = faults.match(ApiKey.OFFSET_COMMIT, "app", offset_commit())
    assert found is not None and found.delay_s == 0.25


def test_seconds_end_a_rule() -> None:
    clock = Clock()
    faults = injector(clock)
    faults.add(FaultRule.parse({"kind": "error", "error": "NOT_COORDINATOR", "seconds": 2}))
    clock.now += 1.5
    assert faults.rules()[0].to_json(clock.now)["remaining_seconds"] == 0.5
    assert faults.match(ApiKey.HEARTBEAT, "app", request(ApiKey.HEARTBEAT, 4)) is not None
    clock.now += 0.5
    assert faults.match(ApiKey.HEARTBEAT, "app", request(ApiKey.HEARTBEAT, 4)) is None
    assert not faults.armed


def test_a_freeze_matches_the_members_heartbeats_only() -> None:
    faults = injector()
    faults.add(FaultRule.parse({"kind": "freeze", "group": "g", "member": "m"}))
    beat = request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="g", member_id="m")
    other = request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="g", member_id="n")
    classic = request(ApiKey.HEARTBEAT, 4, group_id="g", member_id="m")
    assert faults.match(ApiKey.CONSUMER_GROUP_HEARTBEAT, "c", other) is None
    assert faults.match(ApiKey.OFFSET_COMMIT, "c", offset_commit("g", "m")) is None
    for api, body in ((ApiKey.CONSUMER_GROUP_HEARTBEAT, beat), (ApiKey.HEARTBEAT, classic)):
        found = faults.match(api, "c", body)
        assert found is not None and found.kind == FREEZE and found.held is not None
        found.held.close()  # type: ignore[attr-defined]  # a coroutine, not awaited here


def test_a_freeze_holds_until_the_group_settled_without_the_member() -> None:
    state = {"over": False}
    faults = injector(freeze_over=lambda group, member: state["over"],
                      member_present=lambda group, member: not state["over"])

    async def scenario() -> list[str]:
        faults.add(FaultRule.parse({"kind": "freeze", "group": "g", "member": "m"}))
        found = faults.match(ApiKey.CONSUMER_GROUP_HEARTBEAT, "c", request(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="g", member_id="m"))
        assert found is not None and found.held is not None
        held = asyncio.ensure_future(found.held)
        await asyncio.sleep(0.2)
        seen = ["held" if not held.done() else "released"]
        state["over"] = True
        await asyncio.wait_for(held, 1.0)
        seen.append("released")
        seen.append("armed" if faults.armed else "ended")
        return seen

    assert asyncio.run(scenario()) == ["held", "released", "ended"]


def test_deleting_a_freeze_releases_its_heartbeats() -> None:
    faults = injector(freeze_over=lambda group, member: False)

    async def scenario() -> bool:
        rule = faults.add(FaultRule.parse({"kind": "freeze", "group": "g", "member": "m"}))
        found = faults.match(ApiKey.HEARTBEAT, "c", request(ApiKey.HEARTBEAT, 4, group_id="g",
                                                            member_id="m"))
        assert found is not None and found.held is not None
        held = asyncio.ensure_future(found.held)
        await asyncio.sleep(0.1)
        assert not held.done()
        faults.remove(rule.id)
        await asyncio.wait_for(held, 1.0)
        return held.done()

    assert asyncio.run(scenario())


def test_unavailable_answers_the_group_and_hides_its_coordinator() -> None:
    faults = injector()
    faults.add(FaultRule.parse({"kind": "unavailable", "group": "g", "count": 1}))
    lookup = request(ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=("g", "h"))
    found = faults.match(ApiKey.FIND_COORDINATOR, "c", lookup)
    assert found is not None and found.kind == PATCH
    schema = protocol.schema(ApiKey.FIND_COORDINATOR, 4)
    coordinator = item_class(schema.response_type, "coordinators")
    answer: Any = protocol.make(schema.response_type, coordinators=tuple(
        protocol.make(coordinator, key=key, node_id=1, host="h", port=9092,
                      error_code=ErrorCode.none) for key in ("g", "h")))
    patched = {c.key: (c.error_code, c.node_id) for c in found.patch(answer).coordinators}
    assert patched == {"g": (ErrorCode.coordinator_not_available, -1),
                       "h": (ErrorCode.none, 1)}
    assert faults.armed  # FindCoordinator takes nothing of the count
    found = faults.match(ApiKey.HEARTBEAT, "c", request(ApiKey.HEARTBEAT, 4, group_id="g"))
    assert found is not None and found.rule.error is ErrorCode.not_coordinator
    assert not faults.armed


def test_a_loading_coordinator_is_still_found() -> None:
    faults = injector()
    faults.add(FaultRule.parse({"kind": "unavailable", "group": "g",
                                "error": "COORDINATOR_LOAD_IN_PROGRESS"}))
    assert faults.match(ApiKey.FIND_COORDINATOR, "c",
                        request(ApiKey.FIND_COORDINATOR, 3, key="g")) is None
    found = faults.match(ApiKey.JOIN_GROUP, "c", request(ApiKey.JOIN_GROUP, 9, group_id="g"))
    assert found is not None and found.rule.error is ErrorCode.coordinator_load_in_progress


# --- the answers ---------------------------------------------------------------------------------
def test_an_error_goes_where_kafka_puts_it() -> None:
    # OffsetCommit has no top-level error code: each partition the request named gets it
    schema = protocol.schema(ApiKey.OFFSET_COMMIT, 9)
    answer = error_body(schema.response_type, offset_commit(), ErrorCode.rebalance_in_progress)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in answer.topics] == [("t", [(0, ErrorCode.rebalance_in_progress),
                                               (3, ErrorCode.rebalance_in_progress)])]
    # Heartbeat: the top-level error code
    schema = protocol.schema(ApiKey.HEARTBEAT, 4)
    answer = error_body(schema.response_type, request(ApiKey.HEARTBEAT, 4, group_id="g"),
                        ErrorCode.rebalance_in_progress)
    assert answer.error_code is ErrorCode.rebalance_in_progress
    # DescribeGroups: each group, named
    schema = protocol.schema(ApiKey.DESCRIBE_GROUPS, 5)
    answer = error_body(schema.response_type, request(ApiKey.DESCRIBE_GROUPS, 5,
                                                      groups=("a", "b")),
                        ErrorCode.not_coordinator)
    assert [(g.group_id, g.error_code, g.members) for g in answer.groups] == [
        ("a", ErrorCode.not_coordinator, ()), ("b", ErrorCode.not_coordinator, ())]
    # and what is built encodes as the version's response
    protocol.encode_response(schema, 7, answer)


def test_every_served_api_has_an_error_answer() -> None:
    from coordinator.apis import build_registry

    for spec in build_registry().specs():
        for version in range(spec.min_version, spec.max_version + 1):
            schema = protocol.schema(spec.key, version)
            body: Any = protocol.make(schema.request_type)
            answer = error_body(schema.response_type, body, ErrorCode.not_coordinator, "x")
            protocol.encode_response(schema, 1, answer)  # well-formed for its version


# --- metrics -------------------------------------------------------------------------------------
def test_injections_are_counted_by_kind_and_api() -> None:
    counts = LabelledCount("faults-injected-total", "Faults", ("kind", "api"))
    counts.record("error", "OffsetCommit")
    counts.record("error", "OffsetCommit")
    counts.record("close", "Heartbeat")
    (family,) = gauge_families(counts.measure())
    assert family.name == "kafka_server_group_coordinator_metrics_faults_injected_total"
    assert {(s.labels["kind"], s.labels["api"]): s.value for s in family.samples} == {
        ("error", "OffsetCommit"): 2.0, ("close", "Heartbeat"): 1.0}


# --- forced rebalances (coordinator/control/rebalance.py) ---------------------------------------
def test_a_forced_rebalance_bumps_a_consumer_groups_epoch() -> None:
    from coordinator.control.rebalance import bump
    from coordinator.testing.consumer_group_context import ConsumerGroupContext

    ctx = ConsumerGroupContext()
    ctx.create_topic("orders", 2)
    joined = ctx.heartbeat("g", "m1", 0, topics=["orders"])
    epoch = ctx.group("g").group_epoch
    assert joined.member_epoch == epoch
    answer = ctx.apply(bump(ctx.shard, ctx.now, "g"))
    assert answer == {"group": "g", "type": "consumer", "group_epoch": epoch + 1,
                      "rebalancing": True}
    assert ctx.group("g").group_epoch == epoch + 1
    # the member's next heartbeat, once the assignment interval passed, computes the new
    # target: the same partitions, a new epoch
    ctx.advance(1000)
    again = ctx.heartbeat("g", "m1", epoch)
    assert again.member_epoch == epoch + 1 and ctx.group("g").assignment_epoch == epoch + 1
    assert ctx.named(ctx.member("m1", "g").assigned_partitions) == {"orders": {0, 1}}


def test_a_forced_rebalance_bumps_share_and_streams_groups() -> None:
    from coordinator.control.rebalance import bump
    from coordinator.testing.share_group_context import ShareGroupContext
    from coordinator.testing.streams_group_context import (
        StreamsGroupContext,
        subtopology,
        topology,
    )

    share = ShareGroupContext()
    share.create_topic("orders", 1)
    epoch = share.heartbeat("s", "m1", 0, ["orders"]).member_epoch
    assert share.run(lambda shard, now: bump(shard, now, "s"))["group_epoch"] == epoch + 1
    assert share.heartbeat("s", "m1", epoch).member_epoch == epoch + 1

    streams = StreamsGroupContext()
    streams.create_topic("input", 2)
    streams.topology = topology(subtopology("0", ("input",)))
    epoch = streams.heartbeat("m1", group_id="app").member_epoch
    answer = streams.run(lambda shard, now: bump(shard, now, "app"))
    assert (answer["type"], answer["group_epoch"]) == ("streams", epoch + 1)
    assert streams.heartbeat("m1", epoch, group_id="app").member_epoch == epoch + 1


def test_a_forced_rebalance_of_no_group_is_group_id_not_found() -> None:
    from coordinator.control.rebalance import bump
    from coordinator.runtime import CoordinatorError
    from coordinator.testing.consumer_group_context import ConsumerGroupContext

    ctx = ConsumerGroupContext()
    with pytest.raises(CoordinatorError) as missing:
        bump(ctx.shard, ctx.now, "nothing")
    assert missing.value.code is ErrorCode.group_id_not_found
