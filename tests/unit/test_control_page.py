"""The timeline page's HTML (``coordinator/control/page.py``) without a browser: where it lives,
what a live page polls, an offline page's events inline (no group id or event text can end a
script or an attribute), the index's rows."""

from __future__ import annotations

import json

from coordinator.control import page


def test_the_page_of_any_group_id_has_one_path() -> None:
    assert page.timeline_path("orders") == "/groups/orders/timeline.html"
    assert page.timeline_path("a/b c") == "/groups/a%2Fb%20c/timeline.html"


def test_a_live_page_polls_its_group_and_links_its_assets() -> None:
    html = page.live_timeline('x"><script>', interval_ms=250)
    assert 'data-poll="/timeline?group=x%22%3E%3Cscript%3E"' in html
    assert 'data-interval="250"' in html
    assert '<script src="/static/timeline.js" defer></script>' in html
    assert 'href="/static/timeline.css"' in html
    assert "<script>" not in html.split("</title>")[0]  # the title is escaped too


def test_an_offline_page_holds_everything_inline() -> None:
    events = [{"timestamp": 1, "kind": "member-joined", "group": "g", "group_type": "consumer",
               "member": "m", "client_id": "</script><script>alert(1)</script>"}]
    html = page.offline_timeline("g", events)
    assert "/static/" not in html  # nothing to fetch
    js = page.asset("timeline.js")
    assert js is not None and js.data.decode() in html
    inline = html.split('<script id="timeline-events" type="application/json">')[1]
    data, _, _ = inline.partition("</script>")
    assert json.loads(data) == events  # the client id did not end the script
    assert "<script>alert" not in html


def test_the_assets_are_the_static_files_and_nothing_else() -> None:
    for name, content_type in page.ASSETS.items():
        body = page.asset(name)
        assert body is not None and body.content_type == content_type and body.data
    assert page.asset("../page.py") is None and page.asset("timeline.html") is None


def test_the_index_links_each_group() -> None:
    html = page.index([{"group": "a&b", "type": "consumer", "state": "stable", "epoch": 7,
                        "members": 3},
                       {"group": "gone", "type": None, "state": "gone", "epoch": None,
                        "members": 0}])
    assert '<a href="/groups/a%26b/timeline.html">a&amp;b</a>' in html
    assert '<td class="num">7</td><td class="num">3</td>' in html
    assert "2 groups" in html
    assert "No group yet" in page.index([])
