"""docs/testing-apps.md's example tests, run as a user runs them.

Each ``python`` block of the page that defines tests is written out as a test module and
run by pytest (``pytester``, in a subprocess) with the plugin loaded as its entry point
loads it; every test of each must pass. (tests/test_docs.py type-checks the same blocks.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGE = REPO_ROOT / "docs" / "testing-apps.md"
BLOCKS = [
    code
    for code in re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    if "def test_" in code
]


def test_the_page_has_the_two_examples() -> None:
    assert len(BLOCKS) == 2
    assert "MockProducer" in BLOCKS[0] and "kafka_producer" in BLOCKS[1]


@pytest.mark.parametrize("code", BLOCKS, ids=["mock_producer", "fixtures"])
def test_example_passes(
    code: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # this checkout; examples/ too
    pytester.makepyfile(test_example=code)
    # A project's settings: pytest-asyncio warns when this is unset, and -W error below
    # turns every warning (an unclosed producer's, too) into a failure.
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_subprocess(
        # (the installed entry point set aside: this checkout's plugin, loaded once)
        "-p",
        "no:aiokafka_lite",
        "-p",
        "aiokafka_lite.testing.pytest_plugin",
        "-p",
        "no:cacheprovider",
        "-W",
        "error",
    )
    result.assert_outcomes(passed=len(re.findall(r"^async def test_", code, re.MULTILINE)))
