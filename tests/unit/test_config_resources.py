"""The config resources of the metadata image (GROUP and CLIENT_METRICS ``ConfigRecord``s):
alterations written to a real metadata log and replayed from it on start, a new mapping per
change, listeners told, validation before anything is written."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from coordinator.metadata.config_resources import CLIENT_METRICS, GROUP
from coordinator.metadata.image import MetadataImage
from coordinator.metadata.log import MetadataLog
from coordinator.runtime.clock import ManualClock
from coordinator.telemetry.subscriptions import Subscriptions, records


def opened(log_dir: Path) -> tuple[MetadataImage, MetadataLog]:
    image = MetadataImage()
    return image, MetadataLog.open(log_dir, image, ManualClock(0))


def test_alterations_are_written_and_replayed_on_start(tmp_path: Path) -> None:
    image, metadata_log = opened(tmp_path)
    changes: list[tuple[int, str]] = []
    image.configs.subscribe(lambda resource_type, name: changes.append((resource_type, name)))

    async def alter() -> None:
        configs = image.configs
        await configs.alter(metadata_log, GROUP, "g", lambda old: {**old, "a": "1", "b": "2"})
        first = configs.configs(GROUP, "g")
        await configs.alter(metadata_log, GROUP, "g", lambda old: {"b": "3"})
        assert configs.configs(GROUP, "g") is not first  # a new mapping per change
        await configs.alter(metadata_log, GROUP, "h", lambda old: {"a": "9"},
                            validate_only=True)
        await configs.alter(metadata_log, CLIENT_METRICS, "s", lambda old: {"metrics": "*"})

    asyncio.run(alter())
    metadata_log.close()
    assert image.configs.configs(GROUP, "g") == {"b": "3"}
    assert changes.count((GROUP, "g")) == 4  # a, b; then a deleted, b changed
    assert image.configs.names(GROUP) == ["g"]  # validate_only wrote nothing
    again, metadata_log = opened(tmp_path)
    metadata_log.close()
    assert dict(again.configs.of_type(GROUP)) == {"g": {"b": "3"}}
    assert again.configs.configs(CLIENT_METRICS, "s") == {"metrics": "*"}
    subscriptions = Subscriptions(resources=again.configs)
    assert subscriptions.names() == ["s"]  # the subscriptions follow the image


def test_a_refused_change_writes_nothing(tmp_path: Path) -> None:
    image, metadata_log = opened(tmp_path)

    def refuse(old: Mapping[str, str]) -> dict[str, str]:
        raise ValueError("no")

    with pytest.raises(ValueError):
        asyncio.run(image.configs.alter(metadata_log, GROUP, "g", refuse))
    metadata_log.close()
    again, metadata_log = opened(tmp_path)
    metadata_log.close()
    assert again.configs.names(GROUP) == []


def test_the_subscriptions_are_rebuilt_when_the_image_changes() -> None:
    image = MetadataImage()
    subscriptions = Subscriptions(resources=image.configs)
    version = subscriptions.version
    for key, value in records("s", {}, {"metrics": "a", "interval.ms": "200"}):
        image.configs.replay(key, value)
    assert subscriptions.names() == ["s"] and subscriptions.version > version
    assert subscriptions.explicit("s") == {"metrics": "a", "interval.ms": "200"}
