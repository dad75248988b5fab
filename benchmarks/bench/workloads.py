"""The workloads: what each one sends, with which settings, and which clients run it.

Producer settings are the same for every client in a workload: linger 5 ms (W4: 0),
acks=all, idempotence off (W1/idem: on; aiokafka_lite defaults to on, so it is always
passed explicitly); everything else, e.g. batch size, is each client's default, except in
the rows at one batch size for all (``/1MB``).

* W1 "per-record await": N keyed records (1,000 keys, 100-byte values) into a new
  4-partition topic. W1/unique: the same with a distinct 16-byte key per record (user or
  order ids: no hash cache helps). Async clients ``await send()`` each record, then gather the
  futures; confluent's sync Producer uses produce() + on_delivery + poll(0) + flush();
  kafka-python uses send() + flush() and checks every future.
* W2 "many concurrent senders": 1,000 tasks each ``await send_and_wait()`` in a loop
  until N records are sent in all; p50/p99 latency is send -> delivery per record.
  Async clients only (confluent-aio: ``await (await produce())``, as its README shows;
  it serves delivery reports only when it hands a 1,000-record buffer to librdkafka or
  after 1 s of inactivity, so with 1,000 waiting senders it manages ~1,000 records/s;
  in --quick mode it therefore sends only 2,000 records).
* W3 "batch API": each client's fastest way to send many records (keyed as in W1).
  aiokafka_lite and aiokafka: ``create_batch()`` / ``append()`` / ``send_batch()`` with
  one open batch per partition (each record goes to its key's murmur2 partition, as the
  default partitioner would send it; a full batch is sent at once);
  ``aiokafka_lite[send_many]``: one ``send_many(topic, pairs)`` call; confluent: as W1
  (produce + poll + flush is librdkafka's fast path).
* W1/keyless, W3/keyless (extras, group ``keyless``): W1 and W3 with no keys: each
  client's default keyless partitioning (sticky: one partition per batch). W3/keyless
  with the batch API fills one batch at a time and moves to the next partition per batch.
* java (W1, W3 and their keyless twins): Java's own KafkaProducer, through kafka-tools'
  ``ProducerPerformance`` (see :mod:`.run_java`), with the same N, value size, acks,
  linger and batch size (16,384 bytes: Java's default, as aiokafka_lite's and aiokafka's)
  and idempotence off. It cannot send keys, so its W1 and W3 rows are keyless (compare
  them with W1/keyless and W3/keyless too), and it has one way to send (``send()`` with a
  callback per record), so its W1 and W3 differ only in N.
* W1/1MB, W3/1MB: W1 and W3 with every client at librdkafka's default batch size,
  1,000,000 bytes (aiokafka_lite and aiokafka ``max_batch_size``, librdkafka
  ``batch.size``, kafka-python ``batch_size``); the other rows leave aiokafka_lite,
  aiokafka and kafka-python at their 16 KiB default. A Produce request carries one batch
  per partition, so the batch size sets how many records each request, and each broker
  wake-up, moves.
* W4 "latency": records paced at 5,000/s (W4_RATE) for N / 5,000 s, linger 0; latency
  is from the send()/produce() call to the delivery callback, p50/p99/max. The
  confluent sync Producer waits in ``poll(timeout)`` between sends so its delivery
  callbacks run when the ack arrives. "max lag" in notes: how late the pacer got.
* W5 "memory": 1-KB records produced as fast as ``send()`` lets for 60 s (quick 8 s)
  through ``throttle_proxy.py``, which passes only 5 MB/s (W5_THROTTLE) of client ->
  broker bytes (a fresh broker + proxy per run; the broker advertises the proxy).
  aiokafka_lite gets buffer_memory = 32 MiB and confluent queue.buffering.max.kbytes =
  32768 (BufferError is answered with poll(0.01) and a retry); aiokafka has no such
  option. RSS is sampled every 0.5 s (psutil). records/s is what the broker acked during
  the window; notes give the baseline and peak RSS, the steady-state (second half) send
  and ack rates, RSS growth over the second half and the longest single wait in send().
  "send() slowed down" means sends/s ≈ acks/s with flat RSS. After the window the proxy
  is unthrottled (SIGUSR1) and the client flushes: every record sent must be delivered.
  For clients with a bound: peak RSS <= bound + 64 MiB + baseline is checked (an
  aiokafka_lite run over it is FAILED).
* W5/100B, W5/10B (extras, group W5-small): W5 with 100-byte and 10-byte keyless
  values, the proxy throttled to 0.8 MB/s and 0.2 MB/s (W5_SMALL), about a tenth of what
  aiokafka_lite's send() loop moves unthrottled at those sizes: 10x overload with records
  whose future and bookkeeping outweigh their bytes.
* W6 "many topics": 1,000 topics x 4 partitions (created once per invocation, in chunks
  of 100, shared by all W6 runs), N records round-robin over the topics, keyless
  (W6/keyless) and keyed (W6/keyed). Before the clock every client sends one record to
  every topic and flushes (so metadata is known). Notes give CPU µs/record against the
  same client's W1 (when W1 ran in the same invocation). --quick leaves confluent out.
* --sizes: W1 with 10 B, 1 KB, 10 KB, 100 KB values (W1/10B ...): N = 50 MB (quick
  8 MB) / value size, capped at W1's N. --idempotence: W1 and W3 with idempotence on
  (W1/idem, W3/idem: up to 5 requests in flight per connection for every client, where
  without idempotence aiokafka_lite and aiokafka keep one batch per partition in flight);
  aiokafka's idempotent producer fails against Tansu (it sends InitProducerId v0, which
  Tansu answers with UnknownError): that row is FAILED with this reason, and such known
  client limitations do not count in the exit code (any other failed row makes it 1).

Also here: the records each workload sends (keys and values, built before the clock
starts) and :class:`WorkerSpec`, what one worker process is told to run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

VALUE_SIZE = 100


DISTINCT_KEYS = 1_000


LINGER_MS = 5


PARTITIONS = 4


W2_CONCURRENCY = 1_000


W4_RATE = 5_000  # records/s


W5_THROTTLE = 5_000_000  # client -> broker bytes/s through the proxy


W5_BUFFER = 32 * 1024 * 1024  # aiokafka_lite buffer_memory, librdkafka queue.buffering.max


LIBRDKAFKA_BATCH_SIZE = 1_000_000  # librdkafka's default batch.size (the /1MB rows')


W5_HEADROOM_MB = 64  # peak RSS may exceed baseline + bound by this much


W5_SAMPLE_S = 0.5


# W5 with small keyless records (extras, group W5-small): (value size, throttle in
# bytes/s). Unthrottled, aiokafka_lite's W5 loop moved ~73,000 100-byte and ~98,000
# 10-byte keyless records/s through the embedded broker (about 8 and 2 MB/s of
# requests, 2 CPUs): each throttle is a tenth of that, so 10x what the broker absorbs
# is offered.
W5_SMALL = ((100, 800_000), (10, 200_000))


W6_TOPICS = 1_000


W6_CREATE_CHUNK = 100


SIZES = (10, 1024, 10 * 1024, 100 * 1024)


SIZES_BYTES, SIZES_QUICK_BYTES = 50_000_000, 8_000_000


# A worker gets this much longer than its timed deadline for imports, start and stop.
WORKER_OVERHEAD_S = 30.0


ASYNC_CLIENTS = ("aiokafka_lite", "aiokafka", "confluent-aio")


ALL_CLIENTS = ("aiokafka_lite", "aiokafka", "confluent", "confluent-aio", "kafka-python")


JAVA = "java"  # Java's KafkaProducer, through kafka-tools' ProducerPerformance (run_java)


CLIENT_CHOICES = (*ALL_CLIENTS, JAVA)  # what --clients accepts (and runs by default)


BROKERS = ("tansu", "kafka")  # --broker: the embedded Tansu broker, or 1-node Apache Kafka


PURE_SUFFIX = "+pure"  # the same client with AIOKAFKA_LITE_NO_EXTENSIONS=1 (--pure)


def base_client(label: str) -> str:
    """``aiokafka_lite[send_many]+pure`` -> ``aiokafka_lite``: a variant runs its base client."""
    return label.split("[", 1)[0].removesuffix(PURE_SUFFIX)


def runner_label(label: str) -> str:
    """The RUNNERS entry of a label: ``+pure`` runs the same code in another build."""
    return label.removesuffix(PURE_SUFFIX)


@dataclass(frozen=True)
class Workload:
    """What a workload is; how each client runs it lives in ``RUNNERS[kind]``."""

    id: str
    title: str
    records: int
    quick_records: int
    clients: tuple[str, ...]
    partitions: int = PARTITIONS
    kind: str = ""  # the RUNNERS entry; "" = id
    group: str = ""  # a name --workloads also accepts (W6 -> both W6 rows); "" = id
    extra: bool = False  # only run when asked for (--sizes, --idempotence, --workloads)
    value_size: int = VALUE_SIZE
    keyed: bool = True
    unique_keys: bool = False  # a distinct 16-byte key per record instead of DISTINCT_KEYS
    linger_ms: float = LINGER_MS
    idempotence: bool = False
    buffer_memory: int | None = None  # the clients' bound on buffered bytes, where they have one
    batch_size: int | None = None  # every client's batch size (None: each client's default)
    topics: int = 1
    duration_s: float = 0.0  # > 0: time-boxed (records is then ignored)
    quick_duration_s: float = 0.0
    quick_caps: tuple[tuple[str, int], ...] = ()  # (client, records) in --quick mode
    caps: tuple[tuple[str, int], ...] = ()  # (client, records) otherwise
    quick_skip: tuple[str, ...] = ()  # clients left out in --quick mode (time budget)
    throttle: float = W5_THROTTLE  # W5: client -> broker bytes/s the proxy lets through

    @property
    def runner_kind(self) -> str:
        return self.kind or self.id

    @property
    def group_name(self) -> str:
        return self.group or self.id


def size_label(size: int) -> str:
    return f"{size // 1024}KB" if size >= 1024 else f"{size}B"


def extra_row(base: Workload, suffix: str, title: str, group: str, **changes: Any) -> Workload:
    """A row of ``base`` run only when asked for (by ``group``): its runner, N and clients,
    with ``changes`` (e.g. no keys)."""
    return replace(
        base,
        id=f"{base.id}/{suffix}",
        title=f"{base.title}, {title}",
        kind=base.id,
        group=group,
        extra=True,
        **changes,
    )


def size_workloads() -> list[Workload]:
    """W1 at several value sizes; N scaled to move about the same bytes, capped at W1's N."""
    out = []
    for size in SIZES:
        records = max(100, min(200_000, SIZES_BYTES // size))
        quick = max(50, min(30_000, SIZES_QUICK_BYTES // size))
        out.append(
            extra_row(
                _W1,
                size_label(size),
                f"{size_label(size)} values",
                "sizes",
                records=records,
                quick_records=quick,
                clients=ALL_CLIENTS,
                value_size=size,
            )
        )
    return out


# N: runs of several seconds for the Python clients (shorter ones measure noise).
_W1 = Workload("W1", "per-record await", 400_000, 30_000, (*ALL_CLIENTS, JAVA))
_W3 = Workload(
    "W3",
    "batch API",
    1_000_000,  # ~1-3 s per client: shorter runs measure start-up and noise
    30_000,
    ("aiokafka_lite", "aiokafka_lite[send_many]", "aiokafka", "confluent", JAVA),
)

WORKLOAD_LIST: list[Workload] = [
    _W1,
    extra_row(_W1, "keyless", "keyless", "keyless", keyed=False),
    Workload(
        "W1/unique",
        "per-record await, a distinct key per record",
        400_000,
        30_000,
        ALL_CLIENTS,
        kind="W1",
        unique_keys=True,
    ),
    Workload(
        "W2",
        "many concurrent senders",
        200_000,
        10_000,
        ASYNC_CLIENTS,
        quick_caps=(("confluent-aio", 2_000),),
        caps=(("confluent-aio", 20_000),),  # ~1,000 records/s: see W2 above
    ),
    _W3,
    extra_row(_W3, "keyless", "keyless", "keyless", keyed=False),
    extra_row(_W3, "idem", "idempotent", "idempotence", idempotence=True),
    Workload(
        "W3/1MB",
        "batch API, 1 MB batches for every client",
        1_000_000,
        30_000,
        ("aiokafka_lite", "aiokafka_lite[send_many]", "aiokafka", "confluent"),
        kind="W3",
        group="1MB",
        batch_size=LIBRDKAFKA_BATCH_SIZE,
    ),
    Workload(
        "W4",
        f"latency at {W4_RATE:,}/s",
        W4_RATE * 10,
        W4_RATE * 3,
        ("aiokafka_lite", "aiokafka", "confluent", "confluent-aio"),
        linger_ms=0,
    ),
    Workload(
        "W5",
        f"memory, broker at {W5_THROTTLE / 1e6:g} MB/s",
        0,
        0,
        ("aiokafka_lite", "aiokafka", "confluent"),
        value_size=1024,
        buffer_memory=W5_BUFFER,
        duration_s=60.0,
        quick_duration_s=8.0,
    ),
    *(
        Workload(
            f"W5/{size_label(size)}",
            f"memory, {size_label(size)} keyless, broker at {rate / 1e6:g} MB/s",
            0,
            0,
            ("aiokafka_lite", "aiokafka", "confluent"),
            kind="W5",
            group="W5-small",
            extra=True,
            value_size=size,
            keyed=False,
            buffer_memory=W5_BUFFER,
            duration_s=60.0,
            quick_duration_s=8.0,
            throttle=rate,
        )
        for size, rate in W5_SMALL
    ),
    *(
        Workload(
            f"W6/{mode}",
            f"{W6_TOPICS:,} topics, {mode}",
            100_000,
            20_000,
            ("aiokafka_lite", "aiokafka", "confluent"),
            kind="W6",
            group="W6",
            quick_skip=("confluent",),
            keyed=mode == "keyed",
            topics=W6_TOPICS,
        )
        for mode in ("keyless", "keyed")
    ),
    *size_workloads(),
    Workload(
        "W1/1MB",
        "per-record await, 1 MB batches for every client",
        400_000,
        30_000,
        ALL_CLIENTS,
        kind="W1",
        group="1MB",
        extra=True,
        batch_size=LIBRDKAFKA_BATCH_SIZE,
    ),
    Workload(
        "W1/idem",
        "per-record await, idempotent",
        200_000,
        30_000,
        ALL_CLIENTS,
        kind="W1",
        group="idempotence",
        extra=True,
        idempotence=True,
    ),
]


WORKLOADS: dict[str, Workload] = {w.id: w for w in WORKLOAD_LIST}


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker process needs; passed to it as JSON on the command line."""

    workload: str
    client: str
    bootstrap: str
    topic: str  # W6: the prefix of the topic names
    records: int
    deadline_s: float
    uvloop: bool = False
    duration_s: float = 0.0
    proxy_pid: int | None = None  # W5: the throttling proxy, told to unthrottle at the end

    @property
    def wl(self) -> Workload:
        return WORKLOADS[self.workload]


def make_keys() -> list[bytes]:
    return [b"key-%04d" % i for i in range(DISTINCT_KEYS)]


def key_sequence(n: int, unique: bool = False) -> list[bytes]:
    """The key of every record, built before the clock starts."""
    if unique:
        return [b"%016d" % i for i in range(n)]  # 16 bytes, all distinct
    keys = make_keys()
    return [keys[i % DISTINCT_KEYS] for i in range(n)]


def workload_keys(wl: Workload, n: int) -> list[bytes | None]:
    """The key of every record of a W1/W3-style workload: W1's keys, or None (keyless)."""
    if not wl.keyed:
        return [None] * n
    return list(key_sequence(n, wl.unique_keys))


def make_value(size: int = VALUE_SIZE) -> bytes:
    return os.urandom(size)


def topic_names(spec: WorkerSpec) -> list[str]:
    """The run's topics: its own, or (W6) the shared many-topic set."""
    count = spec.wl.topics
    return [spec.topic] if count == 1 else [f"{spec.topic}-{i:04d}" for i in range(count)]


def w5_keys(spec: WorkerSpec) -> list[bytes | None]:
    """W5's keys, used round-robin: DISTINCT_KEYS of them, or none (keyless W5s)."""
    return list(make_keys()) if spec.wl.keyed else [None] * DISTINCT_KEYS


def w6_keys(n: int, topics: int, keyed: bool) -> list[bytes | None]:
    """W6's keys: record i goes to topic i % topics, so the key is shifted once per round
    over the topics; otherwise each topic would always get the same key (one partition)."""
    if not keyed:
        return [None] * n
    keys = make_keys()
    return [keys[(i + i // topics) % DISTINCT_KEYS] for i in range(n)]
