"""Subscriptions by regular expression in virtual time: RE2 validation, resolution recorded as
ConsumerGroupRegularExpression records, epoch bumps on topic changes and on the periodic
refresh (coordinator/groups/consumer_regex.py)."""

from __future__ import annotations

from typing import Any

from coordinator.groups.consumer import regex as consumer_regex
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.consumer.heartbeat import refresh_subscription_metadata
from coordinator.groups.consumer.model import GroupState
from coordinator.groups.replay import new_shard
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from protocol import ErrorCode
from storage.records import ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue

REFRESH = 600000


def context(**settings: Any) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0,
                                                     **settings))
    ctx.create_topic("regex-topic-a", 2)
    ctx.create_topic("regex-topic-b", 2)
    ctx.create_topic("other", 3)
    return ctx


def regex_records(ctx: ConsumerGroupContext) -> list[tuple[str, tuple[str, ...] | None]]:
    return [(k.regular_expression, None if v is None else v.topics) for k, v in ctx.written
            if isinstance(k, ConsumerGroupRegularExpressionKey)]


def topic_change(ctx: ConsumerGroupContext, name: str) -> None:
    ctx.apply(refresh_subscription_metadata(ctx.shard, ctx.now, ctx.env, name))


def test_regex_member_gets_the_matching_topics_only() -> None:
    ctx = context()
    response = ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    assert response.member_epoch == 2
    assert ctx.named(response.assignment) == {"regex-topic-a": {0, 1}, "regex-topic-b": {0, 1}}
    assert regex_records(ctx) == [("regex-topic-.*", ("regex-topic-a", "regex-topic-b"))]
    group = ctx.group()
    assert set(group.subscription_metadata) == {"regex-topic-a", "regex-topic-b"}
    assert group.resolved_regexes["regex-topic-.*"].timestamp == ctx.now
    assert ctx.member("a").subscribed_topic_regex == "regex-topic-.*"


def test_regex_matches_whole_names_like_re2j_matches() -> None:
    ctx = context()
    ctx.create_topic("xregex-topic-c", 1)
    response = ctx.heartbeat(member_id="a", regex="^regex-topic-a")
    assert ctx.named(response.assignment) == {"regex-topic-a": {0, 1}}


def test_invalid_regex_is_refused_before_any_record() -> None:
    ctx = context()
    for bad in ("(", "[a", "(?<=a)b", "a{2,1}"):
        assert ctx.error_of(member_id="a", regex=bad) is ErrorCode.invalid_regular_expression
    assert ctx.written == []
    assert ErrorCode.invalid_regular_expression.value == 128


def test_internal_topics_are_not_matched() -> None:
    ctx = context()
    ctx.create_topic("__consumer_offsets", 50)
    response = ctx.heartbeat(member_id="a", regex=".*")
    assert set(ctx.named(response.assignment) or {}) == {"regex-topic-a", "regex-topic-b",
                                                         "other"}


def test_names_and_regex_members_share_the_group() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", topics=["other"])
    b = ctx.heartbeat(member_id="b", regex="regex-topic-.*")
    assert ctx.named(b.assignment) == {"regex-topic-a": {0, 1}, "regex-topic-b": {0, 1}}
    a = ctx.heartbeat(member_id="a", member_epoch=2, owned={"other": [0, 1, 2]})
    assert ctx.named(a.assignment) in (None, {"other": {0, 1, 2}})
    assert ctx.group().state is GroupState.STABLE


def test_created_matching_topic_bumps_the_epoch_and_is_assigned() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    ctx.create_topic("regex-topic-c", 4)
    topic_change(ctx, "regex-topic-c")
    group = ctx.group()
    assert group.group_epoch == 3
    assert group.resolved_regexes["regex-topic-.*"].topics == {
        "regex-topic-a", "regex-topic-b", "regex-topic-c"}
    response = ctx.heartbeat(member_id="a", member_epoch=2,
                             owned={"regex-topic-a": [0, 1], "regex-topic-b": [0, 1]})
    assert response.member_epoch == 3 and response.assignment is not None
    assert ctx.named(response.assignment)["regex-topic-c"] == {0, 1, 2, 3}


def test_unrelated_topic_change_writes_nothing() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    before = len(ctx.written)
    ctx.create_topic("unrelated", 1)
    topic_change(ctx, "unrelated")
    assert len(ctx.written) == before and ctx.group().group_epoch == 2


def test_deleted_matching_topic_is_revoked() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    ctx.delete_topic("regex-topic-b")
    topic_change(ctx, "regex-topic-b")
    assert ctx.group().group_epoch == 3
    assert ctx.group().resolved_regexes["regex-topic-.*"].topics == {"regex-topic-a"}
    assert regex_records(ctx)[-1] == ("regex-topic-.*", ("regex-topic-a",))


def test_periodic_refresh_finds_topics_the_listener_missed() -> None:
    ctx = context(session_timeout_ms=2 * REFRESH)
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    owned = {"regex-topic-a": [0, 1], "regex-topic-b": [0, 1]}
    ctx.create_topic("regex-topic-c", 1)  # no listener call
    ctx.advance(REFRESH - 1000)
    ctx.heartbeat(member_id="a", member_epoch=2, owned=owned)
    assert ctx.group().group_epoch == 2  # not due yet
    ctx.advance(1000)
    response = ctx.heartbeat(member_id="a", member_epoch=2, owned=owned)
    assert ctx.group().group_epoch == 3 and response.member_epoch == 3
    assert response.assignment is not None
    assert ctx.named(response.assignment)["regex-topic-c"] == {0}
    assert ctx.group().regex_refresh_ms == ctx.now


def test_periodic_refresh_without_change_rewrites_but_does_not_bump() -> None:
    ctx = context(regex_refresh_interval_ms=10000)
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    owned = {"regex-topic-a": [0, 1], "regex-topic-b": [0, 1]}
    ctx.advance(10000)
    ctx.heartbeat(member_id="a", member_epoch=2, owned=owned)
    assert ctx.group().group_epoch == 2
    assert len(regex_records(ctx)) == 2 and ctx.group().regex_refresh_ms == ctx.now


def test_shared_regex_is_resolved_once_and_removed_with_its_last_member() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    ctx.heartbeat(member_id="b", regex="regex-topic-.*")
    assert len(regex_records(ctx)) == 1
    assert ctx.group().subscribed_regex_counts["regex-topic-.*"] == 2
    ctx.heartbeat(member_id="a", member_epoch=-1)
    assert len(regex_records(ctx)) == 1
    ctx.heartbeat(member_id="b", member_epoch=-1)
    assert regex_records(ctx)[-1] == ("regex-topic-.*", None)
    assert ctx.group().resolved_regexes == {} and ctx.group().subscription_metadata == {}


def test_switching_from_regex_to_names_drops_the_regex() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    response = ctx.heartbeat(member_id="a", member_epoch=2, topics=["other"], regex="",
                             owned={"regex-topic-a": [0, 1], "regex-topic-b": [0, 1]})
    assert ctx.group().group_epoch == 3
    assert regex_records(ctx)[-1] == ("regex-topic-.*", None)
    assert ctx.member("a").subscribed_topic_regex is None
    assert ctx.named(response.assignment) == {}  # revoke first
    response = ctx.heartbeat(member_id="a", member_epoch=2, owned={})
    assert response.member_epoch == 3
    assert ctx.named(response.assignment) == {"other": {0, 1, 2}}


def test_changing_the_regex_resolves_the_new_one() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-a")
    response = ctx.heartbeat(member_id="a", member_epoch=2, regex="regex-topic-b",
                             owned={"regex-topic-a": [0, 1]})
    assert ctx.group().group_epoch == 3
    assert regex_records(ctx)[1:] == [("regex-topic-a", None),
                                      ("regex-topic-b", ("regex-topic-b",))]
    assert ctx.named(response.assignment) == {}  # revoke first
    response = ctx.heartbeat(member_id="a", member_epoch=2, owned={})
    assert ctx.named(response.assignment) == {"regex-topic-b": {0, 1}}


def test_session_timeout_of_the_last_regex_member_tombstones_the_regex() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    ctx.advance(45000)
    assert regex_records(ctx)[-1] == ("regex-topic-.*", None)


def test_replay_rebuilds_the_resolution() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    ctx.heartbeat(member_id="b", topics=["other"])
    shard = new_shard(0)
    for offset, (key, value) in enumerate(ctx.written):
        shard.replay(offset, key, value)
    group = shard.groups["g"]
    assert group.resolved_regexes == ctx.group().resolved_regexes
    assert group.subscribed_regex_counts == {"regex-topic-.*": 1}
    assert group.regex_refresh_ms == ctx.group().regex_refresh_ms


def test_record_value_layout() -> None:
    ctx = context()
    ctx.heartbeat(member_id="a", regex="regex-topic-a")
    (key, value), = [(k, v) for k, v in ctx.written
                     if isinstance(k, ConsumerGroupRegularExpressionKey)]
    assert key.group_id == "g"
    assert isinstance(value, ConsumerGroupRegularExpressionValue)
    assert (value.topics, value.timestamp) == (("regex-topic-a",), ctx.now)


# ------------------------------------------------------------------------------ in the background
def background() -> ConsumerGroupContext:
    """As the server runs: an offloader, so regexes are resolved off the request path (the
    targets still computed inline, to keep the steps few)."""
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0,
                                                     assignor_offload=False), offload=True)
    ctx.create_topic("regex-topic-a", 2)
    ctx.create_topic("regex-topic-b", 2)
    ctx.create_topic("other", 3)
    return ctx


def test_named_topics_come_first_and_the_regex_matches_at_a_later_heartbeat() -> None:
    ctx = background()
    first = ctx.heartbeat(member_id="a", topics=["other"], regex="regex-topic-.*")
    assert ctx.named(first.assignment) == {"other": {0, 1, 2}}  # the regex: nothing yet
    assert regex_records(ctx) == []  # nothing resolved on the request path
    assert first.heartbeat_interval_ms < 100  # its regex is pending: come back soon
    assert ctx.finish_tasks() == 1  # the resolution, in the background
    assert regex_records(ctx) == [("regex-topic-.*", ("regex-topic-a", "regex-topic-b"))]
    assert ctx.group().group_epoch == 3  # its topics changed the subscription
    ctx.advance(0)  # the assign timer the bump armed computes the target
    later = ctx.heartbeat(member_id="a", member_epoch=2, owned={"other": [0, 1, 2]})
    assert ctx.named(later.assignment) == {"other": {0, 1, 2}, "regex-topic-a": {0, 1},
                                           "regex-topic-b": {0, 1}}


def test_a_topic_change_resolves_in_the_background_and_one_resolution_runs_at_a_time() -> None:
    ctx = background()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    ctx.create_topic("regex-topic-c", 4)
    topic_change(ctx, "regex-topic-c")  # while the first resolution is in flight
    assert ctx.offloader is not None and len(ctx.offloader.tasks) == 1
    ctx.finish_tasks()  # the first one, without regex-topic-c; then the one it was behind
    assert ctx.finish_tasks() == 1
    assert ctx.group().resolved_regexes["regex-topic-.*"].topics == {
        "regex-topic-a", "regex-topic-b", "regex-topic-c"}
    assert ctx.finish_tasks() == 0


def test_a_result_for_a_regex_nobody_uses_any_more_writes_nothing_for_it() -> None:
    ctx = background()
    ctx.heartbeat(member_id="a", regex="regex-topic-.*")
    ctx.heartbeat(member_id="a", member_epoch=2, topics=["other"], regex="")
    ctx.finish_tasks()
    assert regex_records(ctx) == []
    assert "regex-topic-.*" not in ctx.group().resolved_regexes


def test_resolve_all_matches_whole_names_and_times_itself() -> None:
    found, took_ms = consumer_regex.resolve_all((("t-.*", "x"), ("t-1", "t-2", "u-1", "x")))
    assert found == {"t-.*": ("t-1", "t-2"), "x": ("x",)} and took_ms >= 0
