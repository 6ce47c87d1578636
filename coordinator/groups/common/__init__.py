"""What every group type shares: a coordinator partition's state (``shard``), committed offsets
(``offsets``), broker configs as plain values (``configs``), per-group configs (``group_configs``),
and seed 000's assignor jobs and their offload (``assignor_job``, ``offload``).

Imports nothing of the group types: they build on it. Keep this ``__init__`` empty of imports:
worker processes import ``assignor_job`` and should load nothing else."""
