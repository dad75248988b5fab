"""Partitioning: Kafka's murmur2 key hash and the sticky partitioner for keyless records.

Keyed records must land on the same partition as they would with the Java client
(and aiokafka / kafka-python), so ``murmur2`` reproduces ``org.apache.kafka.common.utils.
Utils.murmur2`` bit for bit, including its signed 32-bit result.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, TypeAlias

from .. import speedups

__all__ = [
    "KeyHashCache",
    "Partitioner",
    "StickyPartitioner",
    "default_partition",
    "murmur2",
    "place_plain",
    "sticky_moves_on",
    "to_positive",
]

#: A user-supplied partitioner with aiokafka's signature:
#: ``(key_bytes, all_partitions, available_partitions) -> partition``.
Partitioner: TypeAlias = Callable[[bytes | None, Sequence[int], Sequence[int]], int]

_SEED: Final = 0x9747B28C
_M: Final = 0x5BD1E995
_MASK: Final = 0xFFFFFFFF

# Precompiled little-endian "<nI" unpackers, indexed by block count, so the hot path
# neither formats a string nor parses a format. 64 blocks covers keys up to 259 bytes;
# longer keys fall back to struct's own format cache. '<' makes this byte-order portable.
_MAX_CACHED_BLOCKS: Final = 64
_UNPACK_BLOCKS: Final = tuple(
    struct.Struct(f"<{n}I").unpack_from for n in range(_MAX_CACHED_BLOCKS + 1)
)
_unpack_from = struct.unpack_from
_from_bytes = int.from_bytes


def murmur2_u32(data: bytes) -> int:
    """Java's murmur2 as an unsigned 32-bit int (callers pick signed or positive).

    Every intermediate is masked to 32 bits, which is exactly Java's wrapping ``int``
    arithmetic; with a non-negative value ``>>`` behaves like Java's ``>>>``. The block
    step masks ``h * m ^ k * m`` once instead of per product: the low 32 bits of a product
    or XOR depend only on the low 32 bits of the operands.
    """
    n = len(data)
    h = _SEED ^ n
    if n > 3:
        q = n >> 2
        if q <= _MAX_CACHED_BLOCKS:
            blocks = _UNPACK_BLOCKS[q](data)
        else:
            blocks = _unpack_from(f"<{q}I", data)
        for k in blocks:
            k = k * _M & _MASK
            h = (h * _M ^ (k ^ k >> 24) * _M) & _MASK
        t = n & 3
        if t:
            # Java XORs the 1-3 tail bytes (as unsigned, `& 0xff`) at bit offsets 0/8/16:
            # that is the little-endian integer of the tail.
            h = (h ^ _from_bytes(data[n - t :], "little")) * _M & _MASK
    elif n:
        h = (h ^ _from_bytes(data, "little")) * _M & _MASK
    h ^= h >> 13
    h = h * _M & _MASK
    return h ^ h >> 15


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 hash of ``data``, as the signed 32-bit int Java's ``Utils.murmur2``
    returns."""
    return (murmur2_u32(data) ^ 0x80000000) - 0x80000000


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``, which differs for
    negative values and overflows for ``-2**31`` in Java)."""
    return n & 0x7FFFFFFF


def default_partition(key: bytes, num_partitions: int) -> int:
    """The Java client's partition for a keyed record: ``toPositive(murmur2(key)) % n``."""
    # The low 31 bits of the unsigned and the signed hash are identical.
    return (murmur2_u32(key) & 0x7FFFFFFF) % num_partitions


class KeyHashCache:
    """Bounded memo of ``key -> to_positive(murmur2(key))``.

    Producers often reuse a small set of keys, and a dict hit is far cheaper than the
    pure-Python hash. When full the cache is simply cleared: murmur2 is pure, so dropping
    entries never changes a result, and clearing keeps memory bounded without LRU
    bookkeeping on the hit path.
    """

    __slots__ = ("_cache", "_capacity")

    def __init__(self, capacity: int = 65536) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = capacity
        self._cache: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._cache)

    @property
    def capacity(self) -> int:
        """How many keys it holds before it starts over."""
        return self._capacity

    @property
    def table(self) -> dict[bytes, int]:
        """The memo itself (never replaced), for compiled code that reads and fills it
        directly (``_csend_path``, for keys longer than 64 bytes), keeping :meth:`hash`'s
        policy."""
        return self._cache

    def hash(self, key: bytes) -> int:
        """``to_positive(murmur2(key))``, memoized; the hit path is one ``dict.get``."""
        cache = self._cache
        value = cache.get(key)
        if value is None:
            value = murmur2_u32(key) & 0x7FFFFFFF
            if len(cache) >= self._capacity:
                cache.clear()
            cache[key] = value
        return value

    @property
    def peek(self) -> Callable[[bytes], int | None]:
        """The cache's ``get``: for loops that inline the hit path (the dict is never replaced)."""
        return self._cache.get

    def partition(self, key: bytes, num_partitions: int) -> int:
        """``default_partition(key, num_partitions)`` through the cache."""
        return self.hash(key) % num_partitions


def place_plain(
    items: list[tuple[object, object]],
    lo: int,
    hi: int,
    keys: list[bytes | None],
    values: list[bytes | None],
    base: int,
    partition: int | None,
    num_partitions: int,
    max_size: int,
    hashes: KeyHashCache,
    by_partition: dict[int, list[int]],
) -> int:
    """Place ``send_many()``'s plain records from ``items[lo]`` on: return where it stopped.

    A plain record is a ``(bytes, bytes | None)`` tuple of at most ``max_size`` bytes: it
    needs no serializer and no check beyond these. Its key and value go to ``keys[i - base]``
    and ``values[i - base]`` (the lists hold one chunk of the call, from record ``base``;
    IndexError if ``lo:hi`` is not all in them), its index to ``by_partition[p]``
    (``partition``, else the key's murmur2 partition). The first record that is not plain
    stops the run (its index is returned, ``hi`` when every record was plain): the caller
    gives it the full checks, then calls again from the next index, so each partition's
    indices stay in input order.
    """
    if lo < base or min(hi, len(items)) - base > min(len(keys), len(values)):
        raise IndexError(f"records {lo}..{hi} do not fit keys/values from {base}")
    cached, hash_ = hashes.peek, hashes.hash
    for i in range(lo, hi):
        item = items[i]
        if type(item) is not tuple or len(item) != 2:
            return i
        k, v = item
        if type(k) is not bytes or (v is not None and type(v) is not bytes):
            return i
        if len(k) + (0 if v is None else len(v)) > max_size:
            return i
        if partition is None:
            h = cached(k)
            p = (hash_(k) if h is None else h) % num_partitions
        else:
            p = partition
        keys[i - base] = k
        values[i - base] = v
        order = by_partition.get(p)
        if order is None:
            by_partition[p] = [i]
        else:
            order.append(i)
    return hi


def sticky_moves_on(produced: int, limit: int, batch_full: bool) -> bool:
    """Whether a topic's keyless records leave their sticky partition now (KIP-794).

    Java's ``BuiltInPartitioner.updatePartitionInfo``: ``produced`` bytes of keyless
    records went to the partition since the topic moved there; it moves on once that
    reaches ``limit`` (``batch.size``) and the partition's last batch is full (so a
    batch is not left half-filled), and at twice ``limit`` regardless.
    """
    return produced >= 2 * limit or (batch_full and produced >= limit)


class StickyPartitioner:
    """Uniform sticky partitioning for keyless records (KIP-480, KIP-794).

    Sending every keyless record of a topic to one partition fills batches faster than
    round-robin, which means fewer, larger requests and lower latency. Each topic keeps
    its sticky partition and the bytes its keyless records added there (``produced``);
    the producer asks :func:`sticky_moves_on` after each append and calls
    :meth:`move_on`, which picks the next partition as Java's ``BuiltInPartitioner``
    does: uniformly among the available partitions (the one left included), else
    among all.

    Like Kafka, :meth:`partition` does not re-check availability: the sticky choice is
    only revisited by :meth:`move_on`.
    """

    __slots__ = ("_current", "_produced", "_rng")

    def __init__(self, rng: random.Random | None = None) -> None:
        # An injectable RNG makes tests deterministic; the default needs no seeding.
        self._rng = rng if rng is not None else random.Random()
        self._current: dict[str, int] = {}
        self._produced: dict[str, int] = {}

    @property
    def current(self) -> dict[str, int]:
        """Each topic's sticky partition (the dict itself, never replaced: send()'s fast
        path reads it)."""
        return self._current

    @property
    def produced(self) -> dict[str, int]:
        """Bytes each topic's keyless records added to its sticky partition since it
        moved there (the dict itself, never replaced: send()'s fast path adds to it)."""
        return self._produced

    def partition(self, topic: str, available: Sequence[int], num_partitions: int) -> int:
        """The topic's current sticky partition, choosing one on first use."""
        part = self._current.get(topic)
        if part is None or part >= num_partitions:  # (the topic was created again, smaller)
            part = self.move_on(topic, available, num_partitions)
        return part

    def move_on(self, topic: str, available: Sequence[int], num_partitions: int) -> int:
        """Give ``topic`` a new sticky partition (its count of bytes starts again)."""
        choices: Sequence[int] = available if available else range(num_partitions)
        if not choices:
            raise ValueError("no partitions to choose from")
        part = self._current[topic] = choices[self._rng.randrange(len(choices))]
        self._produced[topic] = 0
        return part


# The compiled twins (_cpartitioner.pyx) replace murmur2's three functions, place_plain and
# sticky_moves_on when they were built (see aiokafka_lite.speedups); KeyHashCache calls
# murmur2_u32 through this module's globals, so it uses whichever is in place. The pure
# ones stay reachable for tests.
py_murmur2, py_default_partition, py_murmur2_u32 = murmur2, default_partition, murmur2_u32
py_place_plain = place_plain
py_sticky_moves_on = sticky_moves_on
_compiled = speedups.compiled_module("_cpartitioner")
if _compiled is not None and not TYPE_CHECKING:
    murmur2 = _compiled.murmur2
    default_partition = _compiled.default_partition
    place_plain = _compiled.place_plain
    murmur2_u32 = _compiled.murmur2_u32
    sticky_moves_on = _compiled.sticky_moves_on
