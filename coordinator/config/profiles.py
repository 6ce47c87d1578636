"""Config profiles: named sets of values applied before the properties file and the overrides.

``serve`` (the default) is Kafka's defaults, unchanged. ``test`` keeps Kafka's semantics with
timings suited to tests of applications: no initial rebalance delay, short heartbeat and
session intervals (their lower bounds lowered to allow them), no assignment batching, and the
first target assignment computed in the joining heartbeat (no offload), so a one-member group
has its partitions a few milliseconds after ``subscribe``; the control endpoint and the metrics
exporter listen on free ports. Every value is still overridable: the file and ``--override``
come after the profile.

README.md's "Testing your application" lists the ``test`` profile's values
(``tests/docs/test_readme_examples.py`` compares them with these).
"""

from __future__ import annotations

from collections.abc import Mapping

SERVE = "serve"
TEST = "test"

_GROUP_TYPES = ("consumer", "share", "streams")

TEST_PROFILE: Mapping[str, str] = {
    # classic groups: the first JoinGroup of a new group completes at once; clients may ask for
    # sessions down to 1 s (librdkafka's session.timeout.ms, kafka-python's, aiokafka's)
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    # KIP-848 consumer, share and streams groups: the server gives the intervals
    **{key: value for kind in _GROUP_TYPES for key, value in (
        (f"group.{kind}.heartbeat.interval.ms", "500"),
        (f"group.{kind}.min.heartbeat.interval.ms", "100"),
        (f"group.{kind}.session.timeout.ms", "6000"),
        (f"group.{kind}.min.session.timeout.ms", "1000"),
        # seed 000: no batching, and the target is computed inline in the heartbeat that makes
        # it due, so a joining member gets its assignment in its first answer
        (f"group.{kind}.assignment.interval.ms", "0"),
        (f"group.{kind}.assignor.offload.enable", "false"),
    )},
    "group.streams.initial.rebalance.delay.ms": "0",
    # client telemetry (KIP-714): every client pushes its consumer group coordinator
    # (rebalances, assigned partitions, commits), fetch and poll metrics every second; a
    # client's series go 3 s after its last push
    "telemetry.default.metrics": "org.apache.kafka.consumer.coordinator.,"
                                 "org.apache.kafka.consumer.fetch.manager.,"
                                 "org.apache.kafka.consumer.poll.",
    "telemetry.default.interval.ms": "1000",
    "telemetry.staleness.ms": "3000",
    # no fixed ports: many servers may run side by side
    "metrics.listener": "http://127.0.0.1:0",
    "control.listener": "http://127.0.0.1:0",
}

PROFILES: Mapping[str, Mapping[str, str]] = {SERVE: {}, TEST: TEST_PROFILE}


def profile(name: str) -> Mapping[str, str]:
    """The values of profile ``name``; ``KeyError`` names the profiles there are."""
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r}; expected one of "
                       f"{', '.join(sorted(PROFILES))}") from None
