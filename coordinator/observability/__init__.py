"""What the coordinator tells about itself: structured logs (``logs``), the sensors its code
feeds as things happen (``sensors``), and the collector that reads its state for Prometheus
(``collector``). Imports nothing else of the coordinator, so every package may use it.
"""
