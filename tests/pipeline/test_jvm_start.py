"""What a pipeline session starts from: the JVM class archive (:mod:`pipeline.jvm_archive`),
made by a real training run and then mapped by a real driver JVM, and the Python processes
Spark starts importing PySpark from its package (:mod:`pipeline.worker_path`)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource

from pipeline import jvm_archive
from pipeline.worker_path import unzipped_path
from tests.harness import wait_until
from tests.pipeline import suite_archive

# The module's first test waits for the run's archive: its training run here, or the bench
# test's on another worker (tests/pipeline/test_bench_reference.py), a minute of CPU that at a 3x
# slowdown beside the rest of the suite took 279-482 s; pytest-timeout's 300 s would count it
# against whichever test comes first. jvm_archive.build's own 600 s limit bounds the training.
pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[2]
SESSION = """
import sys
from pipeline.session import build_session
spark = build_session("local[1]", progress=False, java_options=sys.argv[1])
assert spark.range(5).count() == 5
print("count ok", flush=True)
spark.stop()
"""


def _env(archive: Path | str) -> dict[str, str]:
    return {**os.environ, jvm_archive.ENV: str(archive), "PYTHONPATH": str(ROOT)}


def _session(archive: Path | str, java_options: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SESSION, java_options], env=_env(archive),
                          cwd=ROOT, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's archive (tests/pipeline/suite_archive.py), in a directory of its own: made by
    a training run here, or by the bench test's if that one came first (this waits for it)."""
    path = jvm_archive.ensure(say=False, path=suite_archive.path(tmp_path_factory))
    assert path is not None
    return path


@pytest.mark.slow
def test_the_training_run_leaves_one_whole_archive(archive: Path) -> None:
    assert archive.stat().st_size > 10 * 2**20
    assert [p.name for p in archive.parent.iterdir()] == [archive.name]  # nothing aside


@pytest.mark.slow
def test_a_driver_jvm_loads_sparks_classes_from_the_archive(archive: Path,
                                                            tmp_path: Path) -> None:
    log = tmp_path / "classes.log"
    done = _session(archive, f"-Xlog:class+load=info:file={log}")
    assert "count ok" in done.stdout, done.stderr[-2000:]
    lines = log.read_text().splitlines()
    shared = [line for line in lines if "source: shared objects file (top)" in line]
    assert len(shared) > 2000, f"{len(shared)} of {len(lines)} classes from the archive"
    assert any(" org.apache.spark.SparkContext " in line for line in shared)


@pytest.mark.slow
def test_the_bench_uses_the_archive(archive: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "bench", "--records", "20000",
         "--keep-store", str(tmp_path / "store")],
        env=_env(archive), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["class_archive"] == str(archive)
    assert result["records"] >= 20000 and result["records_per_s"] > 0
    assert all(rows > 0 for rows in json.loads(result["tables"]).values())


@pytest.mark.slow
def test_a_damaged_archive_is_passed_over(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsa"
    bad.write_bytes(b"\x00not an archive" * 4096)
    done = _session(bad)
    assert "count ok" in done.stdout, done.stderr[-2000:]


def test_the_archive_follows_the_java_it_was_made_for(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jvm_archive.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = jvm_archive.archive_path()
    assert first is not None and first.parent == tmp_path / "cache" / "coordinator-pipeline"
    assert jvm_archive.java_options() == ""  # none made yet
    hint = jvm_archive.missing_hint()
    assert hint is not None and "python -m pipeline archive" in hint
    other = tmp_path / "jdk" / "bin" / "java"
    other.parent.mkdir(parents=True)
    other.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert jvm_archive.java_executable() == other.resolve()
    second = jvm_archive.archive_path()
    assert second is not None and second != first
    second.parent.mkdir(parents=True, exist_ok=True)
    second.write_bytes(b"x")
    assert jvm_archive.java_options() == f"-XX:SharedArchiveFile={second}"
    assert jvm_archive.missing_hint() is None
    monkeypatch.setenv(jvm_archive.ENV, jvm_archive.OFF)
    assert jvm_archive.archive_path() is None and jvm_archive.java_options() == ""
    assert jvm_archive.missing_hint() is None
    assert jvm_archive.ensure(say=False) is None


def _waiting_for_a_lock_on(directory: Path) -> bool:
    """This process waits for a flock on ``directory`` (/proc/locks: ``->`` marks a waiter)."""
    inode = os.stat(directory).st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 6 and fields[1] == "->" and fields[2] == "FLOCK" and \
                fields[5] == str(os.getpid()) and fields[6].endswith(f":{inode}"):
            return True
    return False


def test_runs_that_find_the_archive_missing_at_once_make_it_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "cache" / "classes.jsa"
    made: list[Path | None] = []

    def build(path: Path | None = None, timeout_s: float = 600) -> float:
        made.append(path)
        assert path is not None
        path.write_bytes(b"trained")
        return 0.0

    monkeypatch.setattr(jvm_archive, "build", build)
    target.parent.mkdir()
    other = os.open(target.parent, os.O_RDONLY)  # another run, making the archive
    fcntl.flock(other, fcntl.LOCK_EX)
    found: list[Path | None] = []
    waiter = threading.Thread(
        target=lambda: found.append(jvm_archive.ensure(say=False, path=target)))
    waiter.start()
    try:
        wait_until(lambda: _waiting_for_a_lock_on(target.parent), timeout=10,
                   message="ensure() to wait for the run making the archive")
        target.write_bytes(b"trained by the other run")
    finally:
        os.close(other)  # the other run is done
        waiter.join(timeout=10)
    assert found == [target] and made == []  # it took the other run's archive
    assert target.read_bytes() == b"trained by the other run"
    target.unlink()  # none there, nobody making one: this run makes it
    assert jvm_archive.ensure(say=False, path=target) == target and made == [target]
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no lock file beside


def _pyspark_zip(path: Path, version: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pyspark/__init__.py", "")
        zf.writestr("pyspark/version.py", f'__version__: str = "{version}"\n')
    return path


def test_sparks_zips_leave_the_path_only_for_the_same_installed_version(tmp_path: Path
                                                                         ) -> None:
    site = tmp_path / "site"
    (site / "pyspark").mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    (site / "pyspark" / "version.py").write_text('__version__: str = "4.3.0"\n')
    (site / "py4j").mkdir()
    (site / "py4j" / "__init__.py").write_text("")
    same = str(_pyspark_zip(tmp_path / "pyspark.zip", "4.3.0"))
    py4j = tmp_path / "py4j-0.10.9.9-src.zip"
    with zipfile.ZipFile(py4j, "w") as zf:
        zf.writestr("py4j/__init__.py", "")
    path = ["/somewhere", same, str(py4j), str(site)]
    assert unzipped_path(path) == ["/somewhere", str(site)]
    (tmp_path / "other").mkdir()
    older = str(_pyspark_zip(tmp_path / "other" / "pyspark.zip", "4.2.0"))
    assert unzipped_path(["/somewhere", older, str(py4j), str(site)]) == [
        "/somewhere", older, str(py4j), str(site)]
    assert unzipped_path(["/somewhere", same, str(py4j)]) == ["/somewhere", same, str(py4j)]
    assert unzipped_path(["/somewhere", str(site)]) == ["/somewhere", str(site)]


class _WherePySparkIs(DataSource):
    """Its one column is named for where the planning process imported PySpark from."""

    @classmethod
    def name(cls) -> str:
        return "where-pyspark-is"

    def schema(self) -> str:
        import pyspark

        return ("from_zip" if ".zip" in (pyspark.__file__ or "") else "from_package") + " int"


@pytest.mark.slow  # the Spark session
def test_planning_processes_import_pyspark_from_its_package(spark: SparkSession) -> None:
    spark.dataSource.register(_WherePySparkIs)
    assert spark.read.format("where-pyspark-is").load().columns == ["from_package"]


@pytest.mark.slow  # the Spark session
def test_task_workers_import_pyspark_from_its_package(spark: SparkSession) -> None:
    def where(_: object) -> list[str]:
        import pyspark

        return [pyspark.__file__ or ""]

    files = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    assert files and ".zip" not in files[0] and files[0].endswith("__init__.py")
