"""The blocking facade, aiokafka_lite.sync.Producer, driven from plain threads.

Everything it writes is read back with confluent-kafka (tests/readers.py).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from concurrent.futures import Future

import psutil
import pytest
from checkout import run_python
from conftest import TopicFactory
from readers import read_all_confluent

from aiokafka_lite import RecordMetadata
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import (
    ConfigError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProducerClosedError,
)
from aiokafka_lite.sync import Producer


def _facade_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("aiokafka_lite.sync-")]


def _sockets_to(port: int) -> list[object]:
    return [c for c in psutil.Process().net_connections() if c.raddr and c.raddr.port == port]


def test_many_threads_at_once_nothing_lost_order_kept_per_thread(
    broker: EmbeddedBroker, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    threads, per_thread = 8, 2_000
    futures: dict[int, list[Future[RecordMetadata]]] = {}
    start = threading.Barrier(threads)
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=2) as producer:

        def work(t: int) -> None:
            start.wait()  # all threads send at the same moment
            futures[t] = [
                producer.send(topic, b"%d:%d" % (t, i), key=b"thread-%d" % t)
                for i in range(per_thread)
            ]

        workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
        producer.flush(30)
        assert all(f.done() for fs in futures.values() for f in fs)
        metadata = {t: [f.result() for f in fs] for t, fs in futures.items()}

    records = read_all_confluent(broker.bootstrap_servers, topic, threads * per_thread)
    assert len(records) == threads * per_thread
    assert len({r.value for r in records}) == threads * per_thread  # no duplicate
    by_position = {(r.partition, r.offset): r for r in records}
    for t, mds in metadata.items():
        # What each future reported is where the record really is.
        for i, md in enumerate(mds):
            assert by_position[(md.partition, md.offset)].value == b"%d:%d" % (t, i)
        # One key, one partition: the thread's records are there in the order it sent them.
        values = [r.value for r in records if r.key == b"thread-%d" % t]
        assert values == [b"%d:%d" % (t, i) for i in range(per_thread)]


def test_send_and_wait_partitions_for_and_record_errors(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    with Producer(bootstrap_servers=bootstrap) as producer:
        assert producer.partitions_for(topic) == {0, 1}
        first = producer.send_and_wait(topic, b"a", partition=1)
        assert (first.topic, first.partition, first.offset) == (topic, 1, 0)
        # Errors about one record fail its future; the records around it still go.
        bad_type = producer.send(topic, "not bytes")  # type: ignore[arg-type]
        bad_partition = producer.send(topic, b"b", partition=7)
        good = producer.send(topic, b"c", partition=1)
        with pytest.raises(TypeError, match="must be bytes"):
            bad_type.result(10)
        with pytest.raises(ValueError, match="partition 7 is out of range"):
            bad_partition.result(10)
        assert good.result(10).offset == 1
    assert [r.value for r in read_all_confluent(bootstrap, topic, 2)] == [b"a", b"c"]


def test_flush_delivers_lingering_records_from_every_thread(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    with Producer(bootstrap_servers=bootstrap, linger_ms=60_000) as producer:
        futures: list[Future[RecordMetadata]] = []
        lock = threading.Lock()

        def work(t: int) -> None:
            mine = [producer.send(topic, b"%d-%d" % (t, i)) for i in range(100)]
            with lock:
                futures.extend(mine)

        workers = [threading.Thread(target=work, args=(t,)) for t in range(3)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
        assert not any(f.done() for f in futures)  # held by linger_ms=60 s
        producer.flush(timeout=20)
        assert all(f.done() and f.exception() is None for f in futures)


def test_bad_config_and_unreachable_cluster_raise_in_the_caller() -> None:
    with pytest.raises(ConfigError, match="linger_ms"):
        Producer(bootstrap_servers="127.0.0.1:9092", linger_ms=-1)
    with pytest.raises(TypeError, match="loop"):
        Producer(bootstrap_servers="127.0.0.1:9092", loop=object())
    with pytest.raises(KafkaConnectionError, match="unable to bootstrap"):
        Producer(bootstrap_servers="127.0.0.1:1", request_timeout_ms=2000)
    assert not _facade_threads()


def test_a_broker_that_never_answers_fails_the_constructor_and_leaves_nothing() -> None:
    """A listener that accepts connections but never replies (a hung broker)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        with pytest.raises(KafkaConnectionError, match=f"127.0.0.1:{port}: no answer in time"):
            Producer(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=1000)
        assert not _facade_threads()
        assert not _sockets_to(port)


def test_close_is_idempotent_and_leaves_no_thread_or_socket(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    port = int(bootstrap.rsplit(":", 1)[1])
    producer = Producer(bootstrap_servers=bootstrap, linger_ms=50)
    futures = [producer.send(topic, b"%d" % i) for i in range(500)]
    assert _sockets_to(port)
    producer.close()
    # close() delivered what was buffered before returning.
    assert [f.result(0).offset for f in futures] == list(range(500))
    assert producer.metrics()["record-send-total"] == 500
    producer.close()
    closers = [threading.Thread(target=producer.close) for _ in range(3)]
    for c in closers:
        c.start()
    for c in closers:
        c.join(10)
    assert not _facade_threads()
    assert not _sockets_to(port)
    with pytest.raises(ProducerClosedError):
        producer.send(topic, b"late")
    with pytest.raises(ProducerClosedError):
        producer.flush()


def test_blocking_calls_from_a_done_callback_fail_instead_of_deadlocking(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    seen: list[BaseException] = []
    with Producer(bootstrap_servers=bootstrap) as producer:

        def callback(_: Future[RecordMetadata]) -> None:
            for call in (producer.flush, producer.close, lambda: producer.send_and_wait(topic)):
                try:
                    call()
                except IllegalStateError as e:
                    seen.append(e)
            # A non-blocking send from the callback is fine.
            producer.send(topic, b"from callback")

        producer.send(topic, b"first").add_done_callback(callback)
        producer.flush(10)
    assert len(seen) == 3
    assert all("would block the producer's own thread" in str(e) for e in seen)
    values = [r.value for r in read_all_confluent(bootstrap, topic, 2)]
    assert values == [b"first", b"from callback"]


@pytest.mark.tansu_only(
    "freezes its broker (SIGSTOP through fresh_broker) so that memory never frees"
)
def test_full_buffer_blocks_the_calling_thread_for_max_block_ms(
    fresh_broker: EmbeddedBroker, topic_factory: TopicFactory
) -> None:
    """A frozen broker (SIGSTOP) never answers: the buffer fills and send() must block.

    Callers then wait up to max_block_ms and get KafkaTimeoutError; what they handed
    over is bounded by buffer_memory plus the hand-off list, not by how long they try.
    """
    bootstrap = fresh_broker.bootstrap_servers
    topic = topic_factory(1, bootstrap=bootstrap)
    buffer_memory, value = 64 * 1024, b"v" * 1000
    producer = Producer(
        bootstrap_servers=bootstrap,
        buffer_memory=buffer_memory,
        batch_size=16 * 1024,
        max_block_ms=500,
        request_timeout_ms=60_000,
        delivery_timeout_ms=120_000,
    )
    try:
        producer.send_and_wait(topic, b"warm-up")
        pid = fresh_broker.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        accepted: list[Future[RecordMetadata]] = []
        refused: list[BaseException] = []
        lock = threading.Lock()

        def work() -> None:
            for i in range(2_000):  # far more than fits: 2 MB per thread
                try:
                    fut = producer.send(topic, value + b"%d" % i)
                except KafkaTimeoutError as e:
                    with lock:
                        refused.append(e)
                    return
                with lock:
                    accepted.append(fut)

        workers = [threading.Thread(target=work) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
        assert not any(w.is_alive() for w in workers)
        assert len(refused) == 4, "every thread must have been stopped by back-pressure"
        assert "max_block_ms (500 ms)" in str(refused[0])
        # buffer_memory + the hand-off list (bounded by buffer_memory here) + one record each
        bound = (2 * buffer_memory) // len(value) + 4
        assert len(accepted) <= bound, (len(accepted), bound)
    finally:
        if fresh_broker.pid is not None:
            os.kill(fresh_broker.pid, signal.SIGCONT)
    producer.close(timeout=60)
    # Every future resolved; those that got into the buffer were delivered once thawed.
    assert all(f.done() for f in accepted)
    delivered = {f.result().offset for f in accepted if f.exception() is None}
    failed = [f.exception() for f in accepted if f.exception() is not None]
    assert all(isinstance(e, KafkaTimeoutError) for e in failed), failed[:3]
    assert len(delivered) > len(accepted) // 2
    records = read_all_confluent(bootstrap, topic, 1 + len(delivered), timeout=20)
    assert len(records) == 1 + len(delivered)


def test_records_sent_without_close_are_delivered_at_exit(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    script = (
        "from aiokafka_lite.sync import Producer\n"
        f"p = Producer(bootstrap_servers={bootstrap!r}, linger_ms=60_000)\n"
        f"for i in range(300): p.send({topic!r}, b'%d' % i)\n"
        "# no flush(), no close(): the interpreter exits with records lingering\n"
    )
    proc = run_python("-c", script)
    assert proc.returncode == 0, proc.stderr
    values = [r.value for r in read_all_confluent(bootstrap, topic, 300)]
    assert values == [b"%d" % i for i in range(300)]


def test_a_forked_child_gets_a_clear_error_and_the_parent_keeps_working(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """gunicorn --preload, multiprocessing's fork, Spark/Celery workers: the thread stays behind."""
    topic = topic_factory(1)
    script = f"""
import os, sys
from aiokafka_lite.errors import ProducerClosedError
from aiokafka_lite.sync import Producer
p = Producer(bootstrap_servers={bootstrap!r})
p.send_and_wait({topic!r}, b"parent-before")
pid = os.fork()
if pid == 0:
    try:
        p.send({topic!r}, b"child")
    except ProducerClosedError as e:
        print("child:", e, flush=True)
        p.close()  # harmless in the child
        os._exit(0 if "os.fork()" in str(e) else 3)
    os._exit(4)
_, status = os.waitpid(pid, 0)
p.send_and_wait({topic!r}, b"parent-after")
p.close()
sys.exit(os.waitstatus_to_exitcode(status))
"""
    proc = run_python("-c", script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cannot be used after os.fork()" in proc.stdout
    values = [r.value for r in read_all_confluent(bootstrap, topic, 2)]
    assert values == [b"parent-before", b"parent-after"]
