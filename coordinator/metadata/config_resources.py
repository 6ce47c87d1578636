"""Config resources in the metadata image: the configs of every resource Kafka's controller keeps
as ``ConfigRecord``s (GROUP, CLIENT_METRICS; topics keep theirs in ``TopicMetadata``).

Each config of a resource is one ``ConfigRecord`` in ``__cluster_metadata-0`` (a tombstone
deletes it), replayed into ``ConfigResources`` on start, as Kafka's ``ConfigurationsImage``. A
change is validated, written and fsynced under the metadata log's lock, then replayed here, then
answered (``alter``). A resource's configs are a new mapping after every change (readers may
cache what they parse of one by its identity), and whoever subscribed hears of the change
(Kafka's metadata publishers: the ``GroupConfigManager``, the client-metrics subscriptions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from storage.records import ConfigRecordKey, ConfigRecordValue

GROUP = 32
"""Kafka's ``ConfigResource.Type.GROUP``."""
CLIENT_METRICS = 16
"""Kafka's ``ConfigResource.Type.CLIENT_METRICS``."""
KEPT_TYPES = (GROUP, CLIENT_METRICS)
"""The resource types whose ConfigRecords the image keeps."""

ConfigRecord = tuple[ConfigRecordKey, ConfigRecordValue | None]
Listener = Callable[[int, str], None]
"""Told (resource type, resource name) after a resource's configs changed."""

_EMPTY: Mapping[str, str] = MappingProxyType({})


class ConfigResources:
    """Every kept config resource's configs, by resource type and name."""

    def __init__(self) -> None:
        self._by_type: dict[int, dict[str, Mapping[str, str]]] = {t: {} for t in KEPT_TYPES}
        self._listeners: list[Listener] = []

    def configs(self, resource_type: int, name: str) -> Mapping[str, str]:
        """The configs set on the resource (empty when none is): the same object until the
        resource changes."""
        return self._by_type[resource_type].get(name, _EMPTY)

    def of_type(self, resource_type: int) -> Mapping[str, Mapping[str, str]]:
        """Every resource of the type that has configs, by name (a live view)."""
        return MappingProxyType(self._by_type[resource_type])

    def names(self, resource_type: int) -> list[str]:
        return sorted(self._by_type[resource_type])

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def replay(self, key: Any, value: Any) -> bool:
        """Apply a ConfigRecord of a kept resource type; False for any other record."""
        if not isinstance(key, ConfigRecordKey) or key.resource_type not in self._by_type:
            return False
        resources = self._by_type[key.resource_type]
        configs = dict(resources.get(key.resource_name, _EMPTY))
        if isinstance(value, ConfigRecordValue):
            configs[key.name] = value.value
        else:
            configs.pop(key.name, None)
        if configs:
            resources[key.resource_name] = MappingProxyType(configs)
        else:
            resources.pop(key.resource_name, None)
        for listener in list(self._listeners):
            listener(key.resource_type, key.resource_name)
        return True

    async def alter(self, metadata_log: Any, resource_type: int, name: str,
                    change: Callable[[Mapping[str, str]], Mapping[str, str]],
                    validate_only: bool = False) -> Mapping[str, str]:
        """Change one resource's configs: ``change`` gets the current ones and returns the new
        ones (it validates them, raising what the caller answers with); the difference is
        written to ``metadata_log`` (a ``MetadataLog``) as ConfigRecords and fsynced, then
        replayed. Returns the new configs; OSError if they could not be written."""
        async with metadata_log.lock:
            new = change(self.configs(resource_type, name))
            found = records(resource_type, name, self.configs(resource_type, name), new)
            if validate_only or not found:
                return new
            await metadata_log.write(found)
            for key, value in found:
                self.replay(key, value)
            return new


def records(resource_type: int, name: str, old: Mapping[str, str], new: Mapping[str, str]
            ) -> list[ConfigRecord]:
    """The ConfigRecords that turn ``old`` into ``new`` (a tombstone per deleted config)."""
    out: list[ConfigRecord] = []
    for config in sorted({*old, *new}):
        key = ConfigRecordKey(resource_type=resource_type, resource_name=name, name=config)
        if config in new and old.get(config) != new[config]:
            out.append((key, ConfigRecordValue(value=new[config])))
        elif config not in new:
            out.append((key, None))
    return out
