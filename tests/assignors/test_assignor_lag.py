"""Property and golden tests of the ``lag`` assignor (seed 001)."""

from __future__ import annotations

import dataclasses
import pickle
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignors import (
    LAG_OFFSET_RESET_CONFIG,
    LAG_STICKINESS_TOLERANCE_CONFIG,
    AssignmentSpec,
    LagAssignor,
    MemberSpec,
    OffsetReset,
    PartitionOffsets,
    TopicMetadata,
    get_assignor,
    partition_lags,
)
from assignors import lag as lag_module
from assignors._lag_reference import assign_reference

from .assignor_checks import (
    build,
    check_per_topic_balance,
    check_valid,
    group_strategy,
    integers,
    lists_of,
    sampled,
    topic_id,
    with_current,
)
from .test_assignor_uniform import change

PROPS = settings(max_examples=120, deadline=None)
T0 = topic_id(0)


def lags_for(data: st.DataObject, topics: list[TopicMetadata]) -> dict:
    return {
        t.topic_id: data.draw(lists_of(integers(0, 1000), min_size=t.partition_count,
                                       max_size=t.partition_count), label=f"lags {t.name}")
        for t in topics
    }


@PROPS
@given(group_strategy(), st.data())
def test_valid_balanced_deterministic(group, data) -> None:
    members, topics = group
    lags = lags_for(data, topics)
    spec = build(members, topics, lags=lags)
    assignor = LagAssignor()
    result = assignor.assign(spec)
    check_valid(members, topics, result)
    check_per_topic_balance(members, topics, result)
    assert assignor.assign(spec) == result
    assert pickle.loads(pickle.dumps(assignor)).assign(pickle.loads(pickle.dumps(spec))) == result
    assert assignor.assign(build(members[::-1], topics[::-1], lags=lags)) == result


@PROPS
@given(group_strategy(), st.data())
def test_join_or_leave_is_sticky(group, data) -> None:
    """With a large tolerance, per topic, members keep as many partitions as they can."""
    members, topics = group
    lags = lags_for(data, topics)
    assignor = LagAssignor(stickiness_tolerance=10.0)
    before = assignor.assign(build(members, topics, lags=lags))
    same = len({m.subscribed_topic_ids for m in members}) == 1
    after_members = change(data, with_current(members, before), topics, same=same)
    after = assignor.assign(build(after_members, topics, lags=lags))
    check_valid(after_members, topics, after)
    check_per_topic_balance(after_members, topics, after)
    for m in after_members:
        if m.member_id not in before.members:
            continue
        for t in topics:
            old = set(before.members[m.member_id].get(t.topic_id, ()))
            new = set(after.members[m.member_id].get(t.topic_id, ()))
            assert len(old & new) == min(len(old), len(new)), (m.member_id, t.name)


@pytest.mark.slow
@PROPS
@given(group_strategy(), st.data())
def test_lag_noise_moves_nothing(group, data) -> None:
    members, topics = group
    lags = {
        t.topic_id: data.draw(lists_of(integers(10_000, 11_000), min_size=t.partition_count,
                                       max_size=t.partition_count))
        for t in topics
    }
    assignor = LagAssignor()
    before = assignor.assign(build(members, topics, lags=lags))
    noise = integers(-100, 100)
    noisy = {tid: [v + data.draw(noise) for v in row] for tid, row in lags.items()}
    after = assignor.assign(build(with_current(members, before), topics, lags=noisy))
    assert after == before


def _two_consumers() -> list[MemberSpec]:
    return [MemberSpec("C0", frozenset({T0})), MemberSpec("C1", frozenset({T0}))]


def test_seed_worked_example() -> None:
    topics = [TopicMetadata(T0, "t0", 3)]
    spec = build(_two_consumers(), topics, lags={T0: [100_000, 60_000, 50_000]})
    assert LagAssignor().assign(spec).members == {"C0": {T0: (0,)}, "C1": {T0: (1, 2)}}


def test_seed_worked_example_from_offsets() -> None:
    topics = [TopicMetadata(T0, "t0", 3)]
    offsets = PartitionOffsets(
        log_start=[0, 0, 0], log_end=[100_000, 160_000, 50_000], committed=[0, 100_000, -1]
    )
    earliest = {LAG_OFFSET_RESET_CONFIG: "earliest"}
    spec = build(_two_consumers(), topics, offsets={T0: offsets}, options=earliest)
    assert list(partition_lags(spec, 0, OffsetReset.EARLIEST)) == [100_000, 60_000, 50_000]
    assert list(partition_lags(spec, 0, OffsetReset.LATEST)) == [100_000, 60_000, 0]
    assert LagAssignor().assign(spec).members == {"C0": {T0: (0,)}, "C1": {T0: (1, 2)}}
    latest = AssignmentSpec.build(_two_consumers(), topics, offsets={T0: offsets})
    assert get_assignor("lag", offset_reset="earliest").assign(latest).members == {
        "C0": {T0: (0,)}, "C1": {T0: (1, 2)},
    }
    # latest: p2 has no lag, so it goes by counts (tied), then by lag: to C1 again
    assert LagAssignor().assign(latest).members == {"C0": {T0: (0,)}, "C1": {T0: (1, 2)}}


def test_zero_lag_partitions_do_not_pile_up() -> None:
    topics = [TopicMetadata(topic_id(i), f"t{i}", 1) for i in range(10)]
    members = [
        MemberSpec("C0", frozenset(t.topic_id for t in topics)),
        MemberSpec("C1", frozenset(t.topic_id for t in topics)),
    ]
    lags = {t.topic_id: [0] for t in topics}
    lags[topic_id(0)] = [5]
    result = LagAssignor().assign(build(members, topics, lags=lags)).members
    assert {m: len(ts) for m, ts in result.items()} == {"C0": 5, "C1": 5}


def test_big_lag_change_rebalances() -> None:
    topics = [TopicMetadata(T0, "t0", 4)]
    lags = {T0: [100, 100, 100, 100]}
    first = LagAssignor().assign(build(_two_consumers(), topics, lags=lags))
    skewed = {T0: [0, 0, 0, 0]}
    for mid in ("C0",):
        for p in first.members[mid][T0]:
            skewed[T0][p] = 10_000
    again = LagAssignor().assign(build(with_current(_two_consumers(), first), topics, lags=skewed))
    assert {len(v[T0]) for v in again.members.values()} == {2}
    lag_of = {m: sum(skewed[T0][p] for p in v[T0]) for m, v in again.members.items()}
    assert lag_of["C0"] == lag_of["C1"]
    strict = build(with_current(_two_consumers(), first), topics, lags=skewed,
                   options={LAG_STICKINESS_TOLERANCE_CONFIG: 10})
    assert LagAssignor().assign(strict) == first


def test_options_are_validated() -> None:
    with pytest.raises(ValueError):
        LagAssignor(offset_reset="none")
    with pytest.raises(ValueError):
        LagAssignor(stickiness_tolerance=-1)
    with pytest.raises(ValueError):
        LagAssignor(stickiness_tolerance=11)


# --- equivalence with the reference implementation of the rule ---------------------------

def _reference(spec: AssignmentSpec, tolerance: float = 0.2,
               reset: OffsetReset = OffsetReset.LATEST):
    return assign_reference(spec, lambda t: partition_lags(spec, t, reset), tolerance)


_LAG_VALUES = {"ties": integers(0, 3), "wide": integers(0, 10**12), "zero": st.just(0)}


def _lag_rows(data: st.DataObject, topics: list[TopicMetadata]) -> dict:
    """Lags with many ties and zeros, or spread out, or all zero."""
    kind = data.draw(sampled(("ties", "wide", "zero")), label="lag kind")
    return {
        t.topic_id: data.draw(lists_of(_LAG_VALUES[kind], min_size=t.partition_count,
                                       max_size=t.partition_count), label=f"lags {t.name}")
        for t in topics
    }


@pytest.fixture(params=["default", "rankings"])
def ranking_mode(request, monkeypatch):
    """Run once with the default thresholds and once with rankings for every topic."""
    if request.param == "rankings":
        monkeypatch.setattr(lag_module, "RANKING_MIN_MEMBERS", 0)
        monkeypatch.setattr(lag_module, "RANKING_MIN_TOPICS", 1)
    return request.param


@pytest.mark.slow
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # it only patches constants
@given(group_strategy(), st.data(), st.sampled_from([0.0, 0.2, 1.0, 10.0]))
def test_matches_reference(ranking_mode, group, data, tolerance) -> None:
    members, topics = group
    lags = _lag_rows(data, topics)
    assignor = LagAssignor(stickiness_tolerance=tolerance)
    spec = build(members, topics, lags=lags)
    first = assignor.assign(spec)
    assert first == _reference(spec, tolerance)
    # again from that assignment, after a join or leave and new lags
    same = len({m.subscribed_topic_ids for m in members}) == 1
    after = change(data, with_current(members, first), topics, same=same)
    spec = build(after, topics, lags=_lag_rows(data, topics))
    assert assignor.assign(spec) == _reference(spec, tolerance)


def _random_group(rng: random.Random, members: int, topics: int, buckets: int):
    tops = [TopicMetadata(topic_id(i), f"t{i}", rng.randrange(0, 9)) for i in range(topics)]
    subs = [frozenset(t.topic_id for t in tops if rng.randrange(buckets) == b % buckets or
                      buckets == 1) for b in range(buckets)]
    group = [MemberSpec(f"m{i:03d}", subs[rng.randrange(buckets)]) for i in range(members)]
    lags = {t.topic_id: [rng.choice((0, 0, 1, rng.randrange(10**6)))
                         for _ in range(t.partition_count)] for t in tops}
    return group, tops, lags


@pytest.mark.parametrize("seed", range(12))
def test_matches_reference_large_groups(seed) -> None:
    """Groups with more subscribers than partitions per topic (the ranking path)."""
    rng = random.Random(seed)
    group, tops, lags = _random_group(rng, rng.randrange(50, 160), rng.randrange(5, 40),
                                      rng.choice((1, 2, 3)))
    assignor = LagAssignor(stickiness_tolerance=rng.choice((0.0, 0.2)))
    tolerance = assignor.stickiness_tolerance
    spec = build(group, tops, lags=lags)
    first = assignor.assign(spec)
    assert first == _reference(spec, tolerance)
    for _ in range(3):
        current = with_current(group, first)
        if rng.random() < 0.5:
            del current[rng.randrange(len(current))]
        else:
            current.append(MemberSpec("new", rng.choice(current).subscribed_topic_ids))
        group = [m for m in current if m.member_id != "new"]
        noisy = {tid: [max(0, v + rng.randrange(-5, 6)) if rng.random() < 0.9 else
                       rng.randrange(10**6) for v in row] for tid, row in lags.items()}
        spec = build(current, tops, lags=noisy)
        result = assignor.assign(spec)
        assert result == _reference(spec, tolerance)
        first = result if len(current) == len(group) else assignor.assign(
            build(group, tops, lags=noisy))


def test_negative_lags_use_the_reference() -> None:
    spec = build(_two_consumers(), [TopicMetadata(T0, "t0", 3)], lags={T0: [1, 2, 3]})
    odd = dataclasses.replace(spec, lags=((5, -1, 3),))
    assert LagAssignor().assign(odd) == _reference(odd)
