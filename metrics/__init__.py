"""Prometheus registry, sensors and the HTTP exporter. Imports nothing of ours."""

from .exporter import start_exporter

__all__ = ["start_exporter"]
