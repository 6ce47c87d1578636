"""README's Prometheus query for both sides of a rebalance, against a real Prometheus scraping
the exporter while two confluent-kafka consumer-protocol members share a topic: it answers the
coordinator's group epoch and each member's own count of the partitions it holds."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_coordinator import Coordinator
from tests.harness import wait_until
from tests.integration.test_prometheus import WAIT, prometheus, query

__all__ = ["prometheus"]  # the fixture, used by name

pytestmark = pytest.mark.slow
README = Path(__file__).resolve().parents[2] / "README.md"


def readme_query(name: str) -> str:
    found = re.search(rf"^```promql\n# example: {name}\n(.*?)^```\n", README.read_text(),
                      re.MULTILINE | re.DOTALL)
    assert found, f"README has no promql example {name}"
    return found.group(1)


def test_the_readme_query_shows_both_sides_of_a_rebalance(prometheus: tuple[str, int],
                                                          tmp_path: Path) -> None:
    base, port = prometheus
    promql = readme_query("promql-rebalance-both-sides")
    with Coordinator.start(tmp_path / "data",
                           {"metrics.listener": f"http://127.0.0.1:{port}"}) as server:
        bootstrap = server.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("orders", num_partitions=4)])["orders"].result(10)
        stop = threading.Event()
        consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": "billing",
                               "group.protocol": "consumer"}) for _ in range(2)]

        def poll(consumer: Consumer) -> None:
            consumer.subscribe(["orders"])
            while not stop.is_set():
                consumer.poll(0.05)

        threads = [threading.Thread(target=poll, args=(c,)) for c in consumers]
        for thread in threads:
            thread.start()
        try:
            def both_sides() -> bool:
                result = query(base, promql)
                epochs = [v for labels, v in result if labels["__name__"].endswith("epoch")]
                held = {labels.get("member_id"): v for labels, v in result
                        if labels["__name__"].startswith("kafka_client_")}
                return len(epochs) == 1 and epochs[0] >= 2 and len(held) == 2 and (
                    None not in held and sum(held.values()) == 4)

            wait_until(both_sides, WAIT, interval=0.5,
                       message="the coordinator's epoch and both members' partitions")
        finally:
            stop.set()
            for thread in threads:
                thread.join()
            for consumer in consumers:
                consumer.close()
