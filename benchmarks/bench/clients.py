"""The async clients seen through one interface, and which clients can run here.

aiokafka_lite and aiokafka share an API, so they share one adapter; confluent-kafka's
AIOProducer has its own. Each workload for async clients is then written once
(:mod:`.run_async`), and the measured loop calls the client's own bound methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .workloads import WORKLOADS, Workload

SendFn = Callable[..., Awaitable["asyncio.Future[Any]"]]


SendAndWaitFn = Callable[[str, bytes, bytes], Awaitable[Any]]


async def _no_flush() -> None:
    return None


@dataclass
class AsyncClient:
    """An async producer seen through the calls the workloads make.

    ``send(topic, value, key)`` is the client's own bound method wherever it has the
    right shape, so the measured loop pays no adapter cost. ``producer`` is the client
    object itself, for the workloads that use its own API (W3's batches).
    """

    send: SendFn
    send_and_wait: SendAndWaitFn
    warm_up: Callable[[str], Awaitable[object]]
    close: Callable[[float], Awaitable[None]]
    metrics: Callable[[], dict[str, float]] = dict
    flush: Callable[[], Awaitable[object]] = _no_flush
    producer: Any = None


def confluent_aio_class() -> type[Any] | None:
    """confluent-kafka's AIOProducer (``aio`` in 2.12+, ``experimental.aio`` before)."""
    for module in ("confluent_kafka.aio", "confluent_kafka.experimental.aio"):
        with contextlib.suppress(ImportError):
            cls: type[Any] = importlib.import_module(module).AIOProducer
            return cls
    return None


def confluent_config(bootstrap: str, wl: Workload | None = None) -> dict[str, Any]:
    wl = wl or WORKLOADS["W1"]
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "linger.ms": wl.linger_ms,
        "acks": "all",
        "enable.idempotence": wl.idempotence,
    }
    if wl.buffer_memory is not None:
        config["queue.buffering.max.kbytes"] = wl.buffer_memory // 1024
    if wl.batch_size is not None:
        config["batch.size"] = wl.batch_size
    return config


def aiokafka_like_config(module: str, wl: Workload) -> dict[str, Any]:
    config: dict[str, Any] = {
        "linger_ms": wl.linger_ms,
        "acks": "all",
        "enable_idempotence": wl.idempotence,
    }
    if wl.buffer_memory is not None and module == "aiokafka_lite":
        config["buffer_memory"] = wl.buffer_memory  # aiokafka has no such option
    if wl.batch_size is not None:
        config["max_batch_size"] = wl.batch_size  # (aiokafka's name; aiokafka_lite takes it too)
    return config


async def open_aiokafka_like(module: str, bootstrap: str, wl: Workload) -> AsyncClient:
    """aiokafka and aiokafka_lite share the API, so they share this adapter."""
    producer_cls = importlib.import_module(module).AIOKafkaProducer
    producer = producer_cls(bootstrap_servers=bootstrap, **aiokafka_like_config(module, wl))
    await producer.start()

    async def close(timeout: float) -> None:
        await asyncio.wait_for(producer.stop(), timeout)

    metrics = getattr(producer, "metrics", None)
    return AsyncClient(
        send=producer.send,
        send_and_wait=producer.send_and_wait,
        warm_up=producer.partitions_for,
        close=close,
        metrics=metrics if callable(metrics) else dict,
        flush=producer.flush,
        producer=producer,
    )


async def open_confluent_aio(bootstrap: str, wl: Workload) -> AsyncClient:
    cls = confluent_aio_class()
    if cls is None:
        raise ImportError("confluent_kafka has no AIOProducer in this version")
    producer = cls(confluent_config(bootstrap, wl))

    async def send_and_wait(topic: str, value: bytes, key: bytes) -> Any:
        return await (await producer.produce(topic, value, key))

    async def warm_up(topic: str) -> object:
        return await producer.list_topics(topic, 10)

    async def close(timeout: float) -> None:
        await asyncio.wait_for(producer.close(), timeout)

    return AsyncClient(
        send=producer.produce,
        send_and_wait=send_and_wait,
        warm_up=warm_up,
        close=close,
        flush=producer.flush,
        producer=producer,
    )


async def open_async_client(name: str, bootstrap: str, wl: Workload) -> AsyncClient:
    if name == "confluent-aio":
        return await open_confluent_aio(bootstrap, wl)
    return await open_aiokafka_like(name, bootstrap, wl)


def uvloop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def client_available(name: str) -> str | None:
    """None if ``name`` can run here, else why not."""
    if name == "java":
        from .run_java import java_missing

        return java_missing()
    if name == "confluent-aio":
        return None if confluent_aio_class() is not None else "no AIOProducer in confluent_kafka"
    module = {"confluent": "confluent_kafka", "kafka-python": "kafka"}.get(name, name)
    try:
        importlib.import_module(module)
    except ImportError as exc:
        return f"not importable: {exc}"
    return None
