"""A blocking producer for code that is not async: scripts, WSGI apps, worker pools.

:class:`Producer` runs an :class:`~aiokafka_lite.AIOKafkaProducer` on a private
event loop in a daemon thread. Any number of threads may call :meth:`Producer.send`
at once; each call returns a :class:`concurrent.futures.Future`.

Records cross from the calling threads to the loop thread through one locked list:
a caller appends its record and only the first record of a burst wakes the loop
(one ``call_soon_threadsafe``), and the loop hands the whole burst to the producer
in one go. The list is bounded (by bytes): when the producer's ``buffer_memory`` is
full, the loop thread waits in ``send()`` as an async caller would, the list fills,
and callers block for at most ``max_block_ms`` before :class:`KafkaTimeoutError`
(Java's ``send()`` behaves the same way).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any, Generic

from ._internal._futures import LazyFuture
from ._internal.key_value import K, V
from ._internal.records import Header
from .config import ProducerConfig
from .errors import (
    BufferFullError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
)
from .producer import AIOKafkaProducer
from .structs import RecordMetadata

__all__ = ["Producer"]

log = logging.getLogger("aiokafka_lite.sync")


# Records handed to the loop thread but not yet in the producer's buffer are
# bounded by this many bytes (or buffer_memory, if smaller): enough that the
# loop always has a burst to take, small next to buffer_memory's 32 MiB default.
_HANDOFF_BYTES = 1 << 20
# What a queued record costs beyond its key and value (the tuple, the future).
_ITEM_OVERHEAD = 200
# Extra time the caller gives the loop thread beyond the operation's own bound.
_SLACK = 5.0

_SIZED = (bytes, bytearray, memoryview, str)
# Stands in for the topic of a queued flush() marker.
_FLUSH: Any = object()

_ids = itertools.count(1)
_open: weakref.WeakSet[Producer[Any, Any]] = weakref.WeakSet()

# A queued record: topic, value, key, partition, timestamp_ms, headers, future, bytes.
_Item = tuple[Any, Any, Any, Any, Any, Any, Future[Any], int]


class Producer(Generic[K, V]):
    """A thread-safe, blocking Kafka producer (the configuration of ``AIOKafkaProducer``).

    Configuration errors, and failure to reach the cluster at start, raise here in
    the caller's thread. Serializers, partitioners, interceptors and the futures'
    done callbacks run in the producer's own thread: keep them short, and do not
    call the blocking methods (``flush``, ``close``, ``send_and_wait``) from them.
    Producers not closed are closed (their records delivered) at interpreter exit.
    """

    def __init__(self, **config: Any) -> None:
        if "loop" in config:
            raise TypeError("sync.Producer runs its own event loop; do not pass loop=")
        # Built here so that bad configuration raises in the caller's thread.
        self._producer: AIOKafkaProducer[K, V] = AIOKafkaProducer(**config)
        cfg = self._producer.config
        self._max_block = cfg.max_block_ms / 1000
        self._limit = min(cfg.buffer_memory, _HANDOFF_BYTES)
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # notified when the list drains
        self._queue: list[_Item] = []  # guarded by _lock
        self._queued = 0  # bytes in _queue and in the burst being appended; by _lock
        self._scheduled = False  # a wakeup of the loop is pending; by _lock
        self._closed = False  # by _lock
        self._closed_reason = "the producer is closed; records can no longer be sent"
        self._pid = os.getpid()
        self._final_metrics: dict[str, float] = {}
        self._loop = asyncio.new_event_loop()
        self._wakeup = asyncio.Event()
        self._stopping = False
        self._pump_task: asyncio.Task[None] | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(
            target=self._run_loop, name=f"aiokafka_lite.sync-{next(_ids)}", daemon=True
        )
        self._thread.start()
        try:
            # start() bounds its own wait by request_timeout_ms.
            self._call(self._start(), cfg.request_timeout_ms / 1000 + _SLACK)
        except BaseException:
            self._closed = True
            self._stop_thread()
            raise
        _open.add(self)

    @property
    def config(self) -> ProducerConfig:
        return self._producer.config

    # -- the loop thread -------------------------------------------------------------

    def _run_loop(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            # Normally nothing is left; after a start() that timed out, its task is.
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.wait(tasks, timeout=_SLACK))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            # Nothing queued outlives the thread: fail what never reached the loop.
            self._fail_queued(ProducerClosedError("the producer is closed"))

    async def _start(self) -> None:
        await self._producer.start()
        self._pump_task = asyncio.get_running_loop().create_task(
            self._pump(), name="aiokafka_lite.sync.pump"
        )

    def _wake(self) -> None:
        self._wakeup.set()

    async def _pump(self) -> None:
        """Move bursts of queued records into the producer, in the order they were sent."""
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            with self._lock:
                burst, self._queue = self._queue, []
                self._scheduled = False
            try:
                await self._append(burst)
            finally:
                with self._lock:
                    self._queued -= sum(item[7] for item in burst)
                    self._room.notify_all()
            if self._stopping and not self._queue:
                return

    async def _append(self, burst: list[_Item]) -> None:
        send = self._producer.send
        i = 0
        try:
            # i is read by the handler below: where a cancellation stopped us.
            for i, (topic, value, key, partition, ts, headers, fut, _) in enumerate(burst):  # noqa: B007
                if topic is _FLUSH:
                    self._start_flush(fut, value)
                    continue
                if not fut.set_running_or_notify_cancel():
                    continue  # cancelled by its caller before it was sent
                try:
                    # Waits here only when buffer_memory is full (or metadata is
                    # unknown): the list stays full meanwhile and callers block.
                    afut = await send(topic, value, key, partition, ts, headers)
                except Exception as e:
                    fut.set_exception(e)
                    continue
                afut.add_done_callback(functools.partial(_settle, fut))
        except BaseException:
            # Cancelled by close() running out of time: what is left was not sent.
            exc = KafkaTimeoutError("the producer was closed before this record was sent")
            for item in burst[i:]:
                _fail(item[6], exc)
            raise

    def _start_flush(self, fut: Future[Any], deadline: float) -> None:
        if not fut.set_running_or_notify_cancel():
            return
        remaining = max(0.0, deadline - time.monotonic())
        task = self._loop.create_task(self._producer.flush(remaining))
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)
        task.add_done_callback(functools.partial(_settle, fut))

    async def _stop(self, timeout: float) -> None:
        """Append what is queued, then stop the producer; all within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        self._stopping = True
        self._wake()
        pump = self._pump_task
        if pump is not None:
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(pump)
            except TimeoutError:
                pump.cancel()
                await asyncio.gather(pump, return_exceptions=True)
        await self._producer.stop(max(0.0, deadline - time.monotonic()))
        for task in list(self._flushes):
            task.cancel()
        await asyncio.gather(*self._flushes, return_exceptions=True)
        self._final_metrics = self._producer.metrics()
        # Let the done callbacks of the futures the stop resolved run before
        # the loop stops: every caller's future resolves.
        await asyncio.sleep(0)

    # -- calls from other threads ------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, Any], timeout: float) -> Any:
        """Run ``coro`` on the loop thread and wait for its result (bounded)."""
        cfut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return cfut.result(timeout)
        except FutureTimeoutError:
            cfut.cancel()
            raise KafkaTimeoutError(
                f"the producer's thread did not answer within {timeout:.1f}s"
            ) from None

    def _check_blocking_allowed(self, what: str) -> None:
        if threading.current_thread() is self._thread:
            raise IllegalStateError(
                f"{what}() would block the producer's own thread (called from a future's "
                "done callback or a serializer?): it can never complete there"
            )

    def _enqueue(self, item: _Item) -> None:
        with self._lock:
            if self._closed:
                raise ProducerClosedError(self._closed_reason)
            # Back-pressure; a flush marker (0 bytes) or a lone big record always fits.
            if item[7] and self._queued and self._queued + item[7] > self._limit:
                self._wait_for_room(item[7])
            self._queue.append(item)
            self._queued += item[7]
            if self._scheduled:
                return
            self._scheduled = True
        self._loop.call_soon_threadsafe(self._wake)

    def _wait_for_room(self, size: int) -> None:
        """Block (holding no lock while waiting) until the list has room: back-pressure."""
        if threading.current_thread() is self._thread:
            raise BufferFullError(
                "the producer's buffer is full and send() was called from the producer's "
                "own thread, which cannot wait for it"
            )
        deadline = time.monotonic() + self._max_block
        while self._queued and self._queued + size > self._limit:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"the producer's buffer stayed full for max_block_ms "
                    f"({self._max_block * 1000:.0f} ms); record not sent"
                )
            self._room.wait(remaining)
            if self._closed:
                raise ProducerClosedError("the producer was closed while send() waited")

    def _fail_queued(self, exc: KafkaError) -> None:
        with self._lock:
            burst, self._queue = self._queue, []
            self._queued = 0
            self._room.notify_all()
        for item in burst:
            _fail(item[6], exc)

    # -- public API --------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: V | None = None,
        key: K | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> Future[RecordMetadata]:
        """Queue one record; return the future of its delivery.

        Blocks only while the buffer is full, for at most ``max_block_ms``, then
        raises :class:`KafkaTimeoutError`. Errors about the record itself (too
        large, bad partition, serializer failure) fail the returned future.
        """
        fut: Future[RecordMetadata] = LazyFuture()
        self._enqueue(
            (topic, value, key, partition, timestamp_ms, headers, fut, _size_of(key, value))
        )
        return fut

    def send_and_wait(
        self,
        topic: str,
        value: V | None = None,
        key: K | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> RecordMetadata:
        """Send one record and wait for its delivery (``producer.type=sync``)."""
        self._check_blocking_allowed("send_and_wait")
        fut = self.send(topic, value, key, partition, timestamp_ms, headers)
        # Resolves within delivery_timeout_ms: the producer fails what it cannot deliver.
        return fut.result()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every record sent before this call is delivered or failed."""
        self._check_blocking_allowed("flush")
        wait = self.config.delivery_timeout_ms / 1000 if timeout is None else timeout
        marker: Future[None] = LazyFuture()
        self._enqueue((_FLUSH, time.monotonic() + wait, None, None, None, None, marker, 0))
        try:
            marker.result(wait + _SLACK)
        except FutureTimeoutError:
            raise KafkaTimeoutError(f"flush did not complete within {wait}s") from None

    def partitions_for(self, topic: str) -> set[int]:
        """The partition ids of ``topic`` (fetching its metadata if needed)."""
        self._check_blocking_allowed("partitions_for")
        self._check_open()
        result: set[int] = self._call(
            self._producer.partitions_for(topic), self._max_block + _SLACK
        )
        return result

    def metrics(self) -> dict[str, float]:
        """A snapshot of the producer's metrics (the last one, once closed)."""
        with self._lock:
            closed = self._closed
        if closed or threading.current_thread() is self._thread:
            return self._final_metrics if closed else self._producer.metrics()

        async def snapshot() -> dict[str, float]:
            return self._producer.metrics()

        result: dict[str, float] = self._call(snapshot(), _SLACK)
        return result

    def close(self, timeout: float | None = None) -> None:
        """Deliver what was sent, then stop the producer and its thread.

        Waits at most ``timeout`` seconds (default ``delivery_timeout_ms``);
        records still undelivered then fail with :class:`KafkaTimeoutError`.
        Safe to call more than once, and from several threads.
        """
        self._check_blocking_allowed("close")
        wait = self.config.delivery_timeout_ms / 1000 if timeout is None else timeout
        with self._lock:
            first, self._closed = not self._closed, True
            self._room.notify_all()  # senders blocked on a full buffer give up
        if first:
            _open.discard(self)
            try:
                self._call(self._stop(wait), wait + _SLACK)
            finally:
                self._stop_thread()
        else:
            self._thread.join(wait + _SLACK)

    def _stop_thread(self) -> None:
        if self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(_SLACK)
        if self._thread.is_alive():
            log.error("the producer's thread %s did not stop", self._thread.name)

    def _check_open(self) -> None:
        with self._lock:
            if self._closed:
                raise ProducerClosedError(self._closed_reason)

    def _forked(self) -> None:
        """In a child process after os.fork(): the producer's thread did not come along."""
        # The lock may have been held by a thread that does not exist here.
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._queue, self._queued, self._closed = [], 0, True
        self._closed_reason = (
            f"this producer was created in process {self._pid} and cannot be used after "
            "os.fork(): its thread and connections stay with that process. Create the "
            "producer in each process after the fork (e.g. in a worker's init hook)"
        )

    def __enter__(self) -> Producer[K, V]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _settle(fut: Future[Any], afut: asyncio.Future[Any]) -> None:
    """Copy the outcome of an asyncio future to the caller's concurrent future."""
    if afut.cancelled():
        fut.set_exception(ProducerClosedError("the producer was closed before delivery"))
    elif (exc := afut.exception()) is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(afut.result())


def _fail(fut: Future[Any], exc: BaseException) -> None:
    """Fail a caller's future unless it is already resolved (or cancelled)."""
    if fut.done():
        return
    if fut.running() or fut.set_running_or_notify_cancel():
        fut.set_exception(exc)


def _size_of(key: object, value: object) -> int:
    """About what a queued record holds in memory (others than bytes/str: a guess)."""
    size = _ITEM_OVERHEAD
    if key is not None and isinstance(key, _SIZED):
        size += len(key)
    if value is not None and isinstance(value, _SIZED):
        size += len(value)
    return size


def _after_fork_in_child() -> None:
    for producer in list(_open):
        producer._forked()
    _open.clear()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _close_open_producers() -> None:
    # Like a script's last line being producer.close(): what was sent is delivered.
    for producer in list(_open):
        try:
            producer.close()
        except Exception:
            log.exception("closing a producer at exit failed")
