import gc
import sys

if sys.argv[1:2] == ["serve"]:
    # a start allocates long-lived objects only: no collection until the partitions are
    # loaded, when GcPauseGuard freezes them and turns the collector on
    gc.disable()
    # kio registers Hypothesis strategies for its protocol types when it can import Hypothesis
    # (installed with the dev extra): ~0.3 s of CPU at every server start, for nothing the
    # server uses. A server installed alone (`make run`) has no Hypothesis anyway.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]

from .cli import main

sys.exit(main())
