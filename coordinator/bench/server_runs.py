"""What the benches that start a server of their own for each run share (``bench fixture``,
``bench rebalance``): the topic a real client (confluent-kafka's admin) creates, the arguments,
and the medians over the runs."""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from storage.machine import with_machine

__all__ = ["add_arguments", "create_topic", "medians", "print_result"]


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` with confluent-kafka's AdminClient (imported here: the CLI does not
    need it)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                                replication_factor=1)]).values():
        future.result(30)


def medians(case: str, profile: str, samples: Sequence[dict[str, float]],
            keys: Iterable[str]) -> dict[str, Any]:
    """The case, the profile, the number of runs, each key's median (ms, to 0.1) and every
    sample of it."""
    keys = tuple(keys)
    result: dict[str, Any] = {"case": case, "profile": profile, "runs": len(samples)}
    for key in keys:
        result[key] = round(statistics.median(sample[key] for sample in samples), 1)
    result["samples"] = {key: [round(sample[key], 1) for sample in samples] for key in keys}
    return result


def add_arguments(parser: argparse.ArgumentParser, default_profile: str, profile_help: str
                  ) -> None:
    """``--profile`` (serve or test), ``--runs`` and ``--json``."""
    other = "test" if default_profile == "serve" else "serve"
    parser.add_argument("--profile", choices=(default_profile, other), default=default_profile,
                        help=profile_help)
    parser.add_argument("--runs", type=int, default=3, help="servers started; medians reported")
    parser.add_argument("--json", action="store_true", help="one JSON object")


def print_result(result: dict[str, Any], as_json: bool, lines: Iterable[str]) -> int:
    """``result`` as one JSON object, or a heading and ``lines`` (one per key); exit code 0."""
    if as_json:
        print(json.dumps(with_machine(result)))
        return 0
    print(f"profile {result['profile']}, median of {result['runs']} runs:")
    for line in lines:
        print(line)
    return 0
