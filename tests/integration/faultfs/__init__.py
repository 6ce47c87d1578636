"""A slow or failing disk under one coordinator partition: ``faultfs.c``, an LD_PRELOAD shim
compiled with gcc when a test first asks for it, driven through a control file.

``FaultFs.delay_fsync(match, ms)`` makes every fsync of a file whose path contains ``match``
sleep first; ``FaultFs.fail_writes(match)`` makes its writes and fsyncs fail with EIO;
``FaultFs.heal()`` ends either. ``FaultFs.env`` is what the server's environment needs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("faultfs.c")


def build(out_dir: Path) -> Path:
    """Compile the shim into ``out_dir`` (gcc is a system dependency of the suite)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise RuntimeError("gcc is needed to build the fault-injecting shim (make test "
                           "installs it with apt-get)")
    library = out_dir / "faultfs.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(library),
                    str(SOURCE), "-ldl"], check=True, capture_output=True, text=True)
    return library


class FaultFs:
    def __init__(self, library: Path, control: Path) -> None:
        self.library = library
        self.control = control
        self.heal()

    @property
    def env(self) -> dict[str, str]:
        return {"LD_PRELOAD": str(self.library), "FAULTFS_CTL": str(self.control)}

    def _set(self, line: str) -> None:
        staged = self.control.with_suffix(".new")
        staged.write_text(line + "\n")
        staged.replace(self.control)  # readers see the old line or the new one, never half

    def delay_fsync(self, match: str, ms: int) -> None:
        self._set(f"delay {match} {ms}")

    def fail_writes(self, match: str) -> None:
        self._set(f"eio {match} 0")

    def heal(self) -> None:
        self.control.unlink(missing_ok=True)
