"""``meta.properties`` in the log directory: the cluster id, created once and kept."""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path

from coordinator.config.properties import read_properties

FILE_NAME = "meta.properties"


class MetaPropertiesError(RuntimeError):
    pass


def new_cluster_id() -> str:
    """A random id in Kafka's form: a UUID as 22 characters of URL-safe base64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def load_or_create(log_dir: str | Path, node_id: int) -> str:
    """The cluster id stored under ``log_dir``, creating the file on first start."""
    directory = Path(log_dir)
    path = directory / FILE_NAME
    if path.exists():
        props = read_properties(path)
        stored_node = props.get("node.id")
        if stored_node is not None and int(stored_node) != node_id:
            raise MetaPropertiesError(
                f"Stored node id {stored_node} doesn't match previous node id {node_id} "
                f"in {path}. If you moved your data, make sure your configured node id matches."
            )
        cluster_id = props.get("cluster.id")
        if not cluster_id:
            raise MetaPropertiesError(f"{path} has no cluster.id")
        return cluster_id
    directory.mkdir(parents=True, exist_ok=True)
    cluster_id = new_cluster_id()
    text = f"#\nversion=1\nnode.id={node_id}\ncluster.id={cluster_id}\n"
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return cluster_id
