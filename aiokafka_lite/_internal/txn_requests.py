"""The transactional producer's requests, each built, sent and checked (Java's TxnRequestHandlers).

InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn go to the coordinator of
the transactional id; TxnOffsetCommit to the coordinator of the consumer group. On
KIP-890's transactions v2 (:attr:`TxnRequests.v2`, where the cluster finalized
``transaction.version`` 2) EndTxn v5 answers with the epoch of the next transaction and
TxnOffsetCommit v5 adds the group's offsets itself; on v1 both stop at v4. Each
request carries the current producer id and epoch, is sent through
:class:`~aiokafka_lite._internal.coordinator.Coordinators` (found with FindCoordinator, retried
with backoff within ``max_block_ms``) and raises the error its answer carries. What an
error does to the transaction is the transaction manager's
(:mod:`aiokafka_lite._internal.transaction`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import ProducerConfig
from ..errors import BrokerResponseError, KafkaConnectionError, error_from_response
from ..structs import OffsetAndMetadata, TopicPartition
from .client import GROUP, TRANSACTION
from .coordinator import Coordinators
from .idempotence import IdempotenceState
from .offsets import offset_commit_topics, take_committed
from .protocol.transactions import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

__all__ = ["TxnRequests"]

INVALID_TXN_STATE = 48
OPERATION_NOT_ATTEMPTED = 55


class TxnRequests:
    """The requests of one transactional id, made with the producer id and epoch of ``idem``."""

    def __init__(
        self, config: ProducerConfig, coords: Coordinators, idem: IdempotenceState
    ) -> None:
        assert config.transactional_id is not None
        self._id: str = config.transactional_id
        self._config = config
        self._coords = coords
        self._idem = idem
        #: KIP-890's transactions v2: the coordinator's cluster finalized
        #: ``transaction.version`` >= 2 and it speaks EndTxn v5 (:meth:`detect_v2`).
        self.v2 = False

    async def detect_v2(self) -> bool:
        """Whether our coordinator runs transactions v2 (KIP-890); sets :attr:`v2`."""
        conn = await self._coords.connection(TRANSACTION, self._id)
        end_txn = conn.api_versions.get(EndTxnRequest.API_KEY, (0, 0))
        self.v2 = (
            conn.finalized_features.get("transaction.version", 0) >= 2
            and end_txn[1] >= EndTxnRequest.MAX_VERSION_TXN_V1 + 1
        )
        return self.v2

    def _cap(self, request_cls: type[EndTxnRequest] | type[TxnOffsetCommitRequest]) -> int | None:
        return None if self.v2 else request_cls.MAX_VERSION_TXN_V1

    async def init_producer_id(self, bump: bool) -> InitProducerIdResponse:
        """InitProducerId with our transactional id: the id and epoch to use from now on.

        ``bump``: name the current id and epoch (KIP-360), so that the coordinator
        bumps our epoch rather than fencing us.
        """

        async def attempt() -> InitProducerIdResponse:
            conn = await self._coords.connection(TRANSACTION, self._id)
            version = conn.version_for(InitProducerIdRequest)
            # v3+ names the current id and epoch; older brokers bump for any
            # InitProducerId with a transactional id anyway.
            resume = bump and version >= 3
            request = InitProducerIdRequest(
                transactional_id=self._id,
                transaction_timeout_ms=self._config.transaction_timeout_ms,
                producer_id=self._idem.producer_id if resume else -1,
                producer_epoch=self._idem.epoch if resume else -1,
            )
            response: InitProducerIdResponse = await self._coords.send(
                conn, request, version, TRANSACTION, self._id
            )
            self._coords.check(response.error_code, TRANSACTION, self._id, "InitProducerId")
            return response

        return await self._coords.retrying("InitProducerId", attempt)

    async def add_partitions(
        self, tps: list[TopicPartition]
    ) -> tuple[list[TopicPartition], BrokerResponseError | None]:
        """One AddPartitionsToTxn for ``tps`` (not retried): the partitions the answer
        added, and its first error (a non-retriable one before any retriable one)."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self._id,
            v3_and_below_producer_id=self._idem.producer_id,
            v3_and_below_producer_epoch=self._idem.epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(t, ps) for t, ps in by_topic.items()],
        )
        response: AddPartitionsToTxnResponse = await self._coords.request(
            TRANSACTION, self._id, request
        )
        added: list[TopicPartition] = []
        first: BrokerResponseError | None = None
        for topic_result in response.results_by_topic_v3_and_below:
            for p in topic_result.results_by_partition:
                tp = TopicPartition(topic_result.name, p.partition_index)
                if p.partition_error_code == 0:
                    added.append(tp)
                elif p.partition_error_code != OPERATION_NOT_ATTEMPTED:
                    error = error_from_response(
                        p.partition_error_code,
                        topic=tp.topic,
                        partition=tp.partition,
                        message="AddPartitionsToTxn",
                    )
                    if first is None or not error.retriable:
                        first = error
        if first is not None:
            self._coords.forget_on(first, TRANSACTION, self._id)
        return added, first

    async def add_offsets(self, group_id: str) -> None:
        """AddOffsetsToTxn: the group's offsets become part of the transaction."""
        await self._to_txn_coordinator(
            f"AddOffsetsToTxn for group {group_id!r}",
            "AddOffsetsToTxn",
            lambda: AddOffsetsToTxnRequest(
                transactional_id=self._id,
                producer_id=self._idem.producer_id,
                producer_epoch=self._idem.epoch,
                group_id=group_id,
            ),
        )

    async def commit_offsets(
        self, group_id: str, topics: dict[str, dict[int, OffsetAndMetadata]]
    ) -> None:
        """TxnOffsetCommit to the group's coordinator, retried for the partitions not yet
        committed."""
        remaining = {t: dict(ps) for t, ps in topics.items()}

        async def attempt() -> None:
            request = TxnOffsetCommitRequest(
                transactional_id=self._id,
                group_id=group_id,
                producer_id=self._idem.producer_id,
                producer_epoch=self._idem.epoch,
                topics=offset_commit_topics(remaining),
            )
            response: TxnOffsetCommitResponse = await self._coords.request(
                GROUP, group_id, request, self._cap(TxnOffsetCommitRequest)
            )
            first = take_committed(response, remaining, group_id)
            if first is not None:
                self._coords.forget_on(first, GROUP, group_id)
                raise first
            if remaining:
                raise KafkaConnectionError("TxnOffsetCommit: the answer left out some partitions")

        await self._coords.retrying(f"TxnOffsetCommit for group {group_id!r}", attempt)

    async def end_txn(self, commit: bool) -> EndTxnResponse:
        """EndTxn: the coordinator commits (or aborts) the transaction. On transactions
        v2 the answer names the producer id and epoch of the next transaction."""
        what = "EndTxn(commit)" if commit else "EndTxn(abort)"
        try:
            response = await self._to_txn_coordinator(
                what,
                what,
                lambda: EndTxnRequest(
                    transactional_id=self._id,
                    producer_id=self._idem.producer_id,
                    producer_epoch=self._idem.epoch,
                    committed=commit,
                ),
                self._cap(EndTxnRequest),
            )
        except BrokerResponseError as e:
            if commit and e.errno == INVALID_TXN_STATE:
                # What Kafka answers a commit of a transaction it aborted itself (a
                # transaction open past its timeout, e.g. through a slow failover).
                raise type(e)(
                    f"{what} refused: the coordinator has no open transaction of "
                    f"{self._id!r} to commit; it has most likely aborted it, as it does with "
                    "a transaction left open longer than transaction_timeout_ms "
                    f"({self._config.transaction_timeout_ms} ms)"
                ) from e
            raise
        assert isinstance(response, EndTxnResponse)
        return response

    async def _to_txn_coordinator(
        self,
        what: str,
        check_as: str,
        build: Callable[[], AddOffsetsToTxnRequest | EndTxnRequest],
        max_version: int | None = None,
    ) -> AddOffsetsToTxnResponse | EndTxnResponse:
        """Send ``build()`` (built afresh for each attempt, with the epoch of the moment)
        to our transaction coordinator until its answer has no error, retrying as
        :meth:`Coordinators.retrying` does; ``what`` names it in a timeout, ``check_as``
        in the broker's error."""

        async def attempt() -> AddOffsetsToTxnResponse | EndTxnResponse:
            response: AddOffsetsToTxnResponse | EndTxnResponse = await self._coords.request(
                TRANSACTION, self._id, build(), max_version
            )
            self._coords.check(response.error_code, TRANSACTION, self._id, check_as)
            return response

        return await self._coords.retrying(what, attempt)
