"""The control endpoint's web pages: the index of groups and each group's rebalance timeline
(``page.py`` draws them).

| route | what |
| --- | --- |
| ``GET /`` | the groups (type, state, epoch, members), each linking to its timeline page |
| ``GET /groups`` | the same as JSON: ``{"groups": [{"group", "type", "state", ...}]}`` |
| ``GET /groups/<group>/timeline.html`` | the group's timeline page, following ``GET /timeline`` |
| ``GET /static/<file>`` | the page's script and style sheet |
"""

from __future__ import annotations

import re
from typing import Any

from coordinator.groups import metrics_view

from . import page
from .routes import Answer, Control, Handler, Request


def groups(runtime: Any, timeline: Any = None) -> list[dict[str, Any]]:
    """Every group the active coordinator partitions hold, then those only the timeline still
    remembers (deleted, or on a partition not loaded): by group id. Read on the event loop."""
    found: dict[str, dict[str, Any]] = {}
    for partition in list(runtime.partitions):
        shard = partition.shard
        if shard is None or partition.state.value != "active":
            continue
        for group_id, group in list(shard.groups.items()):
            view = metrics_view.view(group)
            epoch = getattr(group, "group_epoch", getattr(group, "generation_id", None))
            found[group_id] = {"group": group_id, "type": view.protocol, "state": view.state,
                               "epoch": epoch, "members": len(getattr(group, "members", {}))}
    for group_id in timeline.groups() if timeline is not None else ():
        found.setdefault(group_id, {"group": group_id, "type": None, "state": "gone",
                                    "epoch": None, "members": 0})
    return [found[group_id] for group_id in sorted(found)]


def _groups(control: Control) -> Answer:
    app = control.app

    async def read() -> Answer:
        return 200, {"groups": groups(app.runtime, getattr(app, "timeline", None))}

    return control.on_loop(read)


def list_groups(control: Control, request: Request) -> Answer:
    return _groups(control)


def index(control: Control, request: Request) -> Answer:
    status, body = _groups(control)
    if status != 200:
        return status, body
    return 200, page.Body.html(page.index(body["groups"]))


def timeline_page(control: Control, request: Request) -> Answer:
    return 200, page.Body.html(page.live_timeline(request.params[0]))


def static(control: Control, request: Request) -> Answer:
    body = page.asset(request.params[0])
    if body is None:
        return 404, {"error": f"no file {request.params[0]}", "files": sorted(page.ASSETS)}
    return 200, body


ROUTES: tuple[tuple[str, re.Pattern[str], Handler], ...] = (
    ("GET", re.compile(r"/"), index),
    ("GET", re.compile(r"/groups"), list_groups),
    ("GET", re.compile(r"/groups/([^/]+)/timeline\.html"), timeline_page),
    ("GET", re.compile(r"/static/([^/]+)"), static),
)
