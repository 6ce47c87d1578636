"""Rebalance analytics over the coordinator's store, on Spark (issue 10).

``spark.read.format("coordinator-log").load(log_dir)`` (see :mod:`pipeline.source`) gives one row
per stored record; :mod:`pipeline.tables` turns them into the analytics tables and
:mod:`pipeline.report` into ``report.html`` with PNG plots. ``python -m pipeline --help``.
"""
