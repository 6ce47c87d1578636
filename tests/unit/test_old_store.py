"""A store written before the consumer, share and streams groups shared one core (commit
c54b1b8, ``tests/unit/old_store.py``) loads with today's code into the same groups and gives
the same answers (its streams group's config is a ``GroupConfig`` record, 1001, read until it
is migrated to the metadata); and today's handlers, driven the same way, write the same bytes
but that record (group configs are cluster metadata now)."""

from __future__ import annotations

import json
from pathlib import Path

from storage.records import GroupConfigKey
from tests.unit import old_store

STORE = Path(__file__).parent / "data" / "store-c54b1b8"


def _expected() -> dict[str, object]:
    expected: dict[str, object] = json.loads(STORE.with_suffix(".json").read_text())
    return expected


def test_the_old_store_holds_every_heartbeat_group_type() -> None:
    types = {group["type"] for group in _expected()["state"].values()}  # type: ignore[attr-defined]
    assert types == {"ConsumerGroup", "ShareGroup", "StreamsGroup"}


def test_an_old_store_loads_into_the_same_groups() -> None:
    data = STORE.with_suffix(".records").read_bytes()
    state = json.loads(json.dumps(old_store.state(old_store.loaded(data))))
    assert state == _expected()["state"]


def test_an_old_store_gives_the_same_answers_after_a_load() -> None:
    data = STORE.with_suffix(".records").read_bytes()
    answers = json.loads(json.dumps(old_store.answers(data)))
    assert answers == _expected()["answers"]


def test_the_same_requests_write_the_same_records() -> None:
    records = (old_store.consumer_records()[1] + old_store.share_records()[1]
               + old_store.streams_records()[1])
    old = [(key, value) for _, key, value in old_store.decode(
        STORE.with_suffix(".records").read_bytes())]
    assert [type(key) for key, _ in old].count(GroupConfigKey) == 1
    assert old_store.encode(records) == old_store.encode(
        [(key, value) for key, value in old if not isinstance(key, GroupConfigKey)])
