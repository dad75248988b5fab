"""The library logs under one hierarchy, ``aiokafka_lite.<module>``, documented in
docs/logging.md; a real produce run shows which loggers speak and at what level."""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
from pathlib import Path

import pytest
from conftest import TopicFactory

import aiokafka_lite
from aiokafka_lite import AIOKafkaProducer

LOGGING_PAGE = Path(__file__).resolve().parent.parent / "docs" / "logging.md"
# The page's table of loggers: rows "| `aiokafka_lite.x` | ... |".
DOCUMENTED = set(re.findall(r"^\| `(aiokafka_lite\.[a-z_]+)` \|", LOGGING_PAGE.read_text(), re.M))


def test_every_module_logger_is_documented() -> None:
    # Each module's logger is its module attribute ``log``.
    found = {}
    for info in pkgutil.walk_packages(aiokafka_lite.__path__, "aiokafka_lite."):
        if info.name.split(".")[1] in ("otel", "cli", "__main__"):
            continue  # optional extras; the CLI logs nothing itself (its -v shows ours)
        module = importlib.import_module(info.name)
        logger = getattr(module, "log", None)
        if isinstance(logger, logging.Logger):
            found[info.name] = logger.name
    assert set(found.values()) == DOCUMENTED
    # named after the module, without the private package's name
    assert all(module.replace("._internal.", ".") == name for module, name in found.items())


async def test_a_produce_run_logs_under_the_hierarchy(
    bootstrap: str, topic_factory: TopicFactory, caplog: pytest.LogCaptureFixture
) -> None:
    topic = topic_factory(1)
    with caplog.at_level(logging.DEBUG, logger="aiokafka_lite"):
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1) as producer:
            await producer.send_and_wait(topic, b"x")
    speakers = {r.name for r in caplog.records}
    assert speakers <= DOCUMENTED
    assert {"aiokafka_lite.producer", "aiokafka_lite.client", "aiokafka_lite.metadata"} <= speakers
    started = [r for r in caplog.records if r.name == "aiokafka_lite.producer"]
    assert started[0].levelno == logging.INFO and "producer started" in started[0].getMessage()
    # acks=1 rules out idempotence: the config logger says why, once, at INFO
    (why,) = [r for r in caplog.records if r.name == "aiokafka_lite.config"]
    assert "enable_idempotence is off because acks=1" in why.getMessage()
