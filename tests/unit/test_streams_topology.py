"""The streams topology model, its validation and its configuration against the metadata
(``coordinator/groups/streams/topology.py``; Kafka 4.3's StreamsTopology and
InternalTopicManager)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from kio.schema.streams_group_heartbeat.v0 import request as req
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32

from coordinator.groups.streams.topology import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    ConfiguredTopology,
    CopartitionGroup,
    InternalTopic,
    Subtopology,
    TopicInfo,
    Topology,
    configure,
    describe_view,
    endpoint_partitions,
    java_hash_order,
    kafka_order,
    metadata_hash,
    summarize,
    validate,
    validate_changelog_partitions,
    validate_topic_names,
)
from coordinator.metadata.image import MetadataImage, TopicImage
from coordinator.runtime import CoordinatorError
from coordinator.testing.consumer_group_context import Topic, Topics
from protocol import ErrorCode
from storage.records import StreamsGroupTopologyKey, decode_record, encode_record
from storage.records.streams import StreamsGroupTopologyValue

# --- helpers --------------------------------------------------------------------------------------


def topics(**partitions: int) -> Topics:
    out = Topics()
    for i, (name, count) in enumerate(partitions.items()):
        out.by_name[name] = Topic(name, uuid.UUID(int=i + 1), count)
    return out


def add(ts: Topics, name: str, partitions: int, topic_id: int | None = None) -> None:
    tid = uuid.UUID(int=topic_id if topic_id is not None else 1000 + len(ts.by_name))
    ts.by_name[name] = Topic(name, tid, partitions)


def grow(ts: Topics, name: str, partitions: int) -> None:
    old = ts.by_name[name]
    ts.by_name[name] = Topic(name, old.topic_id, partitions)


def sub(sid: str, sources: tuple[str, ...] = (), *, sinks: tuple[str, ...] = (),
        repartition: tuple[TopicInfo, ...] = (), changelogs: tuple[str, ...] = (),
        copartition: tuple[CopartitionGroup, ...] = ()) -> Subtopology:
    return Subtopology(sid, source_topics=sources, repartition_sink_topics=sinks,
                       repartition_source_topics=repartition,
                       state_changelog_topics=tuple(TopicInfo(c) for c in changelogs),
                       copartition_groups=copartition)


def topo(*subs: Subtopology, epoch: int = 0) -> Topology:
    return Topology(epoch, subs)


def error_of(fn: Callable[..., object], *args: object) -> CoordinatorError:
    with pytest.raises(CoordinatorError) as info:
        fn(*args)
    return info.value


def kio_topic(name: str, partitions: int = 0, rf: int = 0,
              configs: tuple[tuple[str, str], ...] = ()) -> req.TopicInfo:
    return req.TopicInfo(name=TopicName(name), partitions=i32(partitions),
                         replication_factor=i16(rf),
                         topic_configs=tuple(req.KeyValue(key=k, value=v) for k, v in configs))


def kio_topology() -> req.Topology:
    """Deliberately unsorted lists, to show that their order is kept."""
    return req.Topology(epoch=i32(3), subtopologies=(
        req.Subtopology(
            subtopology_id="1",
            source_topics=(TopicName("zeta"), TopicName("alpha")),
            source_topic_regex=(),
            state_changelog_topics=(
                kio_topic("app-s2-changelog", rf=-1, configs=(("z.cfg", "1"), ("a.cfg", "2"))),
                kio_topic("app-s1-changelog", rf=3),
            ),
            repartition_sink_topics=(TopicName("app-r2"), TopicName("app-r1")),
            repartition_source_topics=(),
            copartition_groups=(req.CopartitionGroup(source_topics=(i16(1), i16(0))),),
        ),
        req.Subtopology(
            subtopology_id="0",
            source_topics=(),
            source_topic_regex=(),
            state_changelog_topics=(),
            repartition_sink_topics=(),
            repartition_source_topics=(kio_topic("app-r2", partitions=4),
                                       kio_topic("app-r1", configs=(("k", "v"),))),
            copartition_groups=(req.CopartitionGroup(repartition_source_topics=(i16(0), i16(1))),),
        ),
    ))


# --- the model ------------------------------------------------------------------------------------


def test_from_request_keeps_every_field_and_the_order_received() -> None:
    t = Topology.from_request(kio_topology())
    assert t.epoch == 3
    assert [s.subtopology_id for s in t.subtopologies] == ["1", "0"]
    first, second = t.subtopologies
    assert first.source_topics == ("zeta", "alpha")
    assert first.repartition_sink_topics == ("app-r2", "app-r1")
    assert first.state_changelog_topics == (
        TopicInfo("app-s2-changelog", 0, -1, (("z.cfg", "1"), ("a.cfg", "2"))),
        TopicInfo("app-s1-changelog", 0, 3),
    )
    assert first.copartition_groups == (CopartitionGroup(source_topics=(1, 0)),)
    assert second.repartition_source_topics == (
        TopicInfo("app-r2", 4), TopicInfo("app-r1", 0, 0, (("k", "v"),)))
    assert second.copartition_groups == (CopartitionGroup(repartition_source_topics=(0, 1)),)
    assert type(t.epoch) is int and type(second.repartition_source_topics[0].partitions) is int


def test_to_record_is_the_topology_as_received_and_survives_the_codec() -> None:
    t = Topology.from_request(kio_topology())
    value = t.to_record()
    assert isinstance(value, StreamsGroupTopologyValue)
    assert value.epoch == 3
    assert [s.subtopology_id for s in value.subtopologies] == ["1", "0"]
    cl = value.subtopologies[0].state_changelog_topics[0]
    assert (cl.name, cl.partitions, cl.replication_factor) == ("app-s2-changelog", 0, -1)
    assert [(c.key, c.value) for c in cl.topic_configs] == [("z.cfg", "1"), ("a.cfg", "2")]
    assert value.subtopologies[1].copartition_groups[0].repartition_source_topics == (0, 1)

    key, decoded = decode_record(*encode_record(StreamsGroupTopologyKey(group_id="g"), value))
    assert key == StreamsGroupTopologyKey(group_id="g")
    assert decoded == value
    back = Topology.from_record(decoded)
    assert back == t
    assert back.subtopologies == t.subtopologies  # same order, not only equal by id
    assert back.to_record() == value


def test_equality_is_by_epoch_and_subtopology_id_not_by_subtopology_order() -> None:
    a, b = sub("0", ("x",), sinks=("r",)), sub("1", repartition=(TopicInfo("r"),))
    assert topo(a, b) == topo(b, a)
    assert hash(topo(a, b)) == hash(topo(b, a))
    assert topo(a, b, epoch=1) != topo(a, b, epoch=0)
    assert topo(a, b) != topo(a)
    # the order inside a subtopology counts, as Kafka compares the record's lists
    assert topo(sub("0", ("x", "y"))) != topo(sub("0", ("y", "x")))
    assert topo(sub("0", ("x",), changelogs=("c",))) != topo(sub("0", ("x",)))
    configs = TopicInfo("c", configs=(("k", "v"),))
    assert topo(Subtopology("0", ("x",), state_changelog_topics=(configs,))) != \
        topo(Subtopology("0", ("x",), state_changelog_topics=(TopicInfo("c"),)))
    assert topo(a) != "not a topology"


def test_required_topics_are_sources_repartition_sources_and_changelogs() -> None:
    t = Topology.from_request(kio_topology())
    assert t.required_topics() == frozenset(
        {"zeta", "alpha", "app-s2-changelog", "app-s1-changelog", "app-r2", "app-r1"})
    only_sink = topo(sub("0", ("in",), sinks=("out-repartition",)))
    assert only_sink.required_topics() == frozenset({"in"})


def test_source_topic_map_covers_sources_and_repartition_sources() -> None:
    t = topo(sub("0", ("a", "b"), sinks=("r",), changelogs=("c0",)),
             sub("1", ("d",), repartition=(TopicInfo("r"),)))
    assert t.source_topic_map() == {"a": "0", "b": "0", "r": "1", "d": "1"}
    # a topic read by two subtopologies: the last in Kafka's order ("1" after "0")
    shared = topo(sub("1", ("t",)), sub("0", ("t",)))
    assert shared.source_topic_map() == {"t": "1"}


# --- validation -----------------------------------------------------------------------------------


def test_internal_topics_are_prohibited_with_kafkas_message() -> None:
    t = topo(sub("0", ("in", "__transaction_state"), sinks=("__consumer_offsets",),
                 changelogs=("__transaction_state",)))
    err = error_of(validate, t)
    assert err.code is ErrorCode.streams_invalid_topology
    assert err.message == ("Use of Kafka internal topics __transaction_state,__consumer_offsets "
                           "in a Kafka Streams topology is prohibited.")
    assert error_of(validate_topic_names, t).message == err.message


def test_internal_topics_are_reported_before_invalid_names() -> None:
    t = topo(sub("0", ("bad name", "__share_group_state")))
    assert error_of(validate, t).message == ("Use of Kafka internal topics __share_group_state "
                                             "in a Kafka Streams topology is prohibited.")


def test_invalid_topic_names_with_kafkas_message() -> None:
    t = topo(sub("0", ("ok", "a b"), repartition=(TopicInfo(".."),), changelogs=("x" * 250,)),
             sub("1", ("a b", "")))
    err = error_of(validate, t)
    assert err.code is ErrorCode.streams_invalid_topology
    assert err.message == f"Topic names a b,..,{'x' * 250}, are not valid topic names."


def test_changelog_topics_must_leave_the_partition_count_undefined() -> None:
    t = topo(Subtopology("0", ("in",), state_changelog_topics=(TopicInfo("ok-changelog"),
                                                               TopicInfo("bad-changelog", 3))))
    err = error_of(validate, t)
    assert err.code is ErrorCode.streams_invalid_topology
    assert err.message == ("Changelog topic bad-changelog must have an undefined partition count, "
                           "but it is set to 3.")
    assert error_of(validate_changelog_partitions, t).message == err.message
    validate_topic_names(t)  # names are fine: only the partition count is wrong


def test_names_are_checked_before_changelog_partitions() -> None:
    t = topo(Subtopology("0", ("a b",), state_changelog_topics=(TopicInfo("c", 3),)))
    assert error_of(validate, t).message == "Topic names a b are not valid topic names."


def test_a_valid_topology_passes() -> None:
    validate(Topology.from_request(kio_topology()))


# --- configure: source topics ---------------------------------------------------------------------


def test_summarize() -> None:
    assert summarize([]) == "<none>"
    assert summarize(["a"]) == "a"
    assert summarize(["a", "b", "c"]) == "a, b, c"
    assert summarize(["a", "b", "c", "d", "e"]) == "a, b, c and 2 additional topics"


def test_missing_source_topics() -> None:
    t = topo(sub("0", ("zz", "in", "b"), sinks=("r",), changelogs=("cl",)),
             sub("1", ("a",), repartition=(TopicInfo("r"),)))
    configured = configure(t, topics(**{"in": 2}), metadata_hash=42)
    assert configured == ConfiguredTopology(0, None, (), (
        MISSING_SOURCE_TOPICS, "Source topics a, b, zz are missing."), 42)
    assert not configured.is_ready
    assert configured.number_of_tasks("0") == 0


def test_missing_source_topics_are_summarized() -> None:
    t = topo(sub("0", ("e", "d", "c", "b", "a")))
    configured = configure(t, topics())
    assert configured.status == (
        MISSING_SOURCE_TOPICS, "Source topics a, b, c and 2 additional topics are missing.")


def test_ready_stateless_topology() -> None:
    configured = configure(topo(sub("0", ("in",))), topics(**{"in": 4}), metadata_hash=7)
    assert configured.is_ready and configured.status is None
    assert configured.internal_topics_to_create == ()
    assert configured.metadata_hash == 7
    assert configured.topology_epoch == 0
    assert configured.subtopologies is not None
    s0 = configured.subtopologies["0"]
    assert (s0.num_tasks, s0.stateful, dict(s0.input_partitions)) == (4, False, {"in": 4})
    assert configured.number_of_tasks("0") == 4
    assert configured.number_of_tasks("9") == 0


def test_topology_epoch_is_carried() -> None:
    assert configure(topo(sub("0", ("in",)), epoch=5), topics(**{"in": 1})).topology_epoch == 5


# --- configure: changelog topics ------------------------------------------------------------------


def test_missing_changelog_topic_is_reported_with_what_to_create() -> None:
    t = topo(Subtopology("0", ("in",), state_changelog_topics=(
        TopicInfo("app-store-changelog", 0, -1, (("cleanup.policy", "compact"),)),)))
    configured = configure(t, topics(**{"in": 2}))
    assert configured.status == (MISSING_INTERNAL_TOPICS,
                                 "Internal topics are missing: app-store-changelog")
    assert configured.internal_topics_to_create == (
        InternalTopic("app-store-changelog", 2, -1, (("cleanup.policy", "compact"),)),)
    assert not configured.is_ready
    # only internal topics are missing: the subtopologies are configured
    assert configured.subtopologies is not None
    s0 = configured.subtopologies["0"]
    assert s0.num_tasks == 2 and s0.stateful
    assert configured.number_of_tasks("0") == 2


@pytest.mark.parametrize(("rf", "created_rf"), [(0, -1), (-1, -1), (3, 3)])
def test_replication_factor_of_topics_to_create(rf: int, created_rf: int) -> None:
    t = topo(Subtopology("0", ("in",), state_changelog_topics=(TopicInfo("cl", 0, rf),)))
    configured = configure(t, topics(**{"in": 1}))
    assert configured.internal_topics_to_create == (InternalTopic("cl", 1, created_rf),)


def test_changelog_count_is_the_number_of_tasks() -> None:
    t = topo(sub("0", ("a", "b"), changelogs=("c0",)),
             sub("1", ("small",), changelogs=("c1a", "c1b")))
    configured = configure(t, topics(a=2, b=5, small=1))
    assert {(x.name, x.partitions) for x in configured.internal_topics_to_create} == {
        ("c0", 5), ("c1a", 1), ("c1b", 1)}
    assert configured.number_of_tasks("0") == 5
    assert configured.number_of_tasks("1") == 1


def test_changelog_count_follows_repartition_inputs() -> None:
    t = topo(sub("0", ("in",), sinks=("r",)),
             sub("1", repartition=(TopicInfo("r", 6),), changelogs=("c1",)))
    configured = configure(t, topics(**{"in": 2}))
    by_name = {x.name: x.partitions for x in configured.internal_topics_to_create}
    assert by_name == {"r": 6, "c1": 6}


def test_more_than_three_missing_internal_topics_are_summarized_in_name_order() -> None:
    t = topo(sub("0", ("in",), changelogs=("e", "d", "c", "b", "a")))
    configured = configure(t, topics(**{"in": 1}))
    assert configured.status == (MISSING_INTERNAL_TOPICS,
                                 "Internal topics are missing: a, b, c and 2 additional topics")
    assert [x.name for x in configured.internal_topics_to_create] == ["a", "b", "c", "d", "e"]


def test_existing_changelog_with_the_right_count_makes_the_topology_ready() -> None:
    configured = configure(topo(sub("0", ("in",), changelogs=("cl",))),
                           topics(**{"in": 3, "cl": 3}))
    assert configured.is_ready
    assert configured.internal_topics_to_create == ()
    assert configured.subtopologies is not None and configured.subtopologies["0"].stateful


def test_only_the_missing_internal_topics_are_to_be_created() -> None:
    t = topo(sub("0", ("in",), changelogs=("c1", "c2")))
    configured = configure(t, topics(**{"in": 3, "c1": 3}))
    assert configured.status == (MISSING_INTERNAL_TOPICS, "Internal topics are missing: c2")
    assert configured.internal_topics_to_create == (InternalTopic("c2", 3),)


def test_existing_changelog_with_another_count_is_incorrectly_partitioned() -> None:
    t = topo(sub("0", ("in",), changelogs=("app-store-changelog", "other-changelog")))
    configured = configure(t, topics(**{"in": 4, "app-store-changelog": 2}))
    assert configured == ConfiguredTopology(0, None, (), (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Existing topic app-store-changelog has different number of partitions: expected 4, "
        "found 2"))


def test_the_first_wrong_internal_topic_in_kafkas_order_is_named() -> None:
    t = topo(sub("0", ("in",), changelogs=("store-a-changelog", "store-b-changelog")))
    ts = topics(**{"in": 4, "store-a-changelog": 2, "store-b-changelog": 3})
    # Kafka walks a HashSet: store-b-changelog comes first (checked on Java 17)
    assert configure(t, ts).status == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Existing topic store-b-changelog has different number of partitions: expected 4, "
        "found 3")


def test_existing_repartition_topic_with_another_count_is_incorrectly_partitioned() -> None:
    t = topo(sub("0", ("in",), sinks=("r",)), sub("1", repartition=(TopicInfo("r"),)))
    configured = configure(t, topics(**{"in": 3, "r": 5}))
    assert configured.status == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Existing topic r has different number of partitions: expected 3, found 5")
    assert configured.subtopologies is None


# --- configure: repartition topics ----------------------------------------------------------------


def chain(*, reverse: bool = False, r1: int = 0, r2: int = 0) -> Topology:
    """A -> r1 -> B -> r2 -> C; B also reads topic b."""
    subs = [sub("A", ("a",), sinks=("r1",)),
            sub("B", ("b",), sinks=("r2",), repartition=(TopicInfo("r1", r1),)),
            sub("C", repartition=(TopicInfo("r2", r2),), changelogs=("c-changelog",))]
    return topo(*(reversed(subs) if reverse else subs))


@pytest.mark.parametrize("reverse", [False, True])
def test_repartition_counts_follow_the_writing_subtopology_through_a_chain(reverse: bool) -> None:
    configured = configure(chain(reverse=reverse), topics(a=3, b=2))
    assert configured.status is not None and configured.status[0] == MISSING_INTERNAL_TOPICS
    assert configured.internal_topics_to_create == (
        InternalTopic("c-changelog", 3), InternalTopic("r1", 3), InternalTopic("r2", 3))
    assert [configured.number_of_tasks(s) for s in "ABC"] == [3, 3, 3]


def test_kafka_order_is_javas_hashmap_iteration_order_of_the_ids() -> None:
    ids = [str(i) for i in range(12)]  # table of 16: "11" shares bucket 0 with "0", "10" is 15
    order = [s.subtopology_id for s in kafka_order([sub(i) for i in ids])]
    assert order == ["0", "11", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]
    # same bucket: insertion (list) order
    order = [s.subtopology_id for s in kafka_order([sub("11"), sub("0")])]
    assert order == ["11", "0"]
    ids = [str(i) for i in range(13)]  # 13 > 12: the table doubles to 32
    order = [s.subtopology_id for s in kafka_order([sub(i) for i in reversed(ids)])]
    assert order == ["11", "12", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]


@pytest.mark.parametrize("reverse", [False, True])
def test_repartition_counts_depend_on_kafkas_order_not_the_list_order(reverse: bool) -> None:
    """Kafka visits "0" (reading r1) before "1" (writing r1): r2 is decided from b alone."""
    subs = [sub("1", ("a",), sinks=("r1",)),
            sub("0", ("b",), sinks=("r2",), repartition=(TopicInfo("r1"),)),
            sub("2", repartition=(TopicInfo("r2"),))]
    configured = configure(topo(*(reversed(subs) if reverse else subs)), topics(a=3, b=2))
    assert configured.internal_topics_to_create == (InternalTopic("r1", 3), InternalTopic("r2", 2))
    assert [configured.number_of_tasks(s) for s in "012"] == [3, 3, 2]


def test_repartition_count_is_the_largest_input_of_the_writer() -> None:
    configured = configure(chain(), topics(a=3, b=8))
    counts = {x.name: x.partitions for x in configured.internal_topics_to_create}
    assert counts == {"r1": 3, "r2": 8, "c-changelog": 8}
    assert [configured.number_of_tasks(s) for s in "ABC"] == [3, 8, 8]


def test_fixed_repartition_counts_are_kept_and_feed_the_next_topic() -> None:
    configured = configure(chain(r1=7), topics(a=3, b=2))
    counts = {x.name: x.partitions for x in configured.internal_topics_to_create}
    assert counts == {"r1": 7, "r2": 7, "c-changelog": 7}
    configured = configure(chain(r2=5), topics(a=3, b=2))
    counts = {x.name: x.partitions for x in configured.internal_topics_to_create}
    assert counts == {"r1": 3, "r2": 5, "c-changelog": 5}


def test_configured_subtopology_lists_inputs_with_their_counts() -> None:
    configured = configure(chain(), topics(a=3, b=2))
    assert configured.subtopologies is not None
    assert list(configured.subtopologies) == ["A", "B", "C"]
    b = configured.subtopologies["B"]
    assert dict(b.input_partitions) == {"b": 2, "r1": 3}
    assert b.input_topics() == ("b", "r1")
    assert b.repartition_source_topics == (TopicInfo("r1", 3),)
    assert b.repartition_sink_topics == ("r2",)
    assert not b.stateful
    assert configured.subtopologies["C"].state_changelog_topics == (TopicInfo("c-changelog", 3),)


def test_all_internal_topics_existing_makes_the_chain_ready() -> None:
    configured = configure(chain(), topics(a=3, b=2, r1=3, r2=3, **{"c-changelog": 3}))
    assert configured.is_ready and configured.internal_topics_to_create == ()


def test_repartition_loop_is_an_invalid_topology() -> None:
    t = topo(sub("0", sinks=("r2",), repartition=(TopicInfo("r1"),)),
             sub("1", sinks=("r1",), repartition=(TopicInfo("r2"),)))
    err = error_of(configure, t, topics())
    assert err.code is ErrorCode.streams_invalid_topology
    assert err.message == ("Failed to compute number of partitions for all repartition topics. "
                           "There may be loops in the topology that cannot be resolved.")


def test_a_loop_broken_by_a_fixed_count_resolves() -> None:
    t = topo(sub("0", sinks=("r2",), repartition=(TopicInfo("r1", 2),)),
             sub("1", sinks=("r1",), repartition=(TopicInfo("r2"),)))
    configured = configure(t, topics())
    assert [(x.name, x.partitions) for x in configured.internal_topics_to_create] == [
        ("r1", 2), ("r2", 2)]


def test_repartition_source_never_used_as_sink_is_an_invalid_topology() -> None:
    t = topo(sub("0", ("in",), sinks=("r1",)),
             sub("1", repartition=(TopicInfo("r1"), TopicInfo("orphan"))))
    err = error_of(configure, t, topics(**{"in": 2}))
    assert err.code is ErrorCode.streams_invalid_topology
    assert err.message == ("Failed to compute number of partitions for all repartition topics, "
                           "because a repartition source topic is never used as a sink topic.")


def test_subtopology_without_inputs_is_an_invalid_topology() -> None:
    t = topo(sub("0", ("in",)), sub("7", changelogs=("c",)))
    err = error_of(configure, t, topics(**{"in": 2}))
    assert err.code is ErrorCode.streams_invalid_topology
    assert err.message == "No source topics found for subtopology 7"


def test_missing_source_topics_come_before_an_invalid_topology() -> None:
    t = topo(sub("0", ("gone",)), sub("1", repartition=(TopicInfo("orphan"),)))
    assert configure(t, topics()).status == (MISSING_SOURCE_TOPICS,
                                             "Source topics gone are missing.")


# --- configure: co-partitioning -------------------------------------------------------------------


def join_of(left: str, *, fixed: int = 0, left_count: int = 2) -> tuple[Topology, Topics]:
    """Subtopology 1 joins source topic ``left`` with repartition topic r (written by 0)."""
    t = topo(sub("0", ("x",), sinks=("r",)),
             sub("1", (left,), repartition=(TopicInfo("r", fixed),),
                 copartition=(CopartitionGroup(source_topics=(0,),
                                               repartition_source_topics=(0,)),)))
    return t, topics(x=left_count, **{left: 4})


def test_copartitioned_repartition_topic_takes_the_source_topics_count() -> None:
    t, ts = join_of("left")
    configured = configure(t, ts)
    assert configured.internal_topics_to_create == (InternalTopic("r", 4),)  # not x's 2
    assert configured.number_of_tasks("1") == 4
    assert configured.number_of_tasks("0") == 2


def test_copartitioned_fixed_repartition_topic_must_match_the_source_topic() -> None:
    t, ts = join_of("left", fixed=3)
    configured = configure(t, ts)
    assert configured == ConfiguredTopology(0, None, (), (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Number of partitions [3] of repartition topic [r] doesn't match number of partitions "
        "[4] of the source topic."))


def test_the_first_mismatching_fixed_topic_in_kafkas_order_is_named() -> None:
    t = topo(sub("0", ("x",), sinks=("r1", "r2")),
             sub("1", ("a",), repartition=(TopicInfo("r1", 3), TopicInfo("r2", 3)),
                 copartition=(CopartitionGroup(source_topics=(0,),
                                               repartition_source_topics=(0, 1)),)))
    configured = configure(t, topics(x=1, a=4))
    # Java's HashMap iterates r2 before r1 (checked on Java 17)
    assert configured.status == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Number of partitions [3] of repartition topic [r2] doesn't match number of partitions "
        "[4] of the source topic.")


def test_java_hash_order() -> None:
    # expected orders printed by Java 17 (HashSet / HashMap of the same insertions)
    assert java_hash_order(["a", "r1", "r2"]) == ["r2", "a", "r1"]
    assert java_hash_order(["in", "store-b-changelog", "store-a-changelog"]) == [
        "store-b-changelog", "store-a-changelog", "in"]
    assert java_hash_order(["A", "B", "C", "subtopology-x", "zz", "A"]) == [
        "zz", "A", "subtopology-x", "B", "C"]


def test_copartitioned_fixed_repartition_topic_that_matches_is_fine() -> None:
    t, ts = join_of("left", fixed=4)
    configured = configure(t, ts)
    assert configured.internal_topics_to_create == (InternalTopic("r", 4),)


def test_copartitioned_source_topics_must_have_the_same_count() -> None:
    t = topo(sub("0", ("foo", "bar", "ok"),
                 copartition=(CopartitionGroup(source_topics=(0, 1)),)))
    configured = configure(t, topics(foo=6, bar=3, ok=1))
    assert configured == ConfiguredTopology(0, None, (), (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Following topics do not have the same number of partitions: [{bar=3, foo=6}]"))


def test_copartitioned_source_topics_with_the_same_count() -> None:
    t = topo(sub("0", ("foo", "bar"), copartition=(CopartitionGroup(source_topics=(0, 1)),)))
    assert configure(t, topics(foo=3, bar=3)).is_ready


def all_repartition_join(r1: int = 0, r2: int = 0, r3: int | None = None) -> Topology:
    """r1 (written by 0, from a) and r2 (written by 1, from b) co-partitioned in 2; r3 is a
    fixed repartition topic elsewhere in the topology when given."""
    subs = [sub("0", ("a",), sinks=("r1",) + (("r3",) if r3 is not None else ())),
            sub("1", ("b",), sinks=("r2",)),
            sub("2", repartition=(TopicInfo("r1", r1), TopicInfo("r2", r2)),
                copartition=(CopartitionGroup(repartition_source_topics=(0, 1)),))]
    if r3 is not None:
        subs.append(sub("3", repartition=(TopicInfo("r3", r3),)))
    return topo(*subs)


def test_all_repartition_group_without_fixed_counts_takes_the_max() -> None:
    configured = configure(all_repartition_join(), topics(a=2, b=5))
    assert configured.internal_topics_to_create == (InternalTopic("r1", 5), InternalTopic("r2", 5))
    assert configured.number_of_tasks("2") == 5
    assert configured.number_of_tasks("0") == 2


def test_all_repartition_group_with_a_fixed_count_takes_it() -> None:
    configured = configure(all_repartition_join(r1=3), topics(a=2, b=5))
    assert configured.internal_topics_to_create == (InternalTopic("r1", 3), InternalTopic("r2", 3))


def test_fixed_counts_anywhere_in_the_topology_decide_an_all_repartition_group() -> None:
    configured = configure(all_repartition_join(r3=7), topics(a=2, b=5))
    assert [(x.name, x.partitions) for x in configured.internal_topics_to_create] == [
        ("r1", 7), ("r2", 7), ("r3", 7)]


def test_fixed_counts_that_disagree_are_incorrectly_partitioned() -> None:
    configured = configure(all_repartition_join(r1=3, r3=4), topics(a=2, b=5))
    assert configured == ConfiguredTopology(0, None, (), (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Following topics do not have the same number of partitions: [{r1=3, r2=5}]"))


def test_all_repartition_group_with_undefined_counts_is_an_invalid_topology() -> None:
    err = error_of(configure, all_repartition_join(), topics(a=0, b=0))
    assert err.code is ErrorCode.streams_invalid_topology
    # Kafka prints a HashMap's key set: r2 (bucket 0) before r1 (bucket 15), checked on Java 17
    assert err.message == ("All topics in the copartition group had undefined partition number: "
                           "[r2, r1]")


def test_copartition_index_out_of_range_is_an_unknown_server_error() -> None:
    t = topo(sub("0", ("a",), copartition=(CopartitionGroup(source_topics=(0, -1)),)))
    err = error_of(configure, t, topics(a=1))
    assert err.code is ErrorCode.unknown_server_error and err.message is None


def test_duplicate_subtopology_ids_are_an_unknown_server_error() -> None:
    t = topo(sub("0", ("a",)), sub("0", ("b",)))
    assert t.has_duplicate_ids()
    err = error_of(configure, t, topics(a=1, b=1))
    assert err.code is ErrorCode.unknown_server_error and err.message is None


def test_the_metadata_image_is_a_topic_lookup() -> None:
    image = MetadataImage([TopicImage("in", uuid.UUID(int=9), 3)])
    configured = configure(topo(sub("0", ("in",), changelogs=("cl",))), image)
    assert configured.internal_topics_to_create == (InternalTopic("cl", 3),)
    assert metadata_hash(topo(sub("0", ("in",))), image) != 0


# --- the metadata hash ----------------------------------------------------------------------------

HASHED = topo(sub("0", ("in",), sinks=("r",), changelogs=("cl",)),
              sub("1", repartition=(TopicInfo("r"),)))


def test_hash_is_zero_without_required_topics() -> None:
    assert metadata_hash(HASHED, topics(unrelated=3)) == 0
    assert metadata_hash(None, topics(unrelated=3)) == 0


def test_hash_changes_when_a_required_topic_is_created_or_grown() -> None:
    ts = topics(unrelated=1)
    seen = [metadata_hash(HASHED, ts)]
    add(ts, "in", 2)
    seen.append(metadata_hash(HASHED, ts))
    add(ts, "cl", 2)
    seen.append(metadata_hash(HASHED, ts))
    add(ts, "r", 2)
    seen.append(metadata_hash(HASHED, ts))
    grow(ts, "in", 3)
    seen.append(metadata_hash(HASHED, ts))
    assert len(set(seen)) == len(seen)
    assert all(-(2**63) <= h < 2**63 for h in seen)


def test_hash_changes_when_a_required_topic_is_recreated_with_a_new_id() -> None:
    ts = topics(**{"in": 2})
    before = metadata_hash(HASHED, ts)
    add(ts, "in", 2, topic_id=77)
    assert metadata_hash(HASHED, ts) != before


def test_hash_ignores_unrelated_topics_and_repartition_sinks_only() -> None:
    ts = topics(**{"in": 2})
    before = metadata_hash(HASHED, ts)
    add(ts, "unrelated", 1)
    grow(ts, "unrelated", 9)
    assert metadata_hash(HASHED, ts) == before
    sink_only = topo(sub("0", ("in",), sinks=("out",)))
    h = metadata_hash(sink_only, ts)
    add(ts, "out", 4)
    assert metadata_hash(sink_only, ts) == h


def test_hash_is_the_same_in_another_process() -> None:
    ts = topics(**{"in": 2, "cl": 2})
    here = metadata_hash(HASHED, ts)
    code = (
        "import uuid\n"
        "from coordinator.groups.streams.topology import TopicInfo, Topology, Subtopology, "
        "metadata_hash\n"
        "from coordinator.testing.consumer_group_context import Topic, Topics\n"
        "ts = Topics()\n"
        "ts.by_name['in'] = Topic('in', uuid.UUID(int=1), 2)\n"
        "ts.by_name['cl'] = Topic('cl', uuid.UUID(int=2), 2)\n"
        "t = Topology(0, (Subtopology('0', ('in',), repartition_sink_topics=('r',), "
        "state_changelog_topics=(TopicInfo('cl'),)), "
        "Subtopology('1', repartition_source_topics=(TopicInfo('r'),))))\n"
        "print(metadata_hash(t, ts))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONHASHSEED": "12345", "PATH": ""},
                         cwd=Path(__file__).resolve().parents[2])
    assert int(out.stdout) == here


# --- endpoints and describe -----------------------------------------------------------------------


def test_endpoint_partitions_use_current_counts_and_skip_what_is_unknown() -> None:
    t = topo(sub("0", ("big", "small"), sinks=("r",)), sub("1", repartition=(TopicInfo("r"),)))
    ts = topics(big=4, small=2, r=4)
    configured = configure(t, ts)
    assert configured.is_ready
    assert endpoint_partitions(configured, {"0": [3, 1, 0], "1": [2], "9": [0]}, ts) == (
        ("big", (0, 1, 3)), ("small", (0, 1)), ("r", (2,)))
    assert endpoint_partitions(None, {"0": [0]}, ts) == ()
    unconfigured = configure(topo(sub("0", ("gone",))), ts)
    assert endpoint_partitions(unconfigured, {"0": [0]}, ts) == ()


def test_describe_view_of_a_topology_not_ready_is_the_stored_one_sorted() -> None:
    t = Topology.from_request(kio_topology())
    view = describe_view(t, None)
    assert view.epoch == 3
    assert [s.subtopology_id for s in view.subtopologies] == ["0", "1"]
    one = view.subtopologies[1]
    assert one.source_topics == ("alpha", "zeta")
    assert one.repartition_sink_topics == ("app-r1", "app-r2")
    assert [x.name for x in one.state_changelog_topics] == ["app-s1-changelog", "app-s2-changelog"]
    assert one.state_changelog_topics[1] == TopicInfo(
        "app-s2-changelog", 0, -1, (("z.cfg", "1"), ("a.cfg", "2")))
    zero = view.subtopologies[0]
    assert zero.repartition_source_topics == (TopicInfo("app-r1", 0, 0, (("k", "v"),)),
                                              TopicInfo("app-r2", 4))
    # a configuration that is not ready shows the stored topology too
    missing = configure(t, topics(alpha=4, zeta=4))
    assert missing.status is not None and missing.status[0] == MISSING_INTERNAL_TOPICS
    assert describe_view(t, missing) == view


def test_describe_view_of_a_ready_topology_has_the_decided_counts() -> None:
    t = Topology.from_request(kio_topology())
    ts = topics(alpha=4, zeta=4, **{"app-r1": 4, "app-r2": 4, "app-s1-changelog": 4,
                                    "app-s2-changelog": 4})
    configured = configure(t, ts)
    assert configured.is_ready
    view = describe_view(t, configured)
    zero, one = view.subtopologies
    assert zero.repartition_source_topics == (TopicInfo("app-r1", 4, 0, (("k", "v"),)),
                                              TopicInfo("app-r2", 4))
    assert one.state_changelog_topics == (
        TopicInfo("app-s1-changelog", 4, 3),
        TopicInfo("app-s2-changelog", 4, -1, (("a.cfg", "2"), ("z.cfg", "1"))))
    assert one.source_topics == ("alpha", "zeta")
