"""What the pytest plugin keeps of a server when a test that used it fails: its log and the
rebalance timeline page of every group it saw, as files next to each other, so that the report
can say where they are and a browser can open the pages after the server is gone."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from coordinator.control.page import offline_timeline

from .process import CoordinatorError
from .timeline import Timeline

if TYPE_CHECKING:
    from .process import Coordinator


def report_dir(coordinator: Coordinator) -> Path:
    """Where the files go: beside the server's data directory (``<data>-report``)."""
    data = coordinator.data_dir
    return data.with_name(f"{data.name}-report")


def page_name(group: str) -> str:
    """A file name for ``group``'s page that no group id can escape from."""
    return f"timeline-{urllib.parse.quote(group, safe='')}.html"


def save(coordinator: Coordinator, directory: Path | None = None) -> tuple[Path, list[Path]]:
    """Write the server's log (``server.log``) and, while it runs with its control endpoint on,
    each group's timeline page (the events inline: the file stands alone) into ``directory``;
    returns (the log's path, the pages' paths)."""
    directory = directory or report_dir(coordinator)
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / "server.log"
    log_path.write_text(coordinator.output(), encoding="utf-8")
    pages: list[Path] = []
    try:
        url = coordinator.control_url
    except CoordinatorError:
        return log_path, pages  # the control endpoint is off
    if not coordinator.alive():
        return log_path, pages
    for entry in coordinator.control.get("/groups")["groups"]:
        group = entry["group"]
        timeline = Timeline.fetch(url, group)
        if not timeline.events:
            continue
        path = directory / page_name(group)
        path.write_text(offline_timeline(group, timeline.events), encoding="utf-8")
        pages.append(path)
    return log_path, pages
