"""``python -m coordinator soak ...``: long runs under faults, printing what held."""
