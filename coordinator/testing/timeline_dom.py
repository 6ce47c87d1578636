"""What a rebalance timeline page drew, read back from its DOM (``chromium.dump_dom``): the
lanes, bars, overlaps and markers with the data attributes ``static/timeline.js`` gives them
(its header comment says which), and the ``<body>``'s (``data-events``, ``data-render-ms``,
...)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass(frozen=True, slots=True)
class Bar:
    member: str
    part: str
    start_index: int
    end_index: int | None
    """None while the member still owns it."""


@dataclass(frozen=True, slots=True)
class Overlap:
    part: str
    members: tuple[str, ...]
    start_index: int


@dataclass(frozen=True, slots=True)
class Marker:
    index: int
    kind: str
    member: str | None
    """None on the group's lane."""
    title: str


@dataclass(slots=True)
class Drawn:
    body: dict[str, str] = field(default_factory=dict)
    lanes: list[str] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    overlaps: list[Overlap] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    summary: str = ""


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.drawn = Drawn()
        self._marker: dict[str, str] | None = None
        self._in_title = False
        self._title: list[str] = []
        self._summary_depth = 0
        self._summary: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {name: value or "" for name, value in attrs}
        classes = set(a.get("class", "").split())
        if self._summary_depth:
            self._summary_depth += 1
        if tag == "body":
            self.drawn.body = {k[5:]: v for k, v in a.items() if k.startswith("data-")}
        elif a.get("id") == "summary":
            self._summary_depth = 1
        elif tag == "g" and "lane" in classes:
            self.drawn.lanes.append(a["data-member"])
        elif tag == "rect" and "bar" in classes and "data-part" in a:
            end = a["data-end-index"]
            self.drawn.bars.append(Bar(a["data-member"], a["data-part"],
                                       int(a["data-start-index"]), int(end) if end else None))
        elif tag == "rect" and "overlap" in classes and "data-part" in a:
            self.drawn.overlaps.append(Overlap(a["data-part"], tuple(a["data-members"].split()),
                                               int(a["data-start-index"])))
        elif tag == "g" and "marker" in classes:
            self._marker = a
        elif tag == "title" and self._marker is not None:
            self._in_title = True
            self._title = []

    def handle_endtag(self, tag: str) -> None:
        if self._summary_depth:
            self._summary_depth -= 1
            if not self._summary_depth:
                self.drawn.summary = "".join(self._summary)
        if tag == "title" and self._in_title:
            self._in_title = False
        elif tag == "g" and self._marker is not None:
            a = self._marker
            self.drawn.markers.append(Marker(int(a["data-index"]), a["data-kind"],
                                             a["data-member"] or None, "".join(self._title)))
            self._marker = None

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
        if self._summary_depth:
            self._summary.append(data)


def read(dom: str) -> Drawn:
    """The page's drawing, from its serialized DOM."""
    reader = _Reader()
    reader.feed(dom)
    reader.close()
    return reader.drawn
