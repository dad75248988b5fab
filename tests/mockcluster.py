"""A multi-broker Kafka cluster on loopback, for fault tests: librdkafka's mock cluster.

This is NOT a mock of our code. librdkafka (the C client under confluent-kafka) ships a
small in-process Kafka broker implementation, its "mock cluster": real TCP listeners on
127.0.0.1 that speak the Kafka wire protocol (ApiVersions, Metadata, Produce with
record-batch v2, Fetch, ListOffsets, InitProducerId, transactions, consumer groups,
...). Our producer talks to it exactly as it would to
Apache Kafka, and any other client (e.g. ``confluent_kafka.Consumer``) can read back
what was written. Unlike a single embedded broker it has several brokers, so partition
leaders can move between them, and it has knobs for faults: error injection per API key,
broker down/up, per-broker round-trip delay, API version limits.

The library is the ``librdkafka-*.so*`` bundled in the installed ``confluent-kafka``
wheel (``site-packages/confluent_kafka.libs/``), loaded with ctypes. Its mock API
(``rdkafka_mock.h``) is experimental in librdkafka and not ABI-stable; the signatures
below follow the header of librdkafka 2.x.

The cluster lives inside an ``rd_kafka_t`` handle, created with
``test.mock.num.brokers=N`` (librdkafka then starts the cluster and
``rd_kafka_handle_mock_cluster`` returns it). That handle does nothing else: it is kept
alive for the cluster's life and destroyed (together with the cluster) by :meth:`close`.
The brokers run on librdkafka's own threads, so the cluster keeps serving while the
asyncio loop under test (or a blocking consumer) runs in this process.

Mock-cluster behaviour worth knowing (librdkafka 2.16.0, probed on the wire):

* Broker ids are ``1..N``. Topics have to be created here (:meth:`create_topic`), or
  are auto-created by a Metadata request (4 partitions, replication factor N):
  CreateTopics is not implemented. With replication factor > 1 the first leader of
  each partition is picked at random among its replicas; :meth:`set_leader` pins it.
* ApiVersions is advertised as v0-v2 only. A v3+ ApiVersions request is answered
  UNSUPPORTED_VERSION with a body that is neither v0 nor flexible layout (a raw
  one-byte array count, no tagged fields): a client must act on the error code alone
  and ask again in v0. Advertised too: Produce v0-10, Metadata v0-13, Fetch v0-16,
  ListOffsets v0-7, InitProducerId v0-4 (no CreateTopics).
* :meth:`set_leader` changes Metadata at once and bumps the partition's leader epoch
  by one. A Produce v10 sent to the old leader is answered NOT_LEADER_OR_FOLLOWER with
  a KIP-951 CurrentLeader (id, epoch) and the new leader in NodeEndpoints; so is an
  injected NOT_LEADER_OR_FOLLOWER (then naming the actual leader, maybe the very
  broker that answered). Replicas share one log, so a move loses nothing.
* :meth:`broker_down` closes the broker's connections and refuses new ones but does
  NOT move leadership: while it is down, Metadata leaves it out of the broker list yet
  still names it leader of its partitions (error 0), which Kafka never does.
* :meth:`push_errors` injects errors for the next requests of one API key, across the
  whole cluster (for Produce: every partition of the request gets the error). The
  request is answered WITHOUT being applied (nothing appended), so a retry cannot
  duplicate.
* InitProducerId works on any broker for a non-transactional producer (epoch 0), but
  a KIP-360 epoch bump (v3+ with the current producer id/epoch, null transactional
  id) is refused with INVALID_PRODUCER_ID_MAPPING, where Kafka hands out a new id.
* Producer id, epoch and sequence numbers are checked ONLY for Produce requests that
  carry a transactional id. For an idempotent, non-transactional producer nothing is
  checked: unknown ids are accepted, resent batches appended again, gaps and
  reordering written as they come. (For transactional ones a resent batch gets
  DUPLICATE_SEQUENCE_NUMBER, not Kafka's success with the original offset.)
* Every Produce response says ``log_append_time_ms = 1234`` (a placeholder), so a
  client that honours it (as Java's does) reports LogAppendTime 1234 for every record.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterable

__all__ = [
    "API_FETCH",
    "API_INIT_PRODUCER_ID",
    "API_METADATA",
    "API_PRODUCE",
    "ERR_MESSAGE_TOO_LARGE",
    "ERR_NETWORK_EXCEPTION",
    "ERR_NOT_ENOUGH_REPLICAS",
    "ERR_NOT_LEADER_OR_FOLLOWER",
    "ERR_OUT_OF_ORDER_SEQUENCE_NUMBER",
    "ERR_REQUEST_TIMED_OUT",
    "ERR_TOPIC_AUTHORIZATION_FAILED",
    "ERR_TRANSPORT",
    "ERR_UNKNOWN_PRODUCER_ID",
    "MockCluster",
    "MockClusterError",
    "find_librdkafka",
]

# Kafka API keys
API_PRODUCE = 0
API_FETCH = 1
API_METADATA = 3
API_API_VERSIONS = 18
API_INIT_PRODUCER_ID = 22

# Kafka protocol error codes (rd_kafka_resp_err_t uses the same numbers)
ERR_MESSAGE_TOO_LARGE = 10
ERR_NOT_LEADER_OR_FOLLOWER = 6
ERR_REQUEST_TIMED_OUT = 7
ERR_NETWORK_EXCEPTION = 13
ERR_NOT_ENOUGH_REPLICAS = 19
ERR_TOPIC_AUTHORIZATION_FAILED = 29
ERR_OUT_OF_ORDER_SEQUENCE_NUMBER = 45
ERR_UNKNOWN_PRODUCER_ID = 59
# librdkafka-internal RD_KAFKA_RESP_ERR__TRANSPORT: the mock broker closes the connection
# instead of answering, without applying the request (a request lost, not a response).
ERR_TRANSPORT = -195

_RD_KAFKA_PRODUCER = 0
_ERRSTR_SIZE = 512


class MockClusterError(RuntimeError):
    """A librdkafka mock-cluster call failed."""


def find_librdkafka() -> str:
    """Path of the librdkafka shared library bundled with the installed confluent-kafka."""
    import confluent_kafka  # imported lazily: only needed to locate the wheel

    pkg_dir = os.path.dirname(os.path.abspath(confluent_kafka.__file__))
    site = os.path.dirname(pkg_dir)
    patterns = [
        os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"),  # manylinux wheel
        os.path.join(pkg_dir, ".libs", "librdkafka*"),
        os.path.join(site, "confluent_kafka", ".dylibs", "librdkafka*.dylib"),  # macOS wheel
    ]
    for pattern in patterns:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    # A confluent-kafka built against a system librdkafka.
    import ctypes.util

    system = ctypes.util.find_library("rdkafka")
    if system:
        return system
    raise MockClusterError(f"no librdkafka found next to {pkg_dir} or on the system")


_lib: ctypes.CDLL | None = None


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    # Importing confluent_kafka first loads the very same .so (same path), so the
    # process keeps one copy of librdkafka.
    lib = ctypes.CDLL(find_librdkafka())
    vp, cp, i16, i32, sz = (
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int16,
        ctypes.c_int32,
        ctypes.c_size_t,
    )
    err = ctypes.c_int  # rd_kafka_resp_err_t / rd_kafka_conf_res_t are C enums (int)
    signatures: dict[str, tuple[object, list[object]]] = {
        "rd_kafka_version_str": (cp, []),
        "rd_kafka_err2name": (cp, [err]),
        "rd_kafka_conf_new": (vp, []),
        "rd_kafka_conf_destroy": (None, [vp]),
        "rd_kafka_conf_set": (err, [vp, cp, cp, cp, sz]),
        "rd_kafka_new": (vp, [ctypes.c_int, vp, cp, sz]),
        "rd_kafka_destroy": (None, [vp]),
        "rd_kafka_handle_mock_cluster": (vp, [vp]),
        "rd_kafka_mock_cluster_bootstraps": (cp, [vp]),
        "rd_kafka_mock_topic_create": (err, [vp, cp, ctypes.c_int, ctypes.c_int]),
        "rd_kafka_mock_partition_set_leader": (err, [vp, cp, i32, i32]),
        "rd_kafka_mock_partition_set_follower": (err, [vp, cp, i32, i32]),
        "rd_kafka_mock_broker_set_down": (err, [vp, i32]),
        "rd_kafka_mock_broker_set_up": (err, [vp, i32]),
        "rd_kafka_mock_broker_set_rtt": (err, [vp, i32, ctypes.c_int]),
        "rd_kafka_mock_push_request_errors_array": (None, [vp, i16, sz, ctypes.POINTER(err)]),
        "rd_kafka_mock_clear_request_errors": (None, [vp, i16]),
        "rd_kafka_mock_set_apiversion": (err, [vp, i16, i16, i16]),
        # varargs: (err, rtt_ms) pairs follow; argtypes cover the fixed part only
        "rd_kafka_mock_broker_push_request_error_rtts": (err, [vp, i32, i16, sz]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    return lib


def librdkafka_version() -> str:
    """The loaded librdkafka's version, e.g. ``"2.16.0"``."""
    version: bytes = _load().rd_kafka_version_str()
    return version.decode()


class MockCluster:
    """``brokers`` Kafka brokers on 127.0.0.1 (ids 1..N), served by librdkafka's mock cluster.

    Use as a context manager (or call :meth:`close`)::

        with MockCluster(brokers=3) as cluster:
            cluster.create_topic("t", partitions=6)
            ...AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)...

    Every method is synchronous and quick (it takes the cluster's lock, no I/O), so it
    may be called from a coroutine.
    """

    def __init__(self, brokers: int = 3) -> None:
        if brokers < 1:
            raise ValueError("brokers must be >= 1")
        self._lib = lib = _load()
        self.brokers = brokers
        self._rk: int | None = None
        self._mcluster: int | None = None
        errstr = ctypes.create_string_buffer(_ERRSTR_SIZE)
        conf = lib.rd_kafka_conf_new()
        try:
            for name, value in (
                ("test.mock.num.brokers", str(brokers)),
                # The handle never connects anywhere meaningful; keep it quiet.
                ("log_level", "3"),
                ("bootstrap.servers", "127.0.0.1:1"),  # replaced by the mock's own
            ):
                res = lib.rd_kafka_conf_set(
                    conf, name.encode(), value.encode(), errstr, _ERRSTR_SIZE
                )
                if res != 0:
                    raise MockClusterError(
                        f"rd_kafka_conf_set({name}={value}): {errstr.value.decode()}"
                    )
        except BaseException:
            lib.rd_kafka_conf_destroy(conf)
            raise
        rk = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, _ERRSTR_SIZE)
        if not rk:  # on failure the conf is still ours
            lib.rd_kafka_conf_destroy(conf)
            raise MockClusterError(f"rd_kafka_new: {errstr.value.decode()}")
        self._rk = rk  # on success rd_kafka_new owns the conf
        mcluster = lib.rd_kafka_handle_mock_cluster(rk)
        if not mcluster:
            self.close()
            raise MockClusterError("rd_kafka_handle_mock_cluster returned NULL")
        self._mcluster = mcluster
        self.bootstrap_servers: str = lib.rd_kafka_mock_cluster_bootstraps(mcluster).decode()
        self.broker_ids: list[int] = list(range(1, brokers + 1))

    # -- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        """Stop every broker and free the cluster (idempotent)."""
        rk, self._rk, self._mcluster = self._rk, None, None
        if rk is not None:
            # Destroying the handle destroys the mock cluster it created.
            self._lib.rd_kafka_destroy(rk)

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_rk", None) is not None:
            self.close()

    def __repr__(self) -> str:
        return f"<MockCluster brokers={self.brokers} {self.bootstrap_servers}>"

    # -- helpers -------------------------------------------------------------------

    @property
    def _mc(self) -> int:
        if self._mcluster is None:
            raise MockClusterError("the mock cluster is closed")
        return self._mcluster

    def _check(self, err: int, what: str) -> None:
        if err != 0:
            name = self._lib.rd_kafka_err2name(err).decode()
            raise MockClusterError(f"{what} failed: {name} ({err})")

    # -- topics and leaders -----------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        """Create ``name`` with leaders spread over the brokers (round-robin)."""
        err = self._lib.rd_kafka_mock_topic_create(
            self._mc, name.encode(), partitions, replication_factor
        )
        self._check(err, f"create_topic({name!r}, {partitions}, {replication_factor})")

    def set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Make ``broker_id`` (or -1: none) the partition's leader; Metadata shows it at once."""
        err = self._lib.rd_kafka_mock_partition_set_leader(
            self._mc, topic.encode(), partition, broker_id
        )
        self._check(err, f"set_leader({topic!r}, {partition}, {broker_id})")

    def set_follower(self, topic: str, partition: int, broker_id: int) -> None:
        """Set the partition's preferred read replica (for consumers, KIP-392)."""
        err = self._lib.rd_kafka_mock_partition_set_follower(
            self._mc, topic.encode(), partition, broker_id
        )
        self._check(err, f"set_follower({topic!r}, {partition}, {broker_id})")

    # -- brokers ------------------------------------------------------------------------

    def broker_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones (-1: all). Leaders stay put."""
        self._check(
            self._lib.rd_kafka_mock_broker_set_down(self._mc, broker_id),
            f"broker_down({broker_id})",
        )

    def broker_up(self, broker_id: int) -> None:
        """Accept connections again (-1: all brokers)."""
        self._check(
            self._lib.rd_kafka_mock_broker_set_up(self._mc, broker_id), f"broker_up({broker_id})"
        )

    def set_rtt(self, broker_id: int, ms: int) -> None:
        """Delay every response of the broker (-1: all) by ``ms`` milliseconds."""
        self._check(
            self._lib.rd_kafka_mock_broker_set_rtt(self._mc, broker_id, ms),
            f"set_rtt({broker_id}, {ms})",
        )

    # -- errors and versions ----------------------------------------------------------

    def push_errors(self, api_key: int, errors: Iterable[int]) -> None:
        """Answer the next ``len(errors)`` requests of ``api_key`` with these errors, in order.

        Cluster-wide (whichever broker gets the request). A request answered with an
        injected error is not applied. ``ERR_TRANSPORT`` (-195) drops the connection
        instead of answering.
        """
        codes = list(errors)
        if not codes:
            return
        array = (ctypes.c_int * len(codes))(*codes)
        self._lib.rd_kafka_mock_push_request_errors_array(self._mc, api_key, len(codes), array)

    def push_broker_errors(self, broker_id: int, api_key: int, errors: Iterable[int]) -> None:
        """Like :meth:`push_errors`, for requests to one broker only (these take precedence).

        Each error may be a code or a ``(code, rtt_ms)`` pair delaying that response.
        """
        args: list[ctypes.c_int] = []
        pairs = [(e, 0) if isinstance(e, int) else e for e in errors]
        for code, rtt in pairs:
            args += [ctypes.c_int(code), ctypes.c_int(rtt)]
        err = self._lib.rd_kafka_mock_broker_push_request_error_rtts(
            self._mc, broker_id, api_key, len(pairs), *args
        )
        self._check(err, f"push_broker_errors({broker_id}, {api_key})")

    def clear_errors(self, api_key: int) -> None:
        """Drop errors still queued (cluster-wide) for ``api_key``."""
        self._lib.rd_kafka_mock_clear_request_errors(self._mc, api_key)

    def set_api_version(self, api_key: int, min_version: int, max_version: int) -> None:
        """Limit the versions of ``api_key`` that ApiVersions advertises (-1, -1: disable it).

        ``max_version`` must not exceed what the mock implements.
        """
        err = self._lib.rd_kafka_mock_set_apiversion(self._mc, api_key, min_version, max_version)
        self._check(err, f"set_api_version({api_key}, {min_version}, {max_version})")
