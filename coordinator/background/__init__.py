"""The group coordinator's background executor (seed 000): the process pool that runs offloaded
assignor jobs (``executor``) and the measurements of it that the metrics read (``stats``)."""
