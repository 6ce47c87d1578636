"""A real Prometheus (Debian's ``prometheus`` package, which ``make test`` installs) scrapes the
coordinator's exporter during a group scenario; its HTTP API must then answer our metrics with
the values the scenario implies."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import ServerProcess, free_port, wait_until
from tests.integration import metrics_scenario as sc

pytestmark = pytest.mark.slow

PROMETHEUS = shutil.which("prometheus")
WAIT = 60.0


def _config(target: str) -> str:
    return f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: coordinator
    static_configs:
      - targets: ["{target}"]
"""


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """(Prometheus's API base URL, the port its config scrapes)."""
    assert PROMETHEUS, "prometheus is missing: `make test` installs Debian's package"
    exporter_port, web_port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(_config(f"127.0.0.1:{exporter_port}"))
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{web_port}", "--log.level=warn"],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{web_port}"
    try:
        wait_until(lambda: proc.poll() is not None or _ready(base), 30,
                   message="Prometheus to be ready")
        assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()
        yield base, exporter_port
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def query(base: str, promql: str) -> list[tuple[dict[str, str], float]]:
    """An instant query: (labels, value) for each series."""
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return [(r["metric"], float(r["value"][1])) for r in body["data"]["result"]]


def scalar(base: str, promql: str) -> float | None:
    result = query(base, promql)
    return result[0][1] if len(result) == 1 else None


def test_prometheus_scrapes_the_coordinator(prometheus: tuple[str, int], tmp_path: Path) -> None:
    base, port = prometheus
    server = ServerProcess(tmp_path / "data", {
        **sc.OVERRIDES, "metrics.listener": f"http://127.0.0.1:{port}"}).start()
    p = sc.PREFIX
    try:
        wait_until(lambda: scalar(base, 'up{job="coordinator"}') == 1, WAIT,
                   message="Prometheus to scrape the coordinator")
        with sc.scenario(server):
            expected = {
                f'{p}consumer_group_count{{state="stable"}}': 1,
                f'{p}classic_group_count{{state="stable"}}': 1,
                f'{p}group_count{{protocol="consumer"}}': 1,
                f'{p}partition_count{{state="active"}}': 50,
                f'{p}offset_deletion_count': 1,
                f'{p}consumer_lag{{group="{sc.LAGGING_GROUP}",partition="1"}}':
                    sc.PER_PARTITION - sc.LAGGING_OFFSET,
                f'sum({p}consumer_lag{{group="{sc.CONSUMER_GROUP}"}})': 0,
            }
            # defs, not lambdas, below: mypy cannot infer a lambda with a default argument
            for promql, want in expected.items():
                def equal(promql: str = promql, want: int = want) -> bool:
                    return scalar(base, promql) == want

                wait_until(equal, WAIT, message=f"{promql} == {want} in Prometheus")
            at_least = {
                f"{p}offset_commit_count": 2 * sc.PARTITIONS * sc.PER_PARTITION,
                f"{p}consumer_group_rebalance_count": 2,
                f"sum({p}assignor_run_time_ms_count)": 1,
                f"{p}background_processing_time_ms_count": 1,
            }
            for promql, want in at_least.items():
                def reached(promql: str = promql, want: int = want) -> bool:
                    return (scalar(base, promql) or 0) >= want

                wait_until(reached, WAIT, message=f"{promql} >= {want} in Prometheus")
            # the histograms aggregate as Prometheus users expect
            quantile = (f"histogram_quantile(0.99, sum by (le) "
                        f"(rate({p}event_processing_time_ms_bucket[30s])))")
            wait_until(lambda: (scalar(base, quantile) or -1) >= 0, WAIT,
                       message="a p99 of event processing time from the histogram")
    finally:
        server.stop()
