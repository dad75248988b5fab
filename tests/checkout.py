"""The checkout under test, for tests that run Python in a child process.

:func:`run_python` runs this interpreter with ``PYTHONPATH`` set to the checkout, so that
the child imports the same ``aiokafka_lite`` (and build) as the test, and captures its
output as text.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ENV", "REPO_ROOT", "run_python"]

REPO_ROOT = Path(__file__).resolve().parent.parent
#: the environment a child gets: this one, with the checkout on ``PYTHONPATH``
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def run_python(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``python *args`` (this interpreter) in ``cwd``; waits at most ``timeout`` seconds and
    returns whatever the exit code (the caller asserts on it, quoting the output)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=ENV if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
