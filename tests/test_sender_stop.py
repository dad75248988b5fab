"""stop() while a send() waits for buffer memory: what that caller is told."""

from __future__ import annotations

import asyncio

import pytest
from conftest import TopicFactory

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.accumulator import BATCH_MEMORY, SEND_BOUND, SEND_RECORD_MEMORY
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import KafkaTimeoutError, ProducerClosedError


@pytest.mark.tansu_only("kills its broker (fresh_broker) so that memory never frees")
async def test_a_send_waiting_for_memory_fails_as_closed_when_stop_gives_up(
    fresh_broker: EmbeddedBroker, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1, bootstrap=fresh_broker.bootstrap_servers)
    async with AIOKafkaProducer(
        bootstrap_servers=fresh_broker.bootstrap_servers,
        # Room for a batch of three 1,000-byte records (with what each holds), not four.
        buffer_memory=BATCH_MEMORY + SEND_BOUND + 2 * SEND_RECORD_MEMORY + 3600,
        request_timeout_ms=2000,
        max_block_ms=60_000,
    ) as producer:
        await producer.send_and_wait(topic, b"first")
        fresh_broker.kill()  # nothing is delivered from now on: the buffer stays full
        buffered = [await producer.send(topic, b"x" * 1000) for _ in range(3)]
        waiting = asyncio.create_task(producer.send(topic, b"y" * 1000))
        await asyncio.sleep(0.1)
        assert not waiting.done() and producer.metrics()["waiting-threads"] == 1
        await producer.stop(timeout=1.0)

    # It never got into the buffer: the producer closed on it, no delivery timed out.
    with pytest.raises(ProducerClosedError, match="waited for buffer memory"):
        await waiting
    for fut in buffered:
        with pytest.raises(KafkaTimeoutError, match="stopped before this record was delivered"):
            await fut
