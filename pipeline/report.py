"""``report.html``: the tables' highlights and the PNG plots."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from pipeline import plots
from pipeline.replay import GROUP_TYPES

if TYPE_CHECKING:
    from pipeline.job import JobOptions

PLOTS = {
    "assignor_runs.png": "Assignor runs over time",
    "rebalance_durations.png": "Rebalance durations",
    "partitions_moved.png": "Partitions moved per run",
    "commit_rates.png": "Offset commits over time",
}
RUN_COLUMNS = ["store", "group_id", "group_type", "epoch", "timestamp", "since_previous_ms",
               "members", "partitions", "partitions_moved", "standby_tasks_moved"]


def _table(df: pd.DataFrame, limit: int = 50) -> str:
    if df.empty:
        return "<p><em>none</em></p>"
    return df.head(limit).to_html(index=False, na_rep="", border=0, classes="t",
                                  float_format=lambda v: f"{v:,.1f}")


def _ms_columns_to_time(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for col in df.columns:
        if col.endswith("_ms") and not col.startswith(("p50", "p99", "max", "since", "duration")):
            df[col] = pd.to_datetime(df[col], unit="ms", utc=True).dt.strftime(
                "%Y-%m-%d %H:%M:%S")
    return df


def _read(out: Path, name: str) -> pd.DataFrame:
    """A table the job wrote (small: read on the driver, without a Spark job)."""
    return pq.read_table(out / name).to_pandas()


def draw_group_plots(out: Path, assignment_interval_ms: int) -> dict[str, Path]:
    """The plots of ``assignment_runs`` and ``rebalances`` (the job draws them while it writes
    the other tables)."""
    runs = _read(out, "assignment_runs")[RUN_COLUMNS]
    rebalances = _read(out, "rebalances")
    return {
        "assignor_runs.png": plots.assignor_runs(runs, assignment_interval_ms,
                                                 out / "assignor_runs.png"),
        "rebalance_durations.png": plots.rebalance_durations(rebalances,
                                                             out / "rebalance_durations.png"),
        "partitions_moved.png": plots.partitions_moved(runs, out / "partitions_moved.png"),
    }


def write_report(spark: SparkSession, out: Path, per_minute: DataFrame,
                 options: JobOptions, group_plots: dict[str, Path] | None = None) -> Path:
    """``group_plots``: what :func:`draw_group_plots` drew (drawn here if not given)."""
    summary = _read(out, "group_summary")
    runs = _read(out, "assignment_runs")[RUN_COLUMNS]
    rebalances = _read(out, "rebalances")
    slowest = (rebalances[rebalances["status"] == "completed"]
               .sort_values("duration_ms", ascending=False, na_position="last", kind="stable")
               .head(10))
    expiration = _read(out, "offset_expiration")
    expiring = (expiration[expiration["status"].isin(["due", "expired", "pending"])]
                .groupby(["store", "group_id", "rule", "status"], as_index=False)
                .agg(offsets=("status", "size"), expires_at_ms=("expires_at_ms", "min"))
                .sort_values("expires_at_ms", na_position="first", kind="stable").head(30))
    minutes = per_minute.toPandas()
    pngs = dict(group_plots if group_plots is not None
                else draw_group_plots(out, options.assignment_interval_ms))
    pngs["commit_rates.png"] = plots.commit_rates(minutes, out / "commit_rates.png")
    stores = ", ".join(html.escape(d) for d in options.log_dirs)
    by_type = summary["group_type"].value_counts() if len(summary) else pd.Series(dtype=int)
    types = ", ".join(f"{int(by_type[t])} {t}" for t in (*GROUP_TYPES, "none")
                      if by_type.get(t, 0))
    groups = f"{len(summary)} groups" + (f" ({types})" if types else "")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>Coordinator rebalance report</title><style>",
        "body{font-family:sans-serif;margin:2em;max-width:1200px}",
        "table.t{border-collapse:collapse;font-size:12px}",
        "table.t td,table.t th{border:1px solid #ccc;padding:2px 6px;text-align:right}",
        "img{max-width:100%;border:1px solid #eee;margin:8px 0}</style></head><body>",
        "<h1>Coordinator rebalance report</h1>",
        f"<p>Stores: {stores}. Generated {time.strftime('%Y-%m-%d %H:%M:%S')}. "
        f"{groups}, {len(runs):,} assignor runs, "
        f"{int((rebalances['status'] == 'completed').sum()) if len(rebalances) else 0:,} "
        f"completed rebalances. Offsets retention: {options.retention_minutes} min.</p>",
        "<h2>Groups</h2>", _table(_ms_columns_to_time(summary), 200),
        "<h2>Slowest rebalances</h2>", _table(_ms_columns_to_time(slowest)),
        "<h2>Offsets expiring or expired</h2>", _table(_ms_columns_to_time(expiring)),
    ]
    for name, title in PLOTS.items():
        parts.append(f"<h2>{html.escape(title)}</h2><img src='{pngs[name].name}' "
                     f"alt='{html.escape(title)}'>")
    parts.append("<p>Tables (Parquet): " + ", ".join(
        f"<code>{n}/</code>" for n in ("assignment_runs", "member_timeline", "rebalances",
                                       "offset_commits", "offset_expiration", "group_summary"))
                 + "</p></body></html>")
    path = out / "report.html"
    path.write_text("\n".join(parts))
    return path
