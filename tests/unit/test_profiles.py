"""``serve --profile``: the ``serve`` profile is Kafka's defaults, the ``test`` profile names
real configs with valid values, and the file and the overrides still come after it."""

from __future__ import annotations

import pytest

from coordinator.cli import build_parser, load_config
from coordinator.config.definitions import BROKER_CONFIGS_BY_NAME
from coordinator.config.profiles import PROFILES, SERVE, TEST, TEST_PROFILE, profile


def test_the_serve_profile_is_kafkas_defaults() -> None:
    config = load_config(None, [], SERVE)
    assert profile(SERVE) == {}
    assert config.explicit == frozenset()
    for name, definition in BROKER_CONFIGS_BY_NAME.items():
        assert config[name] == definition.default, name


def test_the_test_profile_names_real_configs_with_valid_values() -> None:
    config = load_config(None, [], TEST)
    assert config.unknown == {}
    for name, value in TEST_PROFILE.items():
        assert config[name] == BROKER_CONFIGS_BY_NAME[name].parse(value), name


def test_the_test_profile_has_test_timings() -> None:
    config = load_config(None, [], TEST)
    assert config["group.initial.rebalance.delay.ms"] == 0
    assert config["group.streams.initial.rebalance.delay.ms"] == 0
    for kind in ("consumer", "share", "streams"):
        assert config[f"group.{kind}.heartbeat.interval.ms"] <= 500
        assert config[f"group.{kind}.session.timeout.ms"] <= 6000
        assert config[f"group.{kind}.assignment.interval.ms"] == 0
        assert config[f"group.{kind}.assignor.offload.enable"] is False


def test_overrides_come_after_the_profile(tmp_path: object) -> None:
    config = load_config(None, [("group.consumer.session.timeout.ms", "45000"),
                                ("group.initial.rebalance.delay.ms", "3000")], TEST)
    assert config["group.consumer.session.timeout.ms"] == 45000
    assert config["group.initial.rebalance.delay.ms"] == 3000
    assert config["group.consumer.heartbeat.interval.ms"] == 500  # the rest stays


def test_the_cli_takes_a_profile() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve"]).profile == SERVE
    assert parser.parse_args(["serve", "--profile", "test"]).profile == TEST
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--profile", "fast"])
    assert sorted(PROFILES) == [SERVE, TEST]
    with pytest.raises(KeyError, match="expected one of serve, test"):
        profile("fast")
