"""Property tests on overlapping and random subscriptions: the general heterogeneous path
of ``uniform`` (one connected group, every member with its own subscription), ``range``
and ``lag`` on the same inputs, with and without racks."""

from __future__ import annotations

import argparse
import os
import pickle
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import (
    AssignmentSpec,
    GroupAssignment,
    LagAssignor,
    MemberSpec,
    RangeAssignor,
    TopicMetadata,
    UniformAssignor,
    bench,
    structure,
)
from assignors.bench_input import DEFAULT_WINDOW, BenchCase, build_spec
from assignors.racks import class_rack_flow, split_by_rack
from assignors.structure import Component

from .assignor_checks import (
    BOOLEANS,
    RACKS,
    build,
    check_most_balanced,
    check_moves_required,
    check_per_topic_balance,
    check_rack_preference,
    check_uniform_balance,
    check_valid,
    held_by,
    integers,
    lists_of,
    overlapping_strategy,
    sampled,
    sets_of,
    topic_id,
    with_current,
)
from .test_assignor_range import check_co_partitioned
from .test_assignor_uniform import change

UNIFORM = UniformAssignor()
PROPS = settings(max_examples=int(os.environ.get("ASSIGNOR_EXAMPLES", "150")), deadline=None)
"""``ASSIGNOR_EXAMPLES=5000`` for a longer run."""


@pytest.mark.slow
@PROPS
@given(overlapping_strategy())
def test_uniform_valid_most_balanced_deterministic(group) -> None:
    members, topics = group
    spec = build(members, topics)
    result = UNIFORM.assign(spec)
    check_valid(members, topics, result)
    check_uniform_balance(members, topics, result)
    check_most_balanced(members, topics, result)
    assert UNIFORM.assign(spec) == result
    assert UNIFORM.assign(pickle.loads(pickle.dumps(spec))) == result
    assert UNIFORM.assign(build(members[::-1], topics[::-1])) == result


@pytest.mark.slow
@PROPS
@given(overlapping_strategy())
def test_uniform_result_is_kept(group) -> None:
    """Assigning again from the result changes nothing."""
    members, topics = group
    first = UNIFORM.assign(build(members, topics))
    assert UNIFORM.assign(build(with_current(members, first), topics)) == first


@pytest.mark.slow
@PROPS
@given(overlapping_strategy(), st.data())
def test_uniform_join_leave_or_resubscribe_is_sticky(group, data) -> None:
    members, topics = group
    before = UNIFORM.assign(build(members, topics))
    current = with_current(members, before)
    if data.draw(BOOLEANS, label="resubscribe"):
        who = data.draw(integers(0, len(current) - 1), label="who")
        ids = tuple(t.topic_id for t in topics)
        subs = frozenset(data.draw(sets_of(ids), label="subs"))
        m = current[who]
        after_members = [*current[:who],
                         MemberSpec(m.member_id, subs, rack=m.rack, assignment=m.assignment),
                         *current[who + 1:]]
    else:
        after_members = change(data, current, topics, same=False)
    after = UNIFORM.assign(build(after_members, topics))
    check_valid(after_members, topics, after)
    check_uniform_balance(after_members, topics, after)
    check_most_balanced(after_members, topics, after)
    check_moves_required(after_members, topics, before, after)


@pytest.mark.slow
@PROPS
@given(overlapping_strategy(racks="single"), st.data())
def test_uniform_prefers_local_replicas(group, data) -> None:
    members, topics = group
    spec = build(members, topics)
    first = UNIFORM.assign(spec)
    current_given = any(m.assignment for m in members)
    check_rack_preference(members, topics, None if not current_given else _current(spec),
                          first)
    after_members = change(data, with_current(members, first), topics, same=False)
    after = UNIFORM.assign(build(after_members, topics))
    check_rack_preference(after_members, topics, first, after)


def _current(spec: AssignmentSpec) -> GroupAssignment:
    """The spec's current assignment, as an assignment."""
    return GroupAssignment(spec.member_ids, spec.topic_ids, spec.current_topics,
                           spec.current_partitions)


@pytest.mark.slow
@PROPS
@given(overlapping_strategy(), st.data())
def test_range_on_overlapping_subscriptions(group, data) -> None:
    members, topics = group
    assignor = RangeAssignor()
    result = assignor.assign(build(members, topics))
    check_valid(members, topics, result)
    check_per_topic_balance(members, topics, result)
    check_co_partitioned(members, topics, result)
    assert assignor.assign(build(members[::-1], topics[::-1])) == result
    after_members = change(data, with_current(members, result), topics, same=False)
    after = assignor.assign(build(after_members, topics))
    check_valid(after_members, topics, after)
    check_per_topic_balance(after_members, topics, after)
    check_co_partitioned(after_members, topics, after)


@pytest.mark.slow
@PROPS
@given(overlapping_strategy(max_members=12), st.sampled_from((*RACKS, None)))
def test_range_keeps_its_own_assignment(group, rack) -> None:
    """Range's answer fed back is its answer again (every topic, sparse ones included, is
    left as it is), and a member joining takes nothing from a topic with fewer partitions
    than subscribers that is fully held: every holder keeps its partition."""
    members, topics = group
    assignor = RangeAssignor()
    result = assignor.assign(build(members, topics))
    again = with_current(members, result)
    assert assignor.assign(build(again, topics)) == result
    joiner = MemberSpec("new", frozenset(t.topic_id for t in topics), rack=rack)
    joined = assignor.assign(build([*again, joiner], topics))
    check_valid([*again, joiner], topics, joined)
    subscribers = {t.topic_id: sum(t.topic_id in m.subscribed_topic_ids for m in members)
                   for t in topics}
    for m, ts in result.members.items():
        for tid, parts in ts.items():
            if len(parts) == 1 and subscribers[tid] >= next(
                    t.partition_count for t in topics if t.topic_id == tid):
                assert joined.members[m][tid] == parts, (m, tid)


def _range_by_rack(members: list[MemberSpec], topic: TopicMetadata) -> dict[str, int]:
    """Range's rule stated directly for one topic with fewer partitions than subscribers
    and no current owners: the first ``n`` members (member id order) get one each; if some
    member's rack lacks a replica of some partition, each partition in order goes to the
    first of them on one of its replicas' racks that has none yet, and the partitions left
    go in order to the members left."""
    needy = sorted(m.member_id for m in members)[:topic.partition_count]
    rack = {m.member_id: m.rack for m in members}
    assert topic.partition_racks is not None
    replicas = [set(topic.partition_racks[p]) for p in range(topic.partition_count)]
    if all(r is None or r in racks for r in rack.values() for racks in replicas):
        return {m: p for p, m in enumerate(needy)}
    got: dict[str, int] = {}
    left = []
    for p in range(topic.partition_count):
        taker = next((m for m in needy if m not in got and rack[m] in replicas[p]), None)
        if taker is None:
            left.append(p)
        else:
            got[taker] = p
    rest = iter(left)
    return {m: got[m] if m in got else next(rest) for m in needy}


@pytest.mark.slow
@PROPS
@given(st.data())
def test_range_rack_matching_of_sparse_topics(data) -> None:
    """A topic with fewer partitions than subscribers, assigned from scratch with racks:
    exactly :func:`_range_by_rack`."""
    size = data.draw(integers(2, 14), label="members")
    n = data.draw(integers(1, size - 1), label="partitions")
    replicas = sets_of(RACKS, max_size=2)
    topic = TopicMetadata(topic_id(0), "t0", n, data.draw(lists_of(replicas, min_size=n,
                                                                   max_size=n)))
    members = [MemberSpec(f"m{i:02d}", frozenset({topic.topic_id}),
                          rack=data.draw(sampled((*RACKS, None))))
               for i in range(size)]
    result = RangeAssignor().assign(build(members, [topic])).members
    expected = _range_by_rack(members, topic)
    assert {m: ts[topic.topic_id] for m, ts in result.items() if ts} == {
        m: (p,) for m, p in expected.items()}


@pytest.mark.slow
@PROPS
@given(overlapping_strategy(), st.data())
def test_lag_on_overlapping_subscriptions(group, data) -> None:
    members, topics = group
    lags = {
        t.topic_id: data.draw(lists_of(integers(0, 1000), min_size=t.partition_count,
                                       max_size=t.partition_count), label=f"lags {t.name}")
        for t in topics
    }
    assignor = LagAssignor()
    result = assignor.assign(build(members, topics, lags=lags))
    check_valid(members, topics, result)
    check_per_topic_balance(members, topics, result)
    after_members = change(data, with_current(members, result), topics, same=False)
    after = assignor.assign(build(after_members, topics, lags=lags))
    check_valid(after_members, topics, after)
    check_per_topic_balance(after_members, topics, after)
    # survivors keep partitions of every topic up to their new count (tolerance permitting)
    old, new = held_by(result), held_by(after)
    assert set(new) == {m.member_id for m in after_members}
    assert all(m in old or m == "new" for m in new)


def _max_matching(pool, needs, racks, partition_racks, rack_sets) -> int:
    """Brute force: the most receivers that can get a partition on their rack."""
    slots = [k for k, need in enumerate(needs) for _ in range(need)]
    match: dict[int, int] = {}  # slot -> partition

    def augment(slot: int, seen: set[int]) -> bool:
        for p in pool:
            if racks[slots[slot]] in rack_sets[partition_racks[p]] and p not in seen:
                seen.add(p)
                holder = next((s for s, q in match.items() if q == p), None)
                if holder is None or augment(holder, seen):
                    match[slot] = p
                    return True
        return False

    return sum(augment(s, set()) for s in range(len(slots)))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_split_by_rack_matches_the_most(data) -> None:
    rack_sets = (frozenset({0}), frozenset({1}), frozenset({0, 1}), frozenset({1, 2}),
                 frozenset({0, 1, 2}), frozenset({2}))
    size = data.draw(integers(0, 12))
    rack_set = integers(0, len(rack_sets) - 1)
    partition_racks = [data.draw(rack_set) for _ in range(size)]
    pool = sorted(data.draw(st.sets(integers(0, max(size - 1, 0)), max_size=size))) \
        if size else []
    receivers = data.draw(integers(1, 4))
    rack = sampled((-1, 0, 1, 2))
    racks = [data.draw(rack) for _ in range(receivers)]
    needs = [0] * receivers
    receiver = integers(0, receivers - 1)
    for _ in pool:
        needs[data.draw(receiver)] += 1
    grants = split_by_rack(pool, needs, racks, partition_racks, rack_sets)
    assert [len(g) for g in grants] == needs
    assert sorted(p for g in grants for p in g) == pool
    assert all(g == sorted(g) for g in grants)
    matched = sum(1 for k, g in enumerate(grants) for p in g
                  if racks[k] in rack_sets[partition_racks[p]])
    assert matched == _max_matching(pool, needs, racks, partition_racks, rack_sets)


def test_class_rack_flow_needs_an_augmenting_path() -> None:
    # greedy would give class {0, 1} to rack 0 and leave rack 1 short; the flow reroutes
    rack_sets = (frozenset({0, 1}), frozenset({0}))
    supply = {0: 1, 1: 1}
    demand = {0: 1, 1: 1}
    flow = class_rack_flow(dict(supply), dict(demand), rack_sets)
    assert sum(flow.values()) == 2
    assert flow.get((1, 0)) == 1 and flow.get((0, 1)) == 1


def test_big_overlapping_group_matches_the_bench_shape() -> None:
    """A scaled-down bench input: every member at the average, one joining moves only
    what it needs, and racks are honoured where replicas allow."""
    rng = random.Random(7)
    n_topics, window, parts = 60, 12, 10
    topics = [TopicMetadata(topic_id(i), f"t{i:02d}", parts,
                            [{RACKS[(p + j) % 3] for j in range(rng.randint(1, 2))}
                             for p in range(parts)]) for i in range(n_topics)]
    ids = [t.topic_id for t in topics]
    members = [MemberSpec(f"m{i:03d}", frozenset(ids[(7 * i + j) % n_topics]
                                                 for j in range(window)), rack=RACKS[i % 3])
               for i in range(59)]
    first = UNIFORM.assign(build(members, topics))
    check_valid(members, topics, first)
    check_most_balanced(members, topics, first)
    joined = [*with_current(members, first),
              MemberSpec("new", frozenset(ids[(7 * 59 + j) % n_topics] for j in range(window)),
                         rack="r2")]
    after = UNIFORM.assign(build(joined, topics))
    check_valid(joined, topics, after)
    check_most_balanced(joined, topics, after)
    check_moves_required(joined, topics, first, after)
    loads = {m: sum(map(len, ts.values())) for m, ts in after.members.items()}
    assert set(loads.values()) == {10}
    old, new = held_by(first), held_by(after)
    moved = sum(len(old[m] - new[m]) for m in old)
    assert moved < 2 * 10  # one member's share, plus short chains


def test_groups_of_different_density_joined_by_one_member() -> None:
    """Two overlapping groups, one with ten times the partitions per member of the other,
    joined by one member: no common target fits, the result is still the most balanced
    (and sticky when a member leaves)."""
    dense = [TopicMetadata(topic_id(i), f"a{i:02d}", 20) for i in range(30)]
    sparse = [TopicMetadata(topic_id(100 + i), f"b{i:02d}", 2) for i in range(30)]
    topics = dense + sparse
    members = [MemberSpec(f"a{i:02d}", frozenset(t.topic_id for t in dense[i:i + 8]))
               for i in range(30)]
    members += [MemberSpec(f"b{i:02d}", frozenset(t.topic_id for t in sparse[i:i + 8]))
                for i in range(30)]
    members.append(MemberSpec("bridge", frozenset({dense[0].topic_id, sparse[0].topic_id})))
    first = UNIFORM.assign(build(members, topics))
    check_valid(members, topics, first)
    check_most_balanced(members, topics, first)
    after_members = [m for m in with_current(members, first) if m.member_id != "a05"]
    after = UNIFORM.assign(build(after_members, topics))
    check_valid(after_members, topics, after)
    check_most_balanced(after_members, topics, after)
    check_moves_required(after_members, topics, first, after)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(overlapping_strategy(max_members=12, max_topics=10))
def test_components_both_ways_agree(group) -> None:
    """Big groups are split into components by subset checks, small ones topic by topic:
    the two give the same components."""
    members, topics = group
    spec = build(members, topics)

    def shape(comps: list[Component]) -> list[tuple[tuple[int, ...], ...]]:
        return [(c.members, c.topics, c.subscriptions) for c in comps]

    small = shape(structure.components(spec))
    saved = structure._SMALL
    structure._SMALL = -1
    try:
        assert shape(structure.components(spec)) == small
    finally:
        structure._SMALL = saved


@pytest.mark.parametrize("argv", [
    ["--subscriptions", "overlapping", "--window", "4", "--stride", "3"],
    ["--subscriptions", "overlapping", "--incremental", "--racks", "5"],
    ["--subscriptions", "random", "--window", "3", "--incremental"],
    ["--assignor", "range", "--subscriptions", "overlapping", "--racks", "5"],
    ["--assignor", "lag", "--subscriptions", "random", "--incremental"],
])
def test_bench_overlapping_and_random(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args([*argv, "--members", "20", "--topics", "10",
                              "--partitions-per-topic", "5", "--runs", "2"])
    result = bench.run(args)
    assert result["subscriptions"] == args.subscriptions
    assert result["window"] == min(args.window or DEFAULT_WINDOW[args.subscriptions], 10)
    assert ("stride" in result) == (args.subscriptions == "overlapping")


def test_bench_window_needs_a_pattern_that_has_one() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    with pytest.raises(ValueError):
        bench.run(parser.parse_args(["--window", "3", "--members", "4", "--runs", "1"]))


def test_bench_overlapping_input_is_one_group() -> None:
    spec = build_spec(BenchCase("uniform", 40, 30, 2, "overlapping", window=5, stride=7),
                      UNIFORM)
    assert len(structure.components(spec)) == 1
    subs = {spec.subscriptions[s] for s in spec.member_subscriptions}
    assert all(len(s) == 5 for s in subs) and len(subs) == 30  # 40 members, 30 offsets
    joined = build_spec(BenchCase("uniform", 40, 30, 2, "random", True, window=4), UNIFORM)
    assert joined.member_count == 40
    assert sum(map(len, joined.current_topics)) > 0
