"""What ``python -m coordinator serve`` imports before it serves: not the benches, soaks and the
clients they drive (imported only for their own command), not Hypothesis (kio registers
strategies with it when it can import it: CPU for nothing in a server)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator import cli
from coordinator.testing.server_process import ROOT

_NOT_FOR_SERVE = ("coordinator.bench", "coordinator.soak", "assignors.bench", "confluent_kafka",
                  "kafka", "aiokafka")


def _imported(args: list[str]) -> tuple[int, set[str]]:
    """Exit code of ``python -X importtime -m coordinator <args>``, and the modules it
    imported."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "coordinator", *args],
                            cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    modules = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
               if line.startswith("import time:") and "|" in line}
    return result.returncode, modules


@pytest.mark.slow
def test_serve_imports_what_serving_needs_only(tmp_path: Path) -> None:
    # the server is being built (what it runs with imported), then stops: its store is not
    # its node's
    (tmp_path / "meta.properties").write_text("node.id=7\ncluster.id=x\n")
    code, modules = _imported(["serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                               "--override", "metrics.listener=",
                               "--override", f"log.dirs={tmp_path}"])
    assert code == 1
    assert {"coordinator.app", "kio.static.primitive", "storage.records"} <= modules
    assert not {m for m in modules if any(m == p or m.startswith(p + ".") for p in _NOT_FOR_SERVE)}
    # kio's attempt is listed (and fails); importing Hypothesis would import its core
    assert "hypothesis.core" not in modules
    # protobuf (a telemetry push's decode) and scramp (a SCRAM exchange): at first use
    assert not {m for m in modules if m.split(".")[0] in ("google", "opentelemetry", "scramp",
                                                          "asn1crypto")}


def _parsed_imports(args: list[str]) -> set[str]:
    """The modules of this repository's benches and soaks imported once ``python -m
    coordinator <args>`` parsed its arguments (``--help`` among them)."""
    code = ("import sys\nfrom coordinator import cli\ntry:\n    cli.main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\nprint(' '.join(m for m in sys.modules if "
            "m.startswith(('coordinator.bench.', 'coordinator.soak.'))), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=True)
    return set(result.stderr.split())  # the help went to stdout


def test_a_bench_or_soak_imports_its_own_module_only() -> None:
    assert _parsed_imports(["bench", "fixture", "--help"]) == {
        "coordinator.bench.fixture", "coordinator.bench.server_runs"}
    assert _parsed_imports(["soak", "chaos", "--help"]) >= {"coordinator.soak.chaos"}
    assert "coordinator.soak.fuzz" not in _parsed_imports(["soak", "chaos", "--help"])


def test_every_command_still_parses_with_its_own_parser() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["bench", "load", "--records", "10"]).records == "10"
    assert parser.parse_args(["bench", "codec"]).iterations == 20000
    assert parser.parse_args(["soak", "fuzz"]).soak == "fuzz"
    assert cli.build_parser("serve").parse_args(["serve"]).command == "serve"
    storm = cli.build_parser("bench", "storm").parse_args(["bench", "storm", "--members", "6"])
    assert storm.members == 6
    for module, _ in [*cli.BENCHES.values(), *cli.SOAKS.values()]:
        loaded = importlib.import_module(module)
        assert callable(loaded.add_arguments) and callable(loaded.run), module
