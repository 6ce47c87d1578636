"""Run by Python at the start of every process Spark starts for the pipeline: this directory is
first on their ``PYTHONPATH`` (:func:`pipeline.session.prepare_environment`). It imports
PySpark from its package rather than Spark's ``pyspark.zip`` (:mod:`pipeline.worker_path`),
then runs the ``sitecustomize`` this one stands in front of, if there is one."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _run() -> None:
    try:
        from pipeline.worker_path import unzipped_path
    except ImportError:  # pipeline not on the path: leave it as it is
        pass
    else:
        sys.path[:] = unzipped_path(sys.path)
        importlib.invalidate_caches()
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_run()
