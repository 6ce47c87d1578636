"""/metrics after a scenario with real clients: every metric issue 9 names, with the values the
scenario implies (see ``metrics_scenario``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import ServerProcess, free_port, wait_until
from tests.integration import metrics_scenario as sc
from tests.integration.metrics_scenario import Samples, present, scrape, total, value

pytestmark = pytest.mark.slow

PERCENTILE_SUFFIXES = ("p50", "p95", "p99", "p999", "max")


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    port = free_port()
    server = ServerProcess(tmp_path_factory.mktemp("metrics") / "data", {
        **sc.OVERRIDES, "metrics.listener": f"http://127.0.0.1:{port}"}).start()
    try:
        assert server.event("metrics exporter listening", port=port) is not None
        with sc.scenario(server):
            url = f"http://127.0.0.1:{port}/metrics"
            # the groups settle (the second member's revocation, the last commits)
            wait_until(lambda: _settled(scrape(url)), sc.TIMEOUT,
                       message="the groups to be stable with every offset committed")
            yield server, url
    finally:
        server.stop()


def _settled(samples: Samples) -> bool:
    return (value(samples, "consumer-group-count", state="stable") == 1
            and value(samples, "classic-group-count", state="stable") == 1
            and all(value(samples, "consumer-lag", group=g, topic=sc.TOPIC, partition=str(p))
                    == 0 for g in (sc.CONSUMER_GROUP, sc.CLASSIC_GROUP)
                    for p in range(sc.PARTITIONS)))


@pytest.fixture
def samples(running: tuple[ServerProcess, str]) -> Samples:
    return scrape(running[1])


def test_group_counts(samples: Samples) -> None:
    assert value(samples, "group-count", protocol="consumer") == 1
    assert value(samples, "group-count", protocol="classic") == 1
    expected = {"empty": 0, "assigning": 0, "reconciling": 0, "stable": 1, "dead": 0}
    assert {s: value(samples, "consumer-group-count", state=s) for s in expected} == expected
    classic = {"empty": 0, "preparingrebalance": 0, "completingrebalance": 0, "stable": 1,
               "dead": 0}
    assert {s: value(samples, "classic-group-count", state=s) for s in classic} == classic


def test_partitions_and_queues(samples: Samples) -> None:
    states = {s: value(samples, "partition-count", state=s)
              for s in ("loading", "active", "failed")}
    assert states == {"loading": 0, "active": 50, "failed": 0}
    assert present(samples, "event-queue-size") >= 0
    load_max, load_avg = (value(samples, "partition-load-time-max"),
                          value(samples, "partition-load-time-avg"))
    assert load_max is not None and load_avg is not None
    assert load_max >= load_avg > 0


def test_event_sensors(samples: Samples) -> None:
    for kind in ("queue", "processing"):
        name = f"event-{kind}-time-ms"
        values = [present(samples, f"{name}-{s}") for s in PERCENTILE_SUFFIXES]
        assert values == sorted(values), f"{name} percentiles not ordered: {values}"
        assert total(samples, f"{name}_count") > 0  # the underlying histogram
        assert total(samples, f"{name}_bucket", le="+Inf") == total(samples, f"{name}_count")
    assert present(samples, "event-processing-time-ms-max") > 0
    idle_min, idle_avg = (value(samples, "thread-idle-ratio-min"),
                          value(samples, "thread-idle-ratio-avg"))
    assert idle_min is not None and idle_avg is not None
    assert 0 <= idle_min <= idle_avg <= 1
    assert idle_avg > 0  # a few groups do not keep the loop busy


def test_offset_metrics(samples: Samples) -> None:
    records = sc.PARTITIONS * sc.PER_PARTITION
    # each of the two groups committed after every record; the two admin commits
    assert present(samples, "offset-commit-count") >= 2 * records + 2
    assert present(samples, "offset-commit-rate") > 0
    assert value(samples, "offset-deletion-count") == 1
    assert present(samples, "offset-deletion-rate") > 0
    assert value(samples, "offset-expired-count") == 0  # retention is a week
    assert value(samples, "offset-expired-rate") == 0
    # consumer group and classic group: every partition; the lagging group: one
    assert value(samples, "offset-count") == 2 * sc.PARTITIONS + 1


def test_consumer_lag(samples: Samples) -> None:
    for group in (sc.CONSUMER_GROUP, sc.CLASSIC_GROUP):
        for p in range(sc.PARTITIONS):
            assert value(samples, "consumer-lag", group=group, topic=sc.TOPIC,
                         partition=str(p)) == 0
    assert value(samples, "consumer-lag", group=sc.LAGGING_GROUP, topic=sc.TOPIC,
                 partition="1") == sc.PER_PARTITION - sc.LAGGING_OFFSET
    assert value(samples, "consumer-lag", group=sc.DELETED_GROUP, topic=sc.TOPIC,
                 partition="0") is None


def test_rebalances_and_assignments(samples: Samples) -> None:
    assert present(samples, "consumer-group-rebalance-count") >= 2  # two members joined
    assert present(samples, "consumer-group-rebalance-rate") > 0
    epoch = value(samples, "target-assignment-epoch", group=sc.CONSUMER_GROUP)
    assert epoch is not None and epoch >= 3  # epoch 2 for the first member, 3 for the second
    assert epoch == value(samples, "group-epoch", group=sc.CONSUMER_GROUP)
    runs = total(samples, "assignor_run_time_ms_count", group=sc.CONSUMER_GROUP)
    assert runs >= 1
    assert total(samples, "assignor_run_time_ms_sum", group=sc.CONSUMER_GROUP) >= 0
    assignors = {dict(labels).get("assignor") for (name, labels) in samples
                 if name == sc.PREFIX + "assignor_run_time_ms_count"}
    assert assignors == {"uniform"}
    assert total(samples, "partitions_moved_count", group=sc.CONSUMER_GROUP) == runs
    # the first run gives all partitions to the first member, a later one half to the second
    assert total(samples, "partitions_moved_sum", group=sc.CONSUMER_GROUP) >= sc.PARTITIONS


def test_background_metrics_from_offloaded_runs(samples: Samples) -> None:
    idle = value(samples, "background-thread-idle-ratio-avg")
    assert idle is not None and 0 <= idle <= 1
    for kind in ("queue", "processing"):
        values = [present(samples, f"background-{kind}-time-ms-{s}")
                  for s in PERCENTILE_SUFFIXES]
        assert values == sorted(values)
        assert total(samples, f"background_{kind}_time_ms_count") >= 1
    assert present(samples, "background-processing-time-ms-max") > 0


def test_no_stale_scrapes(samples: Samples) -> None:
    assert value(samples, "stale-scrape-count") == 0


def test_structured_log_events(running: tuple[ServerProcess, str]) -> None:
    """The scenario's group state changes are log events with their fields."""
    server = running[0]
    joined = [e for e in server.events if e.get("event") == "member joins the consumer group"
              and e.get("group_id") == sc.CONSUMER_GROUP]
    assert len(joined) == 2 and all(e.get("member_id") for e in joined)
    epochs = [e["group_epoch"] for e in server.events
              if e.get("event") == "bumped group epoch" and e.get("group_id") == sc.CONSUMER_GROUP]
    assert len(epochs) >= 2 and epochs == sorted(epochs)
    installed = server.wait_event("installed offloaded target assignment",
                                  group_id=sc.CONSUMER_GROUP)
    assert installed["assign_ms"] >= 0
    server.wait_event("member joins the classic group", group_id=sc.CLASSIC_GROUP)
    server.wait_event("group stable", group_id=sc.CLASSIC_GROUP)
