"""The CPythons the package claims are the ones CI runs the suite on.

pyproject.toml's classifiers and ``requires-python`` tell users which versions are
supported; ``.ci/run`` runs the whole suite (compiled and pure) on the interpreter it
was started with and hands every other claimed version to ``.ci/pythons``. A version
claimed but never tested, or tested but not claimed, fails here.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def claimed_versions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pattern = re.compile(r"Programming Language :: Python :: (3\.\d+)$")
    return {m.group(1) for c in project["classifiers"] if (m := pattern.match(c))}


def test_every_claimed_python_is_run_by_ci_and_none_other() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    calls = re.findall(r"^\s*bash \.ci/pythons ((?:3\.\d+ ?)+)$", ci, re.MULTILINE)
    assert len(calls) == 1, ".ci/run must hand the other Pythons to .ci/pythons once"
    others = set(calls[0].split())
    # .ci/run's own interpreter is the oldest claimed one (CI machines run 3.11).
    oldest = min(claimed_versions(), key=lambda v: tuple(map(int, v.split("."))))
    assert claimed_versions() == others | {oldest}
    assert oldest not in others


def test_requires_python_starts_at_the_oldest_claimed_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    oldest = min(claimed_versions(), key=lambda v: tuple(map(int, v.split("."))))
    assert project["requires-python"] == f">={oldest}"
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert running in claimed_versions(), f"the suite runs on {running}, which is not claimed"
