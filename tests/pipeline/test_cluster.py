"""The report job on a real Spark standalone cluster (a master and a worker started from the
PySpark install) gives the same tables as the local run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.job import JobResult
from tests.harness import wait_until
from tests.pipeline.compare import assert_same_outputs
from tests.pipeline.standalone import ROOT, cluster_env, standalone_cluster

# a master, a worker and an application's JVMs, the local run beside them, then the job with
# its own 240 s limit: at a 3x slowdown beside the rest of the suite this took 215-263 s and
# then over pytest-timeout's 300 s; the steps bound themselves, this only catches a hang
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_report_on_a_standalone_cluster_equals_the_local_run(
        odd_store: Path, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    with standalone_cluster(tmp_path / "cluster") as cluster:
        # the local run (if no test ran it yet) while the cluster's JVMs start
        odd_job: tuple[JobResult, Path] = request.getfixturevalue("odd_job")
        local, local_out = odd_job
        cluster.wait_ready()
        proc = subprocess.run(
            [sys.executable, "-m", "pipeline", "report", "--log-dirs", str(odd_store),
             "--out", str(tmp_path / "cluster-out"), "--master", cluster.url, "--quiet"],
            cwd=ROOT, env=cluster_env(), capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, f"{proc.stderr[-5000:]}\n{cluster.logs()[-5000:]}"
        # it ran on the cluster: the master saw the application come and go
        apps = wait_until(lambda: [app for app in cluster.status()["completedapps"]
                                   if app["name"] == "coordinator-pipeline"],
                          timeout=30, message="the master to list the finished application")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["records"] == local.records > 10_000
    assert summary["tables"] == local.rows
    assert (tmp_path / "cluster-out" / "report.html").exists()
    assert_same_outputs(local_out, tmp_path / "cluster-out")
    assert len(apps) == 1 and apps[0]["state"] == "FINISHED", apps
    executors = list((tmp_path / "cluster" / "worker").glob("app-*/*/stderr"))
    assert executors, "no executor ran on the worker"
