"""Group configs in a virtual-time context: the metadata image's config resources a context's
shard reads (``common.group_configs``), set as IncrementalAlterConfigs leaves them."""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.metadata import config_resources
from coordinator.metadata.config_resources import GROUP, ConfigResources
from storage.records import decode_record, encode_record


def store(resources: ConfigResources, group_id: str, configs: Mapping[str, str]) -> None:
    """Replace the group's overrides with ``configs``: their ConfigRecords, through the record
    codec, replayed as the metadata log's are."""
    for key, value in config_resources.records(GROUP, group_id,
                                               resources.configs(GROUP, group_id), configs):
        resources.replay(*decode_record(*encode_record(key, value)))
