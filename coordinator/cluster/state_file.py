"""The cluster's leaders and leader epochs across restarts: ``cluster-state.json`` in the log
directory, rewritten (to a temporary file, fsynced, renamed) after every move. Clients ignore
metadata whose leader epoch is older than one they saw (KIP-320), so epochs must never go back
when the server restarts; which brokers run is not kept (a restart starts them all)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .model import Cluster

FILE_NAME = "cluster-state.json"


def load(log_dir: str | Path, cluster: Cluster) -> bool:
    """Restore what was saved into ``cluster``; False if there was nothing (or nothing
    readable: a damaged file is ignored, the cluster starts from its placement)."""
    path = Path(log_dir) / FILE_NAME
    try:
        saved: Any = json.loads(path.read_text())
        cluster.restore(saved)
    except FileNotFoundError:
        return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


def save(log_dir: str | Path, cluster: Cluster) -> None:
    path = Path(log_dir) / FILE_NAME
    temporary = path.with_suffix(".tmp")
    data = json.dumps(cluster.to_json(), indent=1).encode()
    with open(temporary, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
