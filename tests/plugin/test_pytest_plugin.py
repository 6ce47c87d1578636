"""The pytest plugin as a user meets it: a throwaway project with no conftest of ours, run by a
fresh pytest (``pytester.runpytest_subprocess``), that only installs the package (the
``pytest11`` entry point loads the plugin) and uses its fixtures with a real client."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from kafka_coordinator import pytest_plugin

NO_HYPOTHESIS = ("-p", "no:hypothesispytest")
"""The throwaway project's pytest runs without Hypothesis's plugin (installed with our dev extra,
not a user's): importing it costs each run ~0.3 s of CPU, and the project does not use it."""

THROWAWAY = '''
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PIDS = {pids!r}


def record(coordinator):
    with open(PIDS, "a") as out:
        out.write(f"{{coordinator.pid}}\\n")


def create_topic(bootstrap, name, partitions):
    admin = AdminClient({{"bootstrap.servers": bootstrap}})
    admin.create_topics([NewTopic(name, num_partitions=partitions,
                                  replication_factor=1)])[name].result(10)


def partitions_of_auto_created_topic(bootstrap):
    producer = Producer({{"bootstrap.servers": bootstrap}})
    producer.produce("auto-created", b"x")
    assert producer.flush(10) == 0
    metadata = AdminClient({{"bootstrap.servers": bootstrap}}).list_topics("auto-created", 10)
    return len(metadata.topics["auto-created"].partitions)


def wait_for_assignment(consumer, count, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        consumer.poll(0.05)
        if len(consumer.assignment()) == count:
            return sorted(tp.partition for tp in consumer.assignment())
    raise AssertionError(f"no assignment of {{count}} partitions: {{consumer.assignment()}}")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_joins_and_gets_its_partitions(bootstrap_servers, kafka_coordinator,
                                                 protocol):
    assert bootstrap_servers == kafka_coordinator.bootstrap_servers
    record(kafka_coordinator)
    create_topic(bootstrap_servers, "orders", 3)
    consumer = Consumer({{"bootstrap.servers": bootstrap_servers, "group.id": "app",
                         "group.protocol": protocol}})
    consumer.subscribe(["orders"])
    started = time.monotonic()
    assert wait_for_assignment(consumer, 3) == [0, 1, 2]
    assert time.monotonic() - started < 5  # the test profile: no initial rebalance delay
    consumer.close()


@pytest.mark.kafka_coordinator(config={{"num.partitions": 4}})
def test_the_markers_config_is_honoured(kafka_coordinator):
    record(kafka_coordinator)
    assert partitions_of_auto_created_topic(kafka_coordinator.bootstrap_servers) == 4


@pytest.mark.parametrize("kafka_coordinator", [{{"config": {{"num.partitions": 2}}}}],
                         indirect=True)
def test_an_indirect_parameter_configures_it(kafka_coordinator):
    record(kafka_coordinator)
    assert partitions_of_auto_created_topic(kafka_coordinator.bootstrap_servers) == 2


@pytest.mark.kafka_coordinator(brokers=3)
def test_the_markers_brokers_make_a_cluster(kafka_coordinator, bootstrap_servers):
    record(kafka_coordinator)
    assert len(bootstrap_servers.split(",")) == 3
    assert kafka_coordinator.brokers.running() == [1, 2, 3]
    metadata = AdminClient({{"bootstrap.servers": bootstrap_servers}}).list_topics(timeout=10)
    assert sorted(metadata.brokers) == [1, 2, 3]


SESSION = []


def test_the_session_server_is_shared_one(kafka_coordinator_session):
    record(kafka_coordinator_session)
    SESSION.append((kafka_coordinator_session.pid, kafka_coordinator_session.bootstrap_servers))


def test_the_session_server_is_shared_two(kafka_coordinator_session):
    assert SESSION == [(kafka_coordinator_session.pid,
                        kafka_coordinator_session.bootstrap_servers)]


def test_a_restart_keeps_committed_offsets(kafka_coordinator):
    record(kafka_coordinator)
    bootstrap = kafka_coordinator.bootstrap_servers
    create_topic(bootstrap, "payments", 2)
    consumer = Consumer({{"bootstrap.servers": bootstrap, "group.id": "payer"}})
    consumer.commit(offsets=[TopicPartition("payments", 0, 5), TopicPartition("payments", 1, 7)],
                    asynchronous=False)
    consumer.close()
    before = kafka_coordinator.pid
    kafka_coordinator.restart()  # kill -9, then the same data on the same port
    record(kafka_coordinator)
    assert kafka_coordinator.pid != before
    assert kafka_coordinator.bootstrap_servers == bootstrap
    consumer = Consumer({{"bootstrap.servers": bootstrap, "group.id": "payer"}})
    committed = consumer.committed([TopicPartition("payments", 0), TopicPartition("payments", 1)],
                                   timeout=10)
    assert [tp.offset for tp in committed] == [5, 7]
    consumer.close()


def test_a_failure_shows_the_servers_log(kafka_coordinator):
    record(kafka_coordinator)
    bootstrap = kafka_coordinator.bootstrap_servers
    create_topic(bootstrap, "refunds", 2)
    consumer = Consumer({{"bootstrap.servers": bootstrap, "group.id": "refunder",
                         "group.protocol": "consumer"}})
    consumer.subscribe(["refunds"])
    wait_for_assignment(consumer, 2)
    consumer.close()
    assert False, "on purpose"


@pytest.mark.kafka_coordinator(confg={{}})
def test_a_misspelt_option_is_an_error(kafka_coordinator):
    pass
'''


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" in status.read_text()  # a zombie has ended


@pytest.mark.slow  # a pytest of its own and nine servers
def test_a_throwaway_project_uses_the_fixtures(pytester: pytest.Pytester) -> None:
    pids = pytester.path / "pids.txt"
    pytester.makepyfile(test_app=THROWAWAY.format(pids=str(pids)))
    assert not (pytester.path / "conftest.py").exists()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *NO_HYPOTHESIS, "-v",
                                           timeout=240)
    result.assert_outcomes(passed=8, failed=1, errors=1)
    output = result.stdout.str()
    # a failed test's report carries its server's log, and says where it saved the log and
    # the timeline page of the group it touched (the events inline: the server is gone)
    assert "kafka-coordinator 127.0.0.1:" in output and '"event": "started"' in output
    saved = dict(re.findall(r"^(log|timeline page): (\S+)$", output, re.MULTILINE))
    assert set(saved) == {"log", "timeline page"}, output
    assert '"event": "started"' in Path(saved["log"]).read_text()
    page = Path(saved["timeline page"])
    assert page.name == "timeline-refunder.html"
    embedded = page.read_text().split('<script id="timeline-events" type="application/json">')
    events = json.loads(embedded[1].split("</script>")[0])
    assert {"member-joined", "assigned", "member-left"} <= {e["kind"] for e in events}
    assert "unknown option(s) ['confg']" in output
    started = [int(line) for line in pids.read_text().split()]
    assert len(set(started)) == 9  # 7 function-scoped servers, a restart, 1 session server
    assert [pid for pid in started if not _gone(pid)] == []  # none outlives the session


@pytest.mark.slow
def test_the_plugin_is_registered_through_the_entry_point(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--fixtures", "-p", "no:cacheprovider",
                                           *NO_HYPOTHESIS)
    output = result.stdout.str()
    for fixture in ("kafka_coordinator", "kafka_coordinator_session", "bootstrap_servers",
                    "kafka_coordinator_session_options"):
        assert f"{fixture} " in output or f"{fixture} [" in output, fixture
    markers = pytester.runpytest_subprocess("--markers", *NO_HYPOTHESIS).stdout.str()
    assert (f"@pytest.mark.{pytest_plugin.MARKER}(config=None, profile='test', brokers=1)"
            in markers)


def test_the_package_imports_without_pytest_or_clients() -> None:
    import subprocess
    import sys

    code = textwrap.dedent("""
        import sys
        import kafka_coordinator
        from kafka_coordinator import Coordinator
        heavy = {"pytest", "confluent_kafka", "kafka", "aiokafka", "coordinator.app"}
        print(sorted(heavy & set(sys.modules)))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.strip() == "[]"
