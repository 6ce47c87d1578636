"""``python -m coordinator bench timeline-page``: how long a large group's timeline page takes
to draw in headless Chromium.

The store is a real one: ``--log-dir`` (with ``--group``) names one, e.g. a ``bench storm
--log-dir DIR`` run's (group ``storm-large``); without it the bench makes one by running
``bench storm`` short (``--members`` members, one churn phase) into a temporary directory. The
page is written offline from the store (``log timeline --html``: the events inline) and opened
``--runs`` times; each run reports what the page measured itself (``render_ms``: building the
drawing and putting it in the DOM; ``ready_ms``: from navigation start to the drawing done,
the HTML and its JSON parsed included) and the wall time of the whole Chromium process (start,
load, draw, DOM dump, exit: ``load_s``; and with layout and paint, ``screenshot_s``). The
reference is the same two runs on a one-member page, in the same run: ``load_ratio`` is the
large page's load time over it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.control.page import offline_timeline
from coordinator.groups.timeline_records import store_timeline
from coordinator.testing import chromium, timeline_dom

from .storm import LARGE_GROUP

REFERENCE_EVENTS = [
    {"timestamp": 1000, "kind": "member-joined", "group": "reference", "group_type": "consumer",
     "member": "m"},
    {"timestamp": 1001, "kind": "assigned", "group": "reference", "group_type": "consumer",
     "member": "m", "epoch": 2, "partitions": {"t": [0]}},
]


def make_store(log_dir: Path, members: int, duration_s: float = 5.0,
               heartbeat_interval_ms: int = 5000) -> None:
    """A real store of a ``members``-member group: ``bench storm``, short (``duration_s`` of
    no churn, then as long of churn; the broker's heartbeat interval ``heartbeat_interval_ms``)."""
    subprocess.run([sys.executable, "-m", "coordinator", "bench", "storm", "--json",
                    "--members", str(members), "--topics", "20",
                    "--partitions-per-topic", str(max(1, 2 * members // 20)),
                    "--duration-s", f"{duration_s:g}", "--bystander-groups", "1",
                    "--bystander-members", "1", "--settings", "1000:on",
                    "--heartbeat-interval-ms", str(heartbeat_interval_ms),
                    "--log-dir", str(log_dir)],
                   check=True, stdout=subprocess.DEVNULL, timeout=1800)


def measure(page: Path, runs: int) -> dict[str, Any]:
    loads, shots, render, ready = [], [], [], []
    drawn = timeline_dom.Drawn()
    for _ in range(runs):
        result = chromium.dump_dom(page.as_uri())
        drawn = timeline_dom.read(result.output)
        loads.append(result.seconds)
        render.append(float(drawn.body["render-ms"]))
        ready.append(float(drawn.body["ready-ms"]))
        began = time.monotonic()
        chromium.screenshot(page.as_uri(), page.with_suffix(".png"))
        shots.append(time.monotonic() - began)
    return {"lanes": len(drawn.lanes), "bars": len(drawn.bars), "markers": len(drawn.markers),
            "render_ms": round(statistics.median(render), 1),
            "ready_ms": round(statistics.median(ready), 1),
            "load_s": round(statistics.median(loads), 3),
            "screenshot_s": round(statistics.median(shots), 3)}


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="timeline-page-") as tmp:
        work = Path(tmp)
        log_dir = Path(args.log_dir) if args.log_dir else work / "store"
        group = args.group
        if not args.log_dir:
            if not args.json:
                print(f"# making a store: bench storm with {args.members} members", flush=True)
            make_store(log_dir, args.members, args.storm_duration_s,
                       args.storm_heartbeat_interval_ms)
        began = time.monotonic()
        events = list(store_timeline(log_dir, group))
        read_s = time.monotonic() - began
        if not events:
            print(f"error: the store has no record of group {group}", file=sys.stderr)
            return 1
        page = work / "large.html"
        page.write_text(offline_timeline(group, events), encoding="utf-8")
        reference = work / "reference.html"
        reference.write_text(offline_timeline("reference", REFERENCE_EVENTS), encoding="utf-8")
        ref = measure(reference, args.runs)
        large = measure(page, args.runs)
        html_bytes = page.stat().st_size
    row = {"group": group, "events": len(events), "store_read_s": round(read_s, 3),
           "html_bytes": html_bytes, **large,
           "reference_load_s": ref["load_s"], "reference_screenshot_s": ref["screenshot_s"],
           "load_ratio": round(large["load_s"] / ref["load_s"], 2),
           "screenshot_ratio": round(large["screenshot_s"] / ref["screenshot_s"], 2)}
    print(json.dumps(row) if args.json else "\n".join(f"{k:>24} {v}" for k, v in row.items()))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-dir", help="a store (default: make one with bench storm)")
    parser.add_argument("--group", default=LARGE_GROUP, help="the group to draw")
    parser.add_argument("--members", type=int, default=1000,
                        help="the group's members when the bench makes the store")
    parser.add_argument("--runs", type=int, default=3, help="page loads to take the median of")
    parser.add_argument("--storm-duration-s", type=float, default=5.0,
                        help="when the bench makes the store: bench storm's --duration-s")
    parser.add_argument("--storm-heartbeat-interval-ms", type=int, default=5000,
                        help="when the bench makes the store: bench storm's "
                             "--heartbeat-interval-ms")
    parser.add_argument("--json", action="store_true", help="one JSON object")
