"""A store whose group configs are ``GroupConfig`` records (type 1001) on the coordinator
partitions, as the server wrote them before group configs became cluster metadata.

``write(path)`` starts the server on an empty log dir (``offsets.topic.num.partitions`` 3, so
the store is small), sets group configs through confluent-kafka's AdminClient
(IncrementalAlterConfigs: several changes to one group, one group's configs all deleted again)
and stops the server. ``tests/unit/data/store-5e6b16b/`` was written by this module run with the
tree of commit 5e6b16b:

    PYTHONPATH=<5e6b16b tree> python tests/integration/old_config_store.py \\
        tests/unit/data/store-5e6b16b

``tests/integration/test_group_configs_metadata.py`` starts today's server on a copy of it.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import ResourceType as AdminResourceType

from coordinator.testing.server_process import ServerProcess

PARTITIONS = 3
OVERRIDES = {"offsets.topic.num.partitions": str(PARTITIONS)}
CONFIGS = {
    "cg": {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"},
    "sg": {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "20000"},
    "st": {"streams.num.standby.replicas": "1"},
}
"""What the store's groups have configured when it is written."""
CLEARED = "gone"
"""A group whose configs were set, then all deleted (its 1001 record is a tombstone)."""


def _alter(admin: AdminClient, group: str, ops: list[tuple[str, str | None]]) -> None:
    entries = [ConfigEntry(name, value or "", incremental_operation=AlterConfigOpType.SET
                           if value is not None else AlterConfigOpType.DELETE)
               for name, value in ops]
    resource = ConfigResource(AdminResourceType.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(20)


def write(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    with ServerProcess(path, OVERRIDES).start() as server:
        server.wait_loaded()
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        _alter(admin, "cg", [("consumer.session.timeout.ms", "60000")])
        _alter(admin, "cg", [(name, value) for name, value in CONFIGS["cg"].items()])
        _alter(admin, "sg", [("share.auto.offset.reset", "earliest"),
                             ("share.delivery.count.limit", "3")])
        _alter(admin, "sg", [("share.delivery.count.limit", None),
                             ("share.record.lock.duration.ms", "20000")])
        _alter(admin, "st", list(CONFIGS["st"].items()))
        _alter(admin, CLEARED, [("consumer.session.timeout.ms", "50000")])
        _alter(admin, CLEARED, [("consumer.session.timeout.ms", None)])
        assert server.stop() == 0


if __name__ == "__main__":
    write(Path(sys.argv[1]))
