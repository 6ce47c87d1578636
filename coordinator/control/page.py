"""The rebalance timeline as a web page, and the index of groups: HTML the control endpoint
serves (``pages.py``) and that ``python -m coordinator log timeline --html`` and the pytest
plugin write to files.

The page is one HTML document, its script and its style sheet (``static/timeline.js``,
``static/timeline.css``, shipped with the package): no CDN, nothing from the network. Served
live, it links them from the server (``/static/...``) and polls ``GET /timeline?group=G`` with
``since``; written offline, it holds them inline with the events (a ``<script
type="application/json">``), so the file opens anywhere on its own.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import quote

ASSETS = {"timeline.js": "text/javascript; charset=utf-8",
          "timeline.css": "text/css; charset=utf-8"}
"""The files under ``static/`` the server serves, with their content types."""

HTML = "text/html; charset=utf-8"
POLL_INTERVAL_MS = 1000


@dataclass(frozen=True, slots=True)
class Body:
    """An answer that is not JSON: its bytes and content type."""

    data: bytes
    content_type: str

    @classmethod
    def html(cls, text: str) -> Body:
        return cls(text.encode(), HTML)


def asset(name: str) -> Body | None:
    """A file of ``static/`` (``ASSETS``), or None for any other name."""
    content_type = ASSETS.get(name)
    if content_type is None:
        return None
    data = resources.files(__package__).joinpath("static", name).read_bytes()
    return Body(data, content_type)


def timeline_path(group: str) -> str:
    """The page's path on the control endpoint."""
    return f"/groups/{quote(group, safe='')}/timeline.html"


def _script_json(value: Any) -> str:
    """JSON that cannot end the ``<script>`` it sits in."""
    return json.dumps(value, separators=(",", ":"), default=str).replace("<", "\\u003c")


def _document(title: str, head: str, body_attrs: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title>{head}</head>"
            f"<body{body_attrs}>{body}</body></html>\n")


def _timeline_body(group: str, index_link: bool) -> str:
    back = '<a href="/">all groups</a>' if index_link else ""
    return (f"<header><h1>Rebalance timeline of {html.escape(group)}</h1>{back}"
            '<span class="controls">zoom <button data-zoom="0.5">-</button>'
            '<button data-zoom="2">+</button></span><span id="status"></span></header>'
            '<div id="summary"></div><div class="legend" id="legend"></div>'
            '<div id="timeline"></div>')


def live_timeline(group: str, interval_ms: int = POLL_INTERVAL_MS) -> str:
    """The page the control endpoint serves: it loads the script and style from the server and
    follows ``GET /timeline?group=G`` every ``interval_ms``."""
    poll = "/timeline?group=" + quote(group, safe="")
    head = ('<link rel="stylesheet" href="/static/timeline.css">'
            '<script src="/static/timeline.js" defer></script>')
    attrs = (f' data-group="{html.escape(group)}" data-poll="{html.escape(poll)}"'
             f' data-interval="{int(interval_ms)}"')
    return _document(f"{group}: rebalance timeline", head, attrs, _timeline_body(group, True))


def offline_timeline(group: str, events: Iterable[Mapping[str, Any]]) -> str:
    """A page that stands alone: the script, the style and ``events`` inline."""
    text = {name: asset(name) for name in ASSETS}
    css, js = text["timeline.css"], text["timeline.js"]
    assert css is not None and js is not None
    head = f"<style>{css.data.decode()}</style>"
    body = (_timeline_body(group, False)
            + f'<script id="timeline-events" type="application/json">'
              f"{_script_json([dict(event) for event in events])}</script>"
            + f"<script>{js.data.decode()}</script>")
    return _document(f"{group}: rebalance timeline", head,
                     f' data-group="{html.escape(group)}"', body)


GROUP_COLUMNS = ("group", "type", "state", "epoch", "members")


def index(groups: Sequence[Mapping[str, Any]]) -> str:
    """``GET /``: every group with its type, state, epoch and member count, each linking to
    its timeline page."""
    rows = []
    for group in groups:
        name = str(group["group"])
        cells = [f'<td><a href="{html.escape(timeline_path(name))}">{html.escape(name)}</a></td>']
        for column in GROUP_COLUMNS[1:]:
            value = group.get(column)
            css = ' class="num"' if column in ("epoch", "members") else ""
            cells.append(f"<td{css}>{'' if value is None else html.escape(str(value))}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    header = "".join(f"<th>{column}</th>" for column in GROUP_COLUMNS)
    table = (f'<table class="groups"><thead><tr>{header}</tr></thead>'
             f"<tbody>{''.join(rows)}</tbody></table>" if rows
             else "<p>No group yet.</p>")
    body = (f"<header><h1>Groups</h1><span>{len(rows)} group{'' if len(rows) == 1 else 's'}"
            '; JSON: <a href="/groups">/groups</a></span></header>' + table)
    return _document("Groups", '<link rel="stylesheet" href="/static/timeline.css">', "", body)
