"""The report's PNG plots (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from pipeline.replay import GROUP_TYPES

MAX_GROUPS = 12  # groups drawn per plot (the busiest)
TYPE_COLORS = {"consumer": "#4C72B0", "share": "#DD8452", "streams": "#64B5CD",
               "classic": "#8172B3"}
Kinds = dict[tuple[str, str], str]  # (store, group_id) -> group type


def _label(store: str, group: str, multi_store: bool, kinds: Kinds | None = None) -> str:
    label = f"{store}:{group}" if multi_store else group
    kind = None if kinds is None else kinds.get((store, group))
    return label if kind is None else f"{label} ({kind})"


def _kinds(runs: pd.DataFrame) -> Kinds | None:
    """Each group's type, when the runs hold more than one type (for the legends)."""
    if not len(runs) or runs["group_type"].nunique() < 2:
        return None
    last = runs.drop_duplicates(["store", "group_id"], keep="last")
    return {(s, g): t for s, g, t in zip(last["store"], last["group_id"], last["group_type"],
                                         strict=True)}


def _busiest(df: pd.DataFrame, n: int = MAX_GROUPS) -> list[tuple[str, str]]:
    counts = df.groupby(["store", "group_id"]).size().sort_values(ascending=False)
    return list(counts.index[:n])


def _empty(ax: plt.Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def assignor_runs(runs: pd.DataFrame, interval_ms: int, path: Path) -> Path:
    """Each assignor run over time, at the height of the time since the group's previous
    run, with the configured assignment interval drawn in."""
    fig, ax = plt.subplots(figsize=(10, 5))
    multi = runs["store"].nunique() > 1 if len(runs) else False
    t0 = runs["timestamp"].min() if len(runs) else 0
    kinds = _kinds(runs)
    drawn = False
    for store, group in _busiest(runs):
        g = runs[(runs["store"] == store) & (runs["group_id"] == group)]
        g = g[g["since_previous_ms"].notna()]
        if len(g):
            ax.plot((g["timestamp"] - t0) / 1000.0, g["since_previous_ms"].clip(lower=1),
                    marker="o", markersize=3, linestyle="-", linewidth=0.6,
                    label=_label(store, group, multi, kinds))
            drawn = True
    ax.axhline(interval_ms, color="red", linestyle="--",
               label=f"consumer assignment interval {interval_ms} ms")
    ax.set_yscale("log")
    ax.set_xlabel("time since the first run (s)")
    ax.set_ylabel("time since the group's previous run (ms)")
    ax.set_title("Assignor runs over time")
    if not drawn:
        _empty(ax, "no group ran the assignor twice")
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)


def rebalance_durations(rebalances: pd.DataFrame, path: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    done = rebalances[(rebalances["status"] == "completed")
                      & rebalances["duration_ms"].notna()]
    if len(done):
        # stacked by group type (consumer, share, streams: classic rebalances have no
        # duration)
        kinds = [t for t in GROUP_TYPES if (done["group_type"] == t).any()]
        left.hist([done.loc[done["group_type"] == t, "duration_ms"] for t in kinds],
                  bins=min(50, max(5, len(done) // 4)), stacked=True, label=kinds,
                  color=[TYPE_COLORS[t] for t in kinds])
        left.legend(title="group type", fontsize=8)
        durations = done.groupby("group_id")["duration_ms"]
        per = (pd.DataFrame({"p50": durations.quantile(0.5), "p99": durations.quantile(0.99)})
               .sort_values("p99").tail(MAX_GROUPS))
        per.plot.barh(ax=right, color=["#55A868", "#C44E52"])
        right.legend(["p50", "p99"], fontsize=8)
    else:
        _empty(left, "no completed rebalance with a known start")
        _empty(right, "-")
    left.set_xlabel("rebalance duration (ms)")
    left.set_ylabel("rebalances")
    left.set_title("Rebalance durations (epoch bump to all members stable)")
    right.set_xlabel("ms")
    right.set_title("p50 / p99 per group")
    return _save(fig, path)


def partitions_moved(runs: pd.DataFrame, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    multi = runs["store"].nunique() > 1 if len(runs) else False
    t0 = runs["timestamp"].min() if len(runs) else 0
    kinds = _kinds(runs)
    for store, group in _busiest(runs):
        g = runs[(runs["store"] == store) & (runs["group_id"] == group)]
        label = _label(store, group, multi, kinds)
        (line,) = ax.plot((g["timestamp"] - t0) / 1000.0, g["partitions_moved"], marker=".",
                          linestyle="-", linewidth=0.6, label=label)
        standby = g[g["standby_tasks_moved"].notna()]
        if len(standby):  # a streams group's standby tasks: dashed, in the same colour
            ax.plot((standby["timestamp"] - t0) / 1000.0, standby["standby_tasks_moved"],
                    marker="x", linestyle="--", linewidth=0.6, color=line.get_color(),
                    label=f"{label} standby")
    if not len(runs):
        _empty(ax, "no assignment runs")
    ax.set_xlabel("time since the first run (s)")
    ax.set_ylabel("partitions moved (streams: tasks)")
    ax.set_title("Partitions moved per assignor run (streams groups: active and standby tasks)")
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)


def commit_rates(per_minute: pd.DataFrame, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    multi = per_minute["store"].nunique() > 1 if len(per_minute) else False
    t0 = per_minute["minute_ms"].min() if len(per_minute) else 0
    for store, group in _busiest(per_minute):
        g = per_minute[(per_minute["store"] == store) & (per_minute["group_id"] == group)]
        g = g.sort_values("minute_ms")
        ax.plot((g["minute_ms"] - t0) / 60_000.0, g["count"], marker=".",
                label=_label(store, group, multi))
    if not len(per_minute):
        _empty(ax, "no offset commits")
    ax.set_xlabel("minute")
    ax.set_ylabel("offset commits per minute")
    ax.set_title("Offset commits over time")
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)
