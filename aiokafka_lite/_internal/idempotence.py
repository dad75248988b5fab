"""Producer id, epoch and per-partition sequence numbers of the idempotent producer.

The idempotent half of Java's ``TransactionManager``. The broker keeps, per
producer id and partition, the sequence number of the last batch it wrote, and
accepts a batch only if its first sequence follows on: a retried batch that was
already written is answered DUPLICATE_SEQUENCE_NUMBER instead of written twice,
and a batch that overtook an earlier one is answered OUT_OF_ORDER_SEQUENCE_NUMBER
and retried after it. That is what lets up to five batches per partition be in
flight without reordering or duplicating records.

Sequence numbers are assigned when a batch is drained for its first send and
kept across retries. When the broker has lost our state (UNKNOWN_PRODUCER_ID),
reports a gap we cannot explain, or a numbered batch failed, the producer bumps
its epoch (KIP-360): it waits until nothing is in flight, takes the next epoch of
the same producer id and numbers every unsent batch afresh from 0. Without a
transactional id the producer bumps the epoch itself, as Java's does
(:meth:`IdempotenceState.bumped`): Kafka accepts a higher epoch whose first batch
numbers from 0, and from then on refuses the old epoch's requests, so a stale
request can never land behind the new epoch's records. (A new producer id, which
is all Kafka's InitProducerId gives a producer without a transactional id, would
not fence the old one's.) A broker that refuses such an epoch (Tansu answers
PRODUCER_FENCED, or UNKNOWN_PRODUCER_ID for an id it did not give out) gets a new
producer id instead, then and at every later bump.
Batches whose outcome is unknown (their request timed out or the connection broke
after they were written) cannot safely be re-sent under a new epoch, so they fail
with an error that says so.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from ..structs import TopicPartition

__all__ = ["MAX_PRODUCER_EPOCH", "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "IdempotenceState"]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = (1 << 15) - 1  # int16: past it, a new producer id is needed
_SEQUENCE_WRAP = 1 << 31  # sequences are int32 and wrap to 0, as in Java


class IdempotenceState:
    __slots__ = (
        "_known",
        "_last_acked",
        "_next_sequence",
        "bump_needed",
        "epoch",
        "local_bumps",
        "local_epoch",
        "producer_id",
    )

    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.epoch = NO_PRODUCER_EPOCH
        self.bump_needed = False
        #: The current epoch was bumped locally and no batch of it is acknowledged yet.
        self.local_epoch = False
        #: False once a broker refused a locally bumped epoch: new ids from then on.
        self.local_bumps = True
        self._next_sequence: dict[TopicPartition, int] = {}
        self._last_acked: dict[TopicPartition, int] = {}
        #: Partitions where a batch of this producer id (any epoch) was acknowledged.
        self._known: set[TopicPartition] = set()

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    def set_producer_id(self, producer_id: int, epoch: int) -> None:
        """A new id or epoch: every partition's numbering starts again at 0."""
        if producer_id != self.producer_id:
            self._known.clear()
        self.producer_id = producer_id
        self.epoch = epoch
        self.bump_needed = False
        self.local_epoch = False
        self._next_sequence.clear()
        self._last_acked.clear()

    def bumped(self) -> tuple[int, int] | None:
        """(producer id, next epoch) for a bump done locally; None without a producer id
        or once the epoch is exhausted (then only a new producer id will do)."""
        if not self.local_bumps or not self.has_producer_id or self.epoch >= MAX_PRODUCER_EPOCH:
            return None
        return self.producer_id, self.epoch + 1

    def local_epoch_refused(self) -> bool:
        """A batch of the current epoch was refused as a broker that does not take
        locally bumped epochs refuses it (batch_outcomes says which answers): if that
        epoch was bumped locally and nothing of it was acknowledged, True, and a new
        producer id is needed, now and at every later bump."""
        if not self.local_epoch:
            # Others sent under that epoch before its first refusal came back.
            return self.bump_needed and not self.local_bumps
        self.local_epoch = False
        self.local_bumps = False
        self.bump_needed = True
        return True

    def next_sequence(self, tp: TopicPartition, count: int) -> int:
        """Reserve ``count`` sequence numbers for a new batch of ``tp``."""
        seq = self._next_sequence.get(tp, 0)
        self._next_sequence[tp] = (seq + count) % _SEQUENCE_WRAP
        return seq

    def release_sequence(self, tp: TopicPartition, base_sequence: int, count: int) -> bool:
        """Give back the numbers of a batch that was never sent, if it was the last
        one numbered for ``tp`` (so no gap is left); True if given back."""
        if self._next_sequence.get(tp) != (base_sequence + count) % _SEQUENCE_WRAP:
            return False
        self._next_sequence[tp] = base_sequence
        return True

    def acknowledged(self, tp: TopicPartition, base_sequence: int, count: int) -> None:
        self.local_epoch = False  # the broker took the epoch
        last = (base_sequence + count - 1) % _SEQUENCE_WRAP
        self._known.add(tp)  # the broker wrote a batch of ours: it knows the producer
        previous = self._last_acked.get(tp)
        # Acks arrive in order per partition, except a late duplicate: keep the max.
        if previous is None or _after(last, previous):
            self._last_acked[tp] = last

    @property
    def known_partitions(self) -> AbstractSet[TopicPartition]:
        """The partitions where a batch of the current producer id, of any epoch, was
        acknowledged: a live view, emptied by a new producer id (not by a new epoch).

        Elsewhere the broker may hold no state for this producer, and Kafka then writes
        a batch whatever its first sequence number: a second batch that overtook a
        refused first one would be written first, and the first could never follow
        (OUT_OF_ORDER_SEQUENCE_NUMBER), as a topic that is still being created refuses
        it. So such a partition has one batch in flight (the accumulator's rule). Where
        the broker knows the id, it takes a new epoch only from sequence 0, so batches of
        a new epoch cannot overtake its first one either. A partition is forgotten where
        the broker says it lost our state (:meth:`forget`) and when its topic is deleted
        and created again (:meth:`forget_topic`); a broker that drops the state of an
        idle producer silently (``producer.id.expiration.ms``) cannot be noticed."""
        return self._known

    def forget(self, tp: TopicPartition) -> None:
        """The broker lost (or never had) our state on ``tp``: UNKNOWN_PRODUCER_ID or
        a gap we cannot explain. One batch in flight there until it knows us again."""
        self._known.discard(tp)

    def forget_topic(self, topic: str) -> None:
        """``topic`` was deleted and created again: its partitions know no producer."""
        self._known.difference_update([tp for tp in self._known if tp.topic == topic])

    def is_next_expected(self, tp: TopicPartition, base_sequence: int) -> bool:
        """Is this batch the one the broker should write next (nothing before it pending)?"""
        last = self._last_acked.get(tp, -1)
        return base_sequence == (last + 1) % _SEQUENCE_WRAP


def _after(a: int, b: int) -> bool:
    """``a`` comes after ``b`` in wrapping int32 sequence space."""
    return 0 < (a - b) % _SEQUENCE_WRAP < _SEQUENCE_WRAP // 2
