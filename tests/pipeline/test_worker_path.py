"""The Python processes a pipeline session's Spark starts (planning processes for Python data
sources, task workers) import PySpark from its installed package, not from the copies of it
PySpark puts on their path as zips (:mod:`pipeline.worker_path`)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource

from pipeline.worker_path import unzipped_path


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
