"""Exceptions raised by aiokafka_lite.

Every exception derives from :class:`KafkaError`. Broker error codes map to one
:class:`BrokerResponseError` subclass per code, written out below from the Kafka protocol's
error table (``tests/data/error-codes.tsv`` holds the copy the tests check against). Names
are the Kafka name in CamelCase with a trailing ``_ERROR``/``_EXCEPTION`` dropped and
``Error`` added: ``NOT_LEADER_OR_FOLLOWER`` is :class:`NotLeaderOrFollowerError`,
``UNKNOWN_SERVER_ERROR`` is :class:`UnknownServerError`, ``NETWORK_EXCEPTION`` is
:class:`NetworkError`.

Hierarchy::

    Exception
    └── KafkaError                          retriable=False, invalid_metadata=False
        ├── BrokerResponseError             an error code in a broker's response
        │   ├── UnknownServerError          -1
        │   │   └── (for_code(n) classes)   codes missing from the table, made on demand
        │   ├── OffsetOutOfRangeError       1
        │   ├── ...                         one class per code in the table (not 0, NONE)
        │   └── InvalidRegularExpressionError  128
        ├── KafkaTimeoutError               retriable: an operation ran out of time
        ├── KafkaConnectionError            retriable: a connection failed or was cut
        ├── ProtocolError                   retriable: broker bytes could not be parsed
        ├── IllegalStateError               the producer cannot do that now
        │   ├── ProducerNotStartedError     used before start()
        │   ├── ProducerClosedError         used after stop()
        │   └── TransactionAbortRequiredError  the transaction failed: abort it
        ├── RecordTooLargeError             client side: record > max_request_size/buffer_memory
        ├── BufferFullError                 retriable: try_send found buffer_memory exhausted
        ├── DeliveryOutcomeUnknownError     may have been written; unsafe to re-send (new epoch)
        ├── PartitionAbortedError           an earlier record of the partition failed
        │                                   (only with fail_partition_on_error=True)
        ├── SerializationError              a key or value serializer failed
        ├── TransactionAbortedError         not sent: its transaction was aborted
        ├── IncompatibleBrokerVersionError  the broker speaks none of our versions of an API
        ├── RequestEncodingError            a batch or request could not be put on the wire
        └── ConfigError (also ValueError)   a bad producer setting; the message names it
            └── UnsupportedCodecError       compression codec library not installed

Class attributes:

* ``retriable``: the same request may succeed if sent again (the producer retries these
  within ``retries`` and ``delivery_timeout_ms``). For broker codes this is Java's
  ``RetriableException`` flag from the table.
* ``invalid_metadata``: the client should refresh its metadata before retrying. For broker
  codes these are the codes whose Java exception extends ``InvalidMetadataException``:
  3, 5, 6, 9, 13, 56, 72, 74, 80, 83, 100, 103. :class:`KafkaConnectionError` sets it too.

Unknown codes: :func:`for_code` returns, for a code not in the table, a class created on
first use (and cached) that subclasses :class:`UnknownServerError` (which is how Java and
aiokafka treat unknown codes), with ``errno`` set to the code and ``name`` set to
``UNKNOWN_ERROR_CODE_<n>``. Code 0 (``NONE``) is not an error; :func:`for_code` rejects it.

Client-side :class:`RecordTooLargeError` is a different class from the broker's
``MESSAGE_TOO_LARGE`` (:class:`MessageTooLargeError`).

aiokafka names: ``aiokafka.errors`` names for the same exceptions are aliases here (the
same class objects), so ``from aiokafka_lite.errors import NotLeaderForPartitionError`` works
when migrating. See the alias section at the end of this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .structs import DeliveryReport

__all__ = [
    "AuthenticationFailedError",
    "BrokerIdNotRegisteredError",
    "BrokerNotAvailableError",
    "BrokerResponseError",
    "BufferFullError",
    "ClusterAuthorizationFailedError",
    "ConcurrentTransactions",
    "ConcurrentTransactionsError",
    "ConfigError",
    "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError",
    "CorruptMessageError",
    "CorruptRecordException",
    "CorruptResponseError",
    "DelegationTokenAuthDisabled",
    "DelegationTokenAuthDisabledError",
    "DelegationTokenAuthorizationFailed",
    "DelegationTokenAuthorizationFailedError",
    "DelegationTokenExpired",
    "DelegationTokenExpiredError",
    "DelegationTokenNotFound",
    "DelegationTokenNotFoundError",
    "DelegationTokenOwnerMismatch",
    "DelegationTokenOwnerMismatchError",
    "DelegationTokenRequestNotAllowed",
    "DelegationTokenRequestNotAllowedError",
    "DeliveryFailedError",
    "DeliveryOutcomeUnknownError",
    "DuplicateBrokerRegistrationError",
    "DuplicateResourceError",
    "DuplicateSequenceNumber",
    "DuplicateSequenceNumberError",
    "DuplicateVoterError",
    "ElectionNotNeededError",
    "EligibleLeadersNotAvailableError",
    "FeatureUpdateFailedError",
    "FencedInstanceIdError",
    "FencedLeaderEpochError",
    "FencedMemberEpochError",
    "FencedStateEpochError",
    "FetchSessionIdNotFound",
    "FetchSessionIdNotFoundError",
    "FetchSessionTopicIdError",
    "GroupAuthorizationFailedError",
    "GroupCoordinatorNotAvailableError",
    "GroupIdNotFound",
    "GroupIdNotFoundError",
    "GroupLoadInProgressError",
    "GroupMaxSizeReachedError",
    "GroupSubscribedToTopicError",
    "IllegalGenerationError",
    "IllegalOperation",
    "IllegalSaslStateError",
    "IllegalStateError",
    "IncompatibleBrokerVersion",
    "IncompatibleBrokerVersionError",
    "InconsistentClusterIdError",
    "InconsistentGroupProtocolError",
    "InconsistentTopicIdError",
    "InconsistentVoterSetError",
    "IneligibleReplicaError",
    "InvalidCommitOffsetSizeError",
    "InvalidConfigError",
    "InvalidConfigurationError",
    "InvalidFetchRequestError",
    "InvalidFetchSessionEpoch",
    "InvalidFetchSessionEpochError",
    "InvalidFetchSizeError",
    "InvalidGroupIdError",
    "InvalidMessageError",
    "InvalidPartitionsError",
    "InvalidPrincipalType",
    "InvalidPrincipalTypeError",
    "InvalidProducerEpoch",
    "InvalidProducerEpochError",
    "InvalidProducerIdMapping",
    "InvalidProducerIdMappingError",
    "InvalidRecordError",
    "InvalidRecordStateError",
    "InvalidRegistrationError",
    "InvalidRegularExpressionError",
    "InvalidReplicaAssignmentError",
    "InvalidReplicationAssignmentError",
    "InvalidReplicationFactorError",
    "InvalidRequestError",
    "InvalidRequiredAcksError",
    "InvalidSessionTimeoutError",
    "InvalidShareSessionEpochError",
    "InvalidTimestampError",
    "InvalidTopicError",
    "InvalidTransactionTimeout",
    "InvalidTransactionTimeoutError",
    "InvalidTxnState",
    "InvalidTxnStateError",
    "InvalidUpdateVersionError",
    "InvalidVoterKeyError",
    "KafkaConfigurationError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaProtocolError",
    "KafkaStorageError",
    "KafkaTimeoutError",
    "LeaderNotAvailableError",
    "ListenerNotFound",
    "ListenerNotFoundError",
    "LogDirNotFound",
    "LogDirNotFoundError",
    "MemberIdRequired",
    "MemberIdRequiredError",
    "MessageSizeTooLargeError",
    "MessageTooLargeError",
    "MismatchedEndpointTypeError",
    "NetworkError",
    "NewLeaderElectedError",
    "NoReassignmentInProgressError",
    "NonEmptyGroup",
    "NonEmptyGroupError",
    "NotControllerError",
    "NotCoordinatorError",
    "NotCoordinatorForGroupError",
    "NotEnoughReplicasAfterAppendError",
    "NotEnoughReplicasError",
    "NotLeaderForPartitionError",
    "NotLeaderOrFollowerError",
    "OffsetMetadataTooLargeError",
    "OffsetMovedToTieredStorageError",
    "OffsetNotAvailableError",
    "OffsetOutOfRangeError",
    "OperationNotAttempted",
    "OperationNotAttemptedError",
    "OutOfOrderSequenceNumber",
    "OutOfOrderSequenceNumberError",
    "PartitionAbortedError",
    "PolicyViolationError",
    "PreferredLeaderNotAvailableError",
    "PrincipalDeserializationFailureError",
    "ProducerClosed",
    "ProducerClosedError",
    "ProducerFenced",
    "ProducerFencedError",
    "ProducerNotStartedError",
    "ProtocolError",
    "ReassignmentInProgress",
    "ReassignmentInProgressError",
    "RebalanceInProgressError",
    "RecordListTooLargeError",
    "RecordTooLargeError",
    "ReplicaNotAvailableError",
    "RequestEncodingError",
    "RequestTimedOutError",
    "ResourceNotFoundError",
    "SaslAuthenticationFailed",
    "SaslAuthenticationFailedError",
    "SecurityDisabled",
    "SecurityDisabledError",
    "SerializationError",
    "ShareSessionNotFoundError",
    "SnapshotNotFoundError",
    "StaleBrokerEpochError",
    "StaleControllerEpochError",
    "StaleLeaderEpochCodeError",
    "StaleMemberEpochError",
    "TelemetryTooLargeError",
    "ThrottlingQuotaExceededError",
    "TopicAlreadyExistsError",
    "TopicAuthorizationFailedError",
    "TopicDeletionDisabledError",
    "TransactionAbortRequiredError",
    "TransactionAbortableError",
    "TransactionAbortedError",
    "TransactionCoordinatorFenced",
    "TransactionCoordinatorFencedError",
    "TransactionalIdAuthorizationFailed",
    "TransactionalIdAuthorizationFailedError",
    "TransactionalIdNotFoundError",
    "UnacceptableCredentialError",
    "UnknownControllerIdError",
    "UnknownError",
    "UnknownLeaderEpochError",
    "UnknownMemberIdError",
    "UnknownProducerId",
    "UnknownProducerIdError",
    "UnknownServerError",
    "UnknownSubscriptionIdError",
    "UnknownTopicIdError",
    "UnknownTopicOrPartitionError",
    "UnreleasedInstanceIdError",
    "UnstableOffsetCommitError",
    "UnsupportedAssignorError",
    "UnsupportedCodecError",
    "UnsupportedCompressionTypeError",
    "UnsupportedEndpointTypeError",
    "UnsupportedForMessageFormatError",
    "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
    "VoterNotFoundError",
    "WrongEventLoopError",
    "error_from_response",
    "for_code",
]


class KafkaError(Exception):
    """Base class of every aiokafka_lite exception."""

    retriable: ClassVar[bool] = False
    """The same request may succeed if sent again."""
    invalid_metadata: ClassVar[bool] = False
    """The client should refresh its metadata before retrying."""


# -- client-side errors ------------------------------------------------------------------


class KafkaTimeoutError(KafkaError):
    """An operation ran out of time (a request, ``max_block_ms``, ``delivery_timeout_ms``)."""

    retriable = True


class KafkaConnectionError(KafkaError):
    """A connection to a broker failed or was cut."""

    retriable = True
    invalid_metadata = True


class ProtocolError(KafkaError):
    """The broker's bytes could not be parsed, or the answer does not fit the request."""

    retriable = True


class IllegalStateError(KafkaError):
    """The producer cannot do this in its current state."""


class ProducerNotStartedError(IllegalStateError):
    """The producer was used before ``start()``."""


class WrongEventLoopError(IllegalStateError, RuntimeError):
    """The producer was used from an event loop other than the one that started it.

    Its connections, timers and futures belong to that loop; a producer is
    started and used in one loop (e.g. in an ASGI app's lifespan), or from
    threads through :class:`aiokafka_lite.sync.Producer`.
    """


class ProducerClosedError(IllegalStateError):
    """The producer was used after ``stop()``, or stopped while a send was waiting."""


class TransactionAbortRequiredError(IllegalStateError):
    """The current transaction hit an error and can only be aborted.

    Raised by ``send()``, ``send_offsets_to_transaction()`` and
    ``commit_transaction()`` until ``abort_transaction()`` is called; the
    error that broke the transaction is its ``__cause__``.
    """


class TransactionAbortedError(KafkaError):
    """The record was not sent (or not kept): its transaction was aborted."""


class RecordTooLargeError(KafkaError):
    """Client side: a record is larger than ``max_request_size`` or ``buffer_memory``.

    Not the broker's ``MESSAGE_TOO_LARGE`` answer, which is :class:`MessageTooLargeError`.
    """


class DeliveryOutcomeUnknownError(KafkaError):
    """The record may or may not have been written, and cannot safely be sent again.

    Its request got no answer (timeout or lost connection), and then the
    idempotent producer had to start a new epoch; under a new epoch the broker
    cannot recognise a re-sent copy, so re-sending could write it twice.
    """


class PartitionAbortedError(KafkaError):
    """Not sent: an earlier record of the same partition failed for good.

    Only with ``fail_partition_on_error=True``, which fails the records queued
    (or in flight) behind a failed one so that the partition has no gap.
    """


class DeliveryFailedError(KafkaError):
    """Some records of one ``send_many()`` call failed; the others were delivered.

    ``errors`` maps the failed records' positions in the call to their
    exceptions; ``report`` is the call's
    :class:`~aiokafka_lite.structs.DeliveryReport` (whose entry for a failed
    record raises that record's exception).
    """

    def __init__(self, topic: str, report: DeliveryReport) -> None:
        errors = report.errors
        first = min(errors)
        super().__init__(
            f"{len(errors)} of {len(report)} records for {topic!r} failed; "
            f"first (record {first}): {errors[first]!r}"
        )
        self.topic = topic
        self.report = report
        self.errors = errors


class BufferFullError(KafkaError):
    """``try_send`` found ``buffer_memory`` exhausted.

    Retriable: the same call may succeed once in-flight batches complete.
    """

    retriable = True


class SerializationError(KafkaError):
    """A key or value serializer failed."""


class IncompatibleBrokerVersionError(KafkaError):
    """The broker supports none of the versions of an API that this client speaks."""


class RequestEncodingError(KafkaError):
    """A record batch or request could not be put on the wire.

    A value does not fit its protocol field (a timestamp beyond int64, a number past
    int32), or building the request failed in another way. The message names the
    partition and the cause; the original exception is the ``__cause__``. Not
    retriable: the same bytes would fail the same way again.
    """


class AuthenticationFailedError(KafkaError):
    """SASL authentication or the TLS handshake failed; never retried.

    The message names the mechanism (or TLS) and the broker's own reason; never
    a credential. Records waiting for the broker fail with it at once instead
    of waiting out ``delivery_timeout_ms``.
    """


class ConfigError(KafkaError, ValueError):
    """A producer setting is invalid; the message names the setting."""


class UnsupportedCodecError(ConfigError):
    """``compression_type`` names a codec whose library is not installed."""


# -- broker error codes ------------------------------------------------------------------


class BrokerResponseError(KafkaError):
    """An error code returned by a broker.

    Subclasses set the class attributes ``errno`` (the code), ``name`` (the Kafka name, such
    as ``"NOT_LEADER_OR_FOLLOWER"``) and ``retriable``. Instances carry the ``topic`` and
    ``partition`` the error is about, when known, and the broker's error ``message``.
    """

    errno: ClassVar[int]
    name: ClassVar[str]

    message: str | None
    topic: str | None
    partition: int | None

    def __init__(
        self,
        message: str | None = None,
        *,
        topic: str | None = None,
        partition: int | None = None,
    ) -> None:
        if not hasattr(type(self), "errno"):
            raise TypeError(
                f"{type(self).__name__} has no error code: raise a subclass, "
                "or use error_from_response()"
            )
        message = message or None
        super().__init__(*(() if message is None else (message,)))
        self.message = message
        self.topic = topic
        self.partition = partition

    def __str__(self) -> str:
        text = f"{self.name} ({self.errno})"
        if self.topic is not None:
            text += f" for {self.topic}"
            if self.partition is not None:
                text += f"[{self.partition}]"
        elif self.partition is not None:
            text += f" for partition {self.partition}"
        if self.message:
            text += f": {self.message}"
        return text

    def __repr__(self) -> str:
        parts = [] if self.message is None else [repr(self.message)]
        if self.topic is not None:
            parts.append(f"topic={self.topic!r}")
        if self.partition is not None:
            parts.append(f"partition={self.partition!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __reduce__(self) -> str | tuple[Any, ...]:
        if _UNKNOWN_CODES.get(self.errno) is type(self):
            # Made by for_code(), so not a module attribute pickle could find by name.
            return (_unknown_code_error, (self.errno, self.message), self.__dict__)
        return super().__reduce__()


class UnknownServerError(BrokerResponseError):
    """UNKNOWN_SERVER_ERROR (-1); Java ``UnknownServerException``."""

    errno = -1
    name = "UNKNOWN_SERVER_ERROR"
    retriable = False


class OffsetOutOfRangeError(BrokerResponseError):
    """OFFSET_OUT_OF_RANGE (1); Java ``OffsetOutOfRangeException``."""

    errno = 1
    name = "OFFSET_OUT_OF_RANGE"
    retriable = False


class CorruptMessageError(BrokerResponseError):
    """CORRUPT_MESSAGE (2); Java ``CorruptRecordException``."""

    errno = 2
    name = "CORRUPT_MESSAGE"
    retriable = True


class UnknownTopicOrPartitionError(BrokerResponseError):
    """UNKNOWN_TOPIC_OR_PARTITION (3); Java ``UnknownTopicOrPartitionException``."""

    errno = 3
    name = "UNKNOWN_TOPIC_OR_PARTITION"
    retriable = True
    invalid_metadata = True


class InvalidFetchSizeError(BrokerResponseError):
    """INVALID_FETCH_SIZE (4); Java ``InvalidFetchSizeException``."""

    errno = 4
    name = "INVALID_FETCH_SIZE"
    retriable = False


class LeaderNotAvailableError(BrokerResponseError):
    """LEADER_NOT_AVAILABLE (5); Java ``LeaderNotAvailableException``."""

    errno = 5
    name = "LEADER_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class NotLeaderOrFollowerError(BrokerResponseError):
    """NOT_LEADER_OR_FOLLOWER (6); Java ``NotLeaderOrFollowerException``."""

    errno = 6
    name = "NOT_LEADER_OR_FOLLOWER"
    retriable = True
    invalid_metadata = True


class RequestTimedOutError(BrokerResponseError):
    """REQUEST_TIMED_OUT (7); Java ``TimeoutException``."""

    errno = 7
    name = "REQUEST_TIMED_OUT"
    retriable = True


class BrokerNotAvailableError(BrokerResponseError):
    """BROKER_NOT_AVAILABLE (8); Java ``BrokerNotAvailableException``."""

    errno = 8
    name = "BROKER_NOT_AVAILABLE"
    retriable = False


class ReplicaNotAvailableError(BrokerResponseError):
    """REPLICA_NOT_AVAILABLE (9); Java ``ReplicaNotAvailableException``."""

    errno = 9
    name = "REPLICA_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class MessageTooLargeError(BrokerResponseError):
    """MESSAGE_TOO_LARGE (10); Java ``RecordTooLargeException``."""

    errno = 10
    name = "MESSAGE_TOO_LARGE"
    retriable = False


class StaleControllerEpochError(BrokerResponseError):
    """STALE_CONTROLLER_EPOCH (11); Java ``ControllerMovedException``."""

    errno = 11
    name = "STALE_CONTROLLER_EPOCH"
    retriable = False


class OffsetMetadataTooLargeError(BrokerResponseError):
    """OFFSET_METADATA_TOO_LARGE (12); Java ``OffsetMetadataTooLarge``."""

    errno = 12
    name = "OFFSET_METADATA_TOO_LARGE"
    retriable = False


class NetworkError(BrokerResponseError):
    """NETWORK_EXCEPTION (13); Java ``NetworkException``."""

    errno = 13
    name = "NETWORK_EXCEPTION"
    retriable = True
    invalid_metadata = True


class CoordinatorLoadInProgressError(BrokerResponseError):
    """COORDINATOR_LOAD_IN_PROGRESS (14); Java ``CoordinatorLoadInProgressException``."""

    errno = 14
    name = "COORDINATOR_LOAD_IN_PROGRESS"
    retriable = True


class CoordinatorNotAvailableError(BrokerResponseError):
    """COORDINATOR_NOT_AVAILABLE (15); Java ``CoordinatorNotAvailableException``."""

    errno = 15
    name = "COORDINATOR_NOT_AVAILABLE"
    retriable = True


class NotCoordinatorError(BrokerResponseError):
    """NOT_COORDINATOR (16); Java ``NotCoordinatorException``."""

    errno = 16
    name = "NOT_COORDINATOR"
    retriable = True


class InvalidTopicError(BrokerResponseError):
    """INVALID_TOPIC_EXCEPTION (17); Java ``InvalidTopicException``."""

    errno = 17
    name = "INVALID_TOPIC_EXCEPTION"
    retriable = False


class RecordListTooLargeError(BrokerResponseError):
    """RECORD_LIST_TOO_LARGE (18); Java ``RecordBatchTooLargeException``."""

    errno = 18
    name = "RECORD_LIST_TOO_LARGE"
    retriable = False


class NotEnoughReplicasError(BrokerResponseError):
    """NOT_ENOUGH_REPLICAS (19); Java ``NotEnoughReplicasException``."""

    errno = 19
    name = "NOT_ENOUGH_REPLICAS"
    retriable = True


class NotEnoughReplicasAfterAppendError(BrokerResponseError):
    """NOT_ENOUGH_REPLICAS_AFTER_APPEND (20); Java ``NotEnoughReplicasAfterAppendException``."""

    errno = 20
    name = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    retriable = True


class InvalidRequiredAcksError(BrokerResponseError):
    """INVALID_REQUIRED_ACKS (21); Java ``InvalidRequiredAcksException``."""

    errno = 21
    name = "INVALID_REQUIRED_ACKS"
    retriable = False


class IllegalGenerationError(BrokerResponseError):
    """ILLEGAL_GENERATION (22); Java ``IllegalGenerationException``."""

    errno = 22
    name = "ILLEGAL_GENERATION"
    retriable = False


class InconsistentGroupProtocolError(BrokerResponseError):
    """INCONSISTENT_GROUP_PROTOCOL (23); Java ``InconsistentGroupProtocolException``."""

    errno = 23
    name = "INCONSISTENT_GROUP_PROTOCOL"
    retriable = False


class InvalidGroupIdError(BrokerResponseError):
    """INVALID_GROUP_ID (24); Java ``InvalidGroupIdException``."""

    errno = 24
    name = "INVALID_GROUP_ID"
    retriable = False


class UnknownMemberIdError(BrokerResponseError):
    """UNKNOWN_MEMBER_ID (25); Java ``UnknownMemberIdException``."""

    errno = 25
    name = "UNKNOWN_MEMBER_ID"
    retriable = False


class InvalidSessionTimeoutError(BrokerResponseError):
    """INVALID_SESSION_TIMEOUT (26); Java ``InvalidSessionTimeoutException``."""

    errno = 26
    name = "INVALID_SESSION_TIMEOUT"
    retriable = False


class RebalanceInProgressError(BrokerResponseError):
    """REBALANCE_IN_PROGRESS (27); Java ``RebalanceInProgressException``."""

    errno = 27
    name = "REBALANCE_IN_PROGRESS"
    retriable = False


class InvalidCommitOffsetSizeError(BrokerResponseError):
    """INVALID_COMMIT_OFFSET_SIZE (28); Java ``InvalidCommitOffsetSizeException``."""

    errno = 28
    name = "INVALID_COMMIT_OFFSET_SIZE"
    retriable = False


class TopicAuthorizationFailedError(BrokerResponseError):
    """TOPIC_AUTHORIZATION_FAILED (29); Java ``TopicAuthorizationException``."""

    errno = 29
    name = "TOPIC_AUTHORIZATION_FAILED"
    retriable = False


class GroupAuthorizationFailedError(BrokerResponseError):
    """GROUP_AUTHORIZATION_FAILED (30); Java ``GroupAuthorizationException``."""

    errno = 30
    name = "GROUP_AUTHORIZATION_FAILED"
    retriable = False


class ClusterAuthorizationFailedError(BrokerResponseError):
    """CLUSTER_AUTHORIZATION_FAILED (31); Java ``ClusterAuthorizationException``."""

    errno = 31
    name = "CLUSTER_AUTHORIZATION_FAILED"
    retriable = False


class InvalidTimestampError(BrokerResponseError):
    """INVALID_TIMESTAMP (32); Java ``InvalidTimestampException``."""

    errno = 32
    name = "INVALID_TIMESTAMP"
    retriable = False


class UnsupportedSaslMechanismError(BrokerResponseError):
    """UNSUPPORTED_SASL_MECHANISM (33); Java ``UnsupportedSaslMechanismException``."""

    errno = 33
    name = "UNSUPPORTED_SASL_MECHANISM"
    retriable = False


class IllegalSaslStateError(BrokerResponseError):
    """ILLEGAL_SASL_STATE (34); Java ``IllegalSaslStateException``."""

    errno = 34
    name = "ILLEGAL_SASL_STATE"
    retriable = False


class UnsupportedVersionError(BrokerResponseError):
    """UNSUPPORTED_VERSION (35); Java ``UnsupportedVersionException``."""

    errno = 35
    name = "UNSUPPORTED_VERSION"
    retriable = False


class TopicAlreadyExistsError(BrokerResponseError):
    """TOPIC_ALREADY_EXISTS (36); Java ``TopicExistsException``."""

    errno = 36
    name = "TOPIC_ALREADY_EXISTS"
    retriable = False


class InvalidPartitionsError(BrokerResponseError):
    """INVALID_PARTITIONS (37); Java ``InvalidPartitionsException``."""

    errno = 37
    name = "INVALID_PARTITIONS"
    retriable = False


class InvalidReplicationFactorError(BrokerResponseError):
    """INVALID_REPLICATION_FACTOR (38); Java ``InvalidReplicationFactorException``."""

    errno = 38
    name = "INVALID_REPLICATION_FACTOR"
    retriable = False


class InvalidReplicaAssignmentError(BrokerResponseError):
    """INVALID_REPLICA_ASSIGNMENT (39); Java ``InvalidReplicaAssignmentException``."""

    errno = 39
    name = "INVALID_REPLICA_ASSIGNMENT"
    retriable = False


class InvalidConfigError(BrokerResponseError):
    """INVALID_CONFIG (40); Java ``InvalidConfigurationException``."""

    errno = 40
    name = "INVALID_CONFIG"
    retriable = False


class NotControllerError(BrokerResponseError):
    """NOT_CONTROLLER (41); Java ``NotControllerException``."""

    errno = 41
    name = "NOT_CONTROLLER"
    retriable = True


class InvalidRequestError(BrokerResponseError):
    """INVALID_REQUEST (42); Java ``InvalidRequestException``."""

    errno = 42
    name = "INVALID_REQUEST"
    retriable = False


class UnsupportedForMessageFormatError(BrokerResponseError):
    """UNSUPPORTED_FOR_MESSAGE_FORMAT (43); Java ``UnsupportedForMessageFormatException``."""

    errno = 43
    name = "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    retriable = False


class PolicyViolationError(BrokerResponseError):
    """POLICY_VIOLATION (44); Java ``PolicyViolationException``."""

    errno = 44
    name = "POLICY_VIOLATION"
    retriable = False


class OutOfOrderSequenceNumberError(BrokerResponseError):
    """OUT_OF_ORDER_SEQUENCE_NUMBER (45); Java ``OutOfOrderSequenceException``."""

    errno = 45
    name = "OUT_OF_ORDER_SEQUENCE_NUMBER"
    retriable = False


class DuplicateSequenceNumberError(BrokerResponseError):
    """DUPLICATE_SEQUENCE_NUMBER (46); Java ``DuplicateSequenceException``."""

    errno = 46
    name = "DUPLICATE_SEQUENCE_NUMBER"
    retriable = False


class InvalidProducerEpochError(BrokerResponseError):
    """INVALID_PRODUCER_EPOCH (47); Java ``InvalidProducerEpochException``."""

    errno = 47
    name = "INVALID_PRODUCER_EPOCH"
    retriable = False


class InvalidTxnStateError(BrokerResponseError):
    """INVALID_TXN_STATE (48); Java ``InvalidTxnStateException``."""

    errno = 48
    name = "INVALID_TXN_STATE"
    retriable = False


class InvalidProducerIdMappingError(BrokerResponseError):
    """INVALID_PRODUCER_ID_MAPPING (49); Java ``InvalidPidMappingException``."""

    errno = 49
    name = "INVALID_PRODUCER_ID_MAPPING"
    retriable = False


class InvalidTransactionTimeoutError(BrokerResponseError):
    """INVALID_TRANSACTION_TIMEOUT (50); Java ``InvalidTxnTimeoutException``."""

    errno = 50
    name = "INVALID_TRANSACTION_TIMEOUT"
    retriable = False


class ConcurrentTransactionsError(BrokerResponseError):
    """CONCURRENT_TRANSACTIONS (51); Java ``ConcurrentTransactionsException``."""

    errno = 51
    name = "CONCURRENT_TRANSACTIONS"
    retriable = True


class TransactionCoordinatorFencedError(BrokerResponseError):
    """TRANSACTION_COORDINATOR_FENCED (52); Java ``TransactionCoordinatorFencedException``."""

    errno = 52
    name = "TRANSACTION_COORDINATOR_FENCED"
    retriable = False


class TransactionalIdAuthorizationFailedError(BrokerResponseError):
    """TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).

    Java ``TransactionalIdAuthorizationException``.
    """

    errno = 53
    name = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    retriable = False


class SecurityDisabledError(BrokerResponseError):
    """SECURITY_DISABLED (54); Java ``SecurityDisabledException``."""

    errno = 54
    name = "SECURITY_DISABLED"
    retriable = False


class OperationNotAttemptedError(BrokerResponseError):
    """OPERATION_NOT_ATTEMPTED (55); Java ``OperationNotAttemptedException``."""

    errno = 55
    name = "OPERATION_NOT_ATTEMPTED"
    retriable = False


class KafkaStorageError(BrokerResponseError):
    """KAFKA_STORAGE_ERROR (56); Java ``KafkaStorageException``."""

    errno = 56
    name = "KAFKA_STORAGE_ERROR"
    retriable = True
    invalid_metadata = True


class LogDirNotFoundError(BrokerResponseError):
    """LOG_DIR_NOT_FOUND (57); Java ``LogDirNotFoundException``."""

    errno = 57
    name = "LOG_DIR_NOT_FOUND"
    retriable = False


class SaslAuthenticationFailedError(BrokerResponseError):
    """SASL_AUTHENTICATION_FAILED (58); Java ``SaslAuthenticationException``."""

    errno = 58
    name = "SASL_AUTHENTICATION_FAILED"
    retriable = False


class UnknownProducerIdError(BrokerResponseError):
    """UNKNOWN_PRODUCER_ID (59); Java ``UnknownProducerIdException``."""

    errno = 59
    name = "UNKNOWN_PRODUCER_ID"
    retriable = False


class ReassignmentInProgressError(BrokerResponseError):
    """REASSIGNMENT_IN_PROGRESS (60); Java ``ReassignmentInProgressException``."""

    errno = 60
    name = "REASSIGNMENT_IN_PROGRESS"
    retriable = False


class DelegationTokenAuthDisabledError(BrokerResponseError):
    """DELEGATION_TOKEN_AUTH_DISABLED (61); Java ``DelegationTokenDisabledException``."""

    errno = 61
    name = "DELEGATION_TOKEN_AUTH_DISABLED"
    retriable = False


class DelegationTokenNotFoundError(BrokerResponseError):
    """DELEGATION_TOKEN_NOT_FOUND (62); Java ``DelegationTokenNotFoundException``."""

    errno = 62
    name = "DELEGATION_TOKEN_NOT_FOUND"
    retriable = False


class DelegationTokenOwnerMismatchError(BrokerResponseError):
    """DELEGATION_TOKEN_OWNER_MISMATCH (63); Java ``DelegationTokenOwnerMismatchException``."""

    errno = 63
    name = "DELEGATION_TOKEN_OWNER_MISMATCH"
    retriable = False


class DelegationTokenRequestNotAllowedError(BrokerResponseError):
    """DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (64); Java ``UnsupportedByAuthenticationException``."""

    errno = 64
    name = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
    retriable = False


class DelegationTokenAuthorizationFailedError(BrokerResponseError):
    """DELEGATION_TOKEN_AUTHORIZATION_FAILED (65).

    Java ``DelegationTokenAuthorizationException``.
    """

    errno = 65
    name = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"
    retriable = False


class DelegationTokenExpiredError(BrokerResponseError):
    """DELEGATION_TOKEN_EXPIRED (66); Java ``DelegationTokenExpiredException``."""

    errno = 66
    name = "DELEGATION_TOKEN_EXPIRED"
    retriable = False


class InvalidPrincipalTypeError(BrokerResponseError):
    """INVALID_PRINCIPAL_TYPE (67); Java ``InvalidPrincipalTypeException``."""

    errno = 67
    name = "INVALID_PRINCIPAL_TYPE"
    retriable = False


class NonEmptyGroupError(BrokerResponseError):
    """NON_EMPTY_GROUP (68); Java ``GroupNotEmptyException``."""

    errno = 68
    name = "NON_EMPTY_GROUP"
    retriable = False


class GroupIdNotFoundError(BrokerResponseError):
    """GROUP_ID_NOT_FOUND (69); Java ``GroupIdNotFoundException``."""

    errno = 69
    name = "GROUP_ID_NOT_FOUND"
    retriable = False


class FetchSessionIdNotFoundError(BrokerResponseError):
    """FETCH_SESSION_ID_NOT_FOUND (70); Java ``FetchSessionIdNotFoundException``."""

    errno = 70
    name = "FETCH_SESSION_ID_NOT_FOUND"
    retriable = True


class InvalidFetchSessionEpochError(BrokerResponseError):
    """INVALID_FETCH_SESSION_EPOCH (71); Java ``InvalidFetchSessionEpochException``."""

    errno = 71
    name = "INVALID_FETCH_SESSION_EPOCH"
    retriable = True


class ListenerNotFoundError(BrokerResponseError):
    """LISTENER_NOT_FOUND (72); Java ``ListenerNotFoundException``."""

    errno = 72
    name = "LISTENER_NOT_FOUND"
    retriable = True
    invalid_metadata = True


class TopicDeletionDisabledError(BrokerResponseError):
    """TOPIC_DELETION_DISABLED (73); Java ``TopicDeletionDisabledException``."""

    errno = 73
    name = "TOPIC_DELETION_DISABLED"
    retriable = False


class FencedLeaderEpochError(BrokerResponseError):
    """FENCED_LEADER_EPOCH (74); Java ``FencedLeaderEpochException``."""

    errno = 74
    name = "FENCED_LEADER_EPOCH"
    retriable = True
    invalid_metadata = True


class UnknownLeaderEpochError(BrokerResponseError):
    """UNKNOWN_LEADER_EPOCH (75); Java ``UnknownLeaderEpochException``."""

    errno = 75
    name = "UNKNOWN_LEADER_EPOCH"
    retriable = True


class UnsupportedCompressionTypeError(BrokerResponseError):
    """UNSUPPORTED_COMPRESSION_TYPE (76); Java ``UnsupportedCompressionTypeException``."""

    errno = 76
    name = "UNSUPPORTED_COMPRESSION_TYPE"
    retriable = False


class StaleBrokerEpochError(BrokerResponseError):
    """STALE_BROKER_EPOCH (77); Java ``StaleBrokerEpochException``."""

    errno = 77
    name = "STALE_BROKER_EPOCH"
    retriable = False


class OffsetNotAvailableError(BrokerResponseError):
    """OFFSET_NOT_AVAILABLE (78); Java ``OffsetNotAvailableException``."""

    errno = 78
    name = "OFFSET_NOT_AVAILABLE"
    retriable = True


class MemberIdRequiredError(BrokerResponseError):
    """MEMBER_ID_REQUIRED (79); Java ``MemberIdRequiredException``."""

    errno = 79
    name = "MEMBER_ID_REQUIRED"
    retriable = False


class PreferredLeaderNotAvailableError(BrokerResponseError):
    """PREFERRED_LEADER_NOT_AVAILABLE (80); Java ``PreferredLeaderNotAvailableException``."""

    errno = 80
    name = "PREFERRED_LEADER_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class GroupMaxSizeReachedError(BrokerResponseError):
    """GROUP_MAX_SIZE_REACHED (81); Java ``GroupMaxSizeReachedException``."""

    errno = 81
    name = "GROUP_MAX_SIZE_REACHED"
    retriable = False


class FencedInstanceIdError(BrokerResponseError):
    """FENCED_INSTANCE_ID (82); Java ``FencedInstanceIdException``."""

    errno = 82
    name = "FENCED_INSTANCE_ID"
    retriable = False


class EligibleLeadersNotAvailableError(BrokerResponseError):
    """ELIGIBLE_LEADERS_NOT_AVAILABLE (83); Java ``EligibleLeadersNotAvailableException``."""

    errno = 83
    name = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class ElectionNotNeededError(BrokerResponseError):
    """ELECTION_NOT_NEEDED (84); Java ``ElectionNotNeededException``."""

    errno = 84
    name = "ELECTION_NOT_NEEDED"
    retriable = True


class NoReassignmentInProgressError(BrokerResponseError):
    """NO_REASSIGNMENT_IN_PROGRESS (85); Java ``NoReassignmentInProgressException``."""

    errno = 85
    name = "NO_REASSIGNMENT_IN_PROGRESS"
    retriable = False


class GroupSubscribedToTopicError(BrokerResponseError):
    """GROUP_SUBSCRIBED_TO_TOPIC (86); Java ``GroupSubscribedToTopicException``."""

    errno = 86
    name = "GROUP_SUBSCRIBED_TO_TOPIC"
    retriable = False


class InvalidRecordError(BrokerResponseError):
    """INVALID_RECORD (87); Java ``InvalidRecordException``."""

    errno = 87
    name = "INVALID_RECORD"
    retriable = False


class UnstableOffsetCommitError(BrokerResponseError):
    """UNSTABLE_OFFSET_COMMIT (88); Java ``UnstableOffsetCommitException``."""

    errno = 88
    name = "UNSTABLE_OFFSET_COMMIT"
    retriable = True


class ThrottlingQuotaExceededError(BrokerResponseError):
    """THROTTLING_QUOTA_EXCEEDED (89); Java ``ThrottlingQuotaExceededException``."""

    errno = 89
    name = "THROTTLING_QUOTA_EXCEEDED"
    retriable = True


class ProducerFencedError(BrokerResponseError):
    """PRODUCER_FENCED (90); Java ``ProducerFencedException``."""

    errno = 90
    name = "PRODUCER_FENCED"
    retriable = False


class ResourceNotFoundError(BrokerResponseError):
    """RESOURCE_NOT_FOUND (91); Java ``ResourceNotFoundException``."""

    errno = 91
    name = "RESOURCE_NOT_FOUND"
    retriable = False


class DuplicateResourceError(BrokerResponseError):
    """DUPLICATE_RESOURCE (92); Java ``DuplicateResourceException``."""

    errno = 92
    name = "DUPLICATE_RESOURCE"
    retriable = False


class UnacceptableCredentialError(BrokerResponseError):
    """UNACCEPTABLE_CREDENTIAL (93); Java ``UnacceptableCredentialException``."""

    errno = 93
    name = "UNACCEPTABLE_CREDENTIAL"
    retriable = False


class InconsistentVoterSetError(BrokerResponseError):
    """INCONSISTENT_VOTER_SET (94); Java ``InconsistentVoterSetException``."""

    errno = 94
    name = "INCONSISTENT_VOTER_SET"
    retriable = False


class InvalidUpdateVersionError(BrokerResponseError):
    """INVALID_UPDATE_VERSION (95); Java ``InvalidUpdateVersionException``."""

    errno = 95
    name = "INVALID_UPDATE_VERSION"
    retriable = False


class FeatureUpdateFailedError(BrokerResponseError):
    """FEATURE_UPDATE_FAILED (96); Java ``FeatureUpdateFailedException``."""

    errno = 96
    name = "FEATURE_UPDATE_FAILED"
    retriable = False


class PrincipalDeserializationFailureError(BrokerResponseError):
    """PRINCIPAL_DESERIALIZATION_FAILURE (97); Java ``PrincipalDeserializationException``."""

    errno = 97
    name = "PRINCIPAL_DESERIALIZATION_FAILURE"
    retriable = False


class SnapshotNotFoundError(BrokerResponseError):
    """SNAPSHOT_NOT_FOUND (98); Java ``SnapshotNotFoundException``."""

    errno = 98
    name = "SNAPSHOT_NOT_FOUND"
    retriable = False


class UnknownTopicIdError(BrokerResponseError):
    """UNKNOWN_TOPIC_ID (100); Java ``UnknownTopicIdException``."""

    errno = 100
    name = "UNKNOWN_TOPIC_ID"
    retriable = True
    invalid_metadata = True


class DuplicateBrokerRegistrationError(BrokerResponseError):
    """DUPLICATE_BROKER_REGISTRATION (101); Java ``DuplicateBrokerRegistrationException``."""

    errno = 101
    name = "DUPLICATE_BROKER_REGISTRATION"
    retriable = False


class BrokerIdNotRegisteredError(BrokerResponseError):
    """BROKER_ID_NOT_REGISTERED (102); Java ``BrokerIdNotRegisteredException``."""

    errno = 102
    name = "BROKER_ID_NOT_REGISTERED"
    retriable = False


class InconsistentTopicIdError(BrokerResponseError):
    """INCONSISTENT_TOPIC_ID (103); Java ``InconsistentTopicIdException``."""

    errno = 103
    name = "INCONSISTENT_TOPIC_ID"
    retriable = True
    invalid_metadata = True


class InconsistentClusterIdError(BrokerResponseError):
    """INCONSISTENT_CLUSTER_ID (104); Java ``InconsistentClusterIdException``."""

    errno = 104
    name = "INCONSISTENT_CLUSTER_ID"
    retriable = False


class TransactionalIdNotFoundError(BrokerResponseError):
    """TRANSACTIONAL_ID_NOT_FOUND (105); Java ``TransactionalIdNotFoundException``."""

    errno = 105
    name = "TRANSACTIONAL_ID_NOT_FOUND"
    retriable = False


class FetchSessionTopicIdError(BrokerResponseError):
    """FETCH_SESSION_TOPIC_ID_ERROR (106); Java ``FetchSessionTopicIdException``."""

    errno = 106
    name = "FETCH_SESSION_TOPIC_ID_ERROR"
    retriable = True


class IneligibleReplicaError(BrokerResponseError):
    """INELIGIBLE_REPLICA (107); Java ``IneligibleReplicaException``."""

    errno = 107
    name = "INELIGIBLE_REPLICA"
    retriable = False


class NewLeaderElectedError(BrokerResponseError):
    """NEW_LEADER_ELECTED (108); Java ``NewLeaderElectedException``."""

    errno = 108
    name = "NEW_LEADER_ELECTED"
    retriable = False


class OffsetMovedToTieredStorageError(BrokerResponseError):
    """OFFSET_MOVED_TO_TIERED_STORAGE (109); Java ``OffsetMovedToTieredStorageException``."""

    errno = 109
    name = "OFFSET_MOVED_TO_TIERED_STORAGE"
    retriable = False


class FencedMemberEpochError(BrokerResponseError):
    """FENCED_MEMBER_EPOCH (110); Java ``FencedMemberEpochException``."""

    errno = 110
    name = "FENCED_MEMBER_EPOCH"
    retriable = False


class UnreleasedInstanceIdError(BrokerResponseError):
    """UNRELEASED_INSTANCE_ID (111); Java ``UnreleasedInstanceIdException``."""

    errno = 111
    name = "UNRELEASED_INSTANCE_ID"
    retriable = False


class UnsupportedAssignorError(BrokerResponseError):
    """UNSUPPORTED_ASSIGNOR (112); Java ``UnsupportedAssignorException``."""

    errno = 112
    name = "UNSUPPORTED_ASSIGNOR"
    retriable = False


class StaleMemberEpochError(BrokerResponseError):
    """STALE_MEMBER_EPOCH (113); Java ``StaleMemberEpochException``."""

    errno = 113
    name = "STALE_MEMBER_EPOCH"
    retriable = False


class MismatchedEndpointTypeError(BrokerResponseError):
    """MISMATCHED_ENDPOINT_TYPE (114); Java ``MismatchedEndpointTypeException``."""

    errno = 114
    name = "MISMATCHED_ENDPOINT_TYPE"
    retriable = False


class UnsupportedEndpointTypeError(BrokerResponseError):
    """UNSUPPORTED_ENDPOINT_TYPE (115); Java ``UnsupportedEndpointTypeException``."""

    errno = 115
    name = "UNSUPPORTED_ENDPOINT_TYPE"
    retriable = False


class UnknownControllerIdError(BrokerResponseError):
    """UNKNOWN_CONTROLLER_ID (116); Java ``UnknownControllerIdException``."""

    errno = 116
    name = "UNKNOWN_CONTROLLER_ID"
    retriable = False


class UnknownSubscriptionIdError(BrokerResponseError):
    """UNKNOWN_SUBSCRIPTION_ID (117); Java ``UnknownSubscriptionIdException``."""

    errno = 117
    name = "UNKNOWN_SUBSCRIPTION_ID"
    retriable = False


class TelemetryTooLargeError(BrokerResponseError):
    """TELEMETRY_TOO_LARGE (118); Java ``TelemetryTooLargeException``."""

    errno = 118
    name = "TELEMETRY_TOO_LARGE"
    retriable = False


class InvalidRegistrationError(BrokerResponseError):
    """INVALID_REGISTRATION (119); Java ``InvalidRegistrationException``."""

    errno = 119
    name = "INVALID_REGISTRATION"
    retriable = False


class TransactionAbortableError(BrokerResponseError):
    """TRANSACTION_ABORTABLE (120); Java ``TransactionAbortableException``."""

    errno = 120
    name = "TRANSACTION_ABORTABLE"
    retriable = False


class InvalidRecordStateError(BrokerResponseError):
    """INVALID_RECORD_STATE (121); Java ``InvalidRecordStateException``."""

    errno = 121
    name = "INVALID_RECORD_STATE"
    retriable = False


class ShareSessionNotFoundError(BrokerResponseError):
    """SHARE_SESSION_NOT_FOUND (122); Java ``ShareSessionNotFoundException``."""

    errno = 122
    name = "SHARE_SESSION_NOT_FOUND"
    retriable = True


class InvalidShareSessionEpochError(BrokerResponseError):
    """INVALID_SHARE_SESSION_EPOCH (123); Java ``InvalidShareSessionEpochException``."""

    errno = 123
    name = "INVALID_SHARE_SESSION_EPOCH"
    retriable = True


class FencedStateEpochError(BrokerResponseError):
    """FENCED_STATE_EPOCH (124); Java ``FencedStateEpochException``."""

    errno = 124
    name = "FENCED_STATE_EPOCH"
    retriable = False


class InvalidVoterKeyError(BrokerResponseError):
    """INVALID_VOTER_KEY (125); Java ``InvalidVoterKeyException``."""

    errno = 125
    name = "INVALID_VOTER_KEY"
    retriable = False


class DuplicateVoterError(BrokerResponseError):
    """DUPLICATE_VOTER (126); Java ``DuplicateVoterException``."""

    errno = 126
    name = "DUPLICATE_VOTER"
    retriable = False


class VoterNotFoundError(BrokerResponseError):
    """VOTER_NOT_FOUND (127); Java ``VoterNotFoundException``."""

    errno = 127
    name = "VOTER_NOT_FOUND"
    retriable = False


class InvalidRegularExpressionError(BrokerResponseError):
    """INVALID_REGULAR_EXPRESSION (128); Java ``InvalidRegularExpression``."""

    errno = 128
    name = "INVALID_REGULAR_EXPRESSION"
    retriable = False


_BROKER_ERRORS: tuple[type[BrokerResponseError], ...] = (
    UnknownServerError,
    OffsetOutOfRangeError,
    CorruptMessageError,
    UnknownTopicOrPartitionError,
    InvalidFetchSizeError,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    BrokerNotAvailableError,
    ReplicaNotAvailableError,
    MessageTooLargeError,
    StaleControllerEpochError,
    OffsetMetadataTooLargeError,
    NetworkError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    InvalidTopicError,
    RecordListTooLargeError,
    NotEnoughReplicasError,
    NotEnoughReplicasAfterAppendError,
    InvalidRequiredAcksError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    UnknownMemberIdError,
    InvalidSessionTimeoutError,
    RebalanceInProgressError,
    InvalidCommitOffsetSizeError,
    TopicAuthorizationFailedError,
    GroupAuthorizationFailedError,
    ClusterAuthorizationFailedError,
    InvalidTimestampError,
    UnsupportedSaslMechanismError,
    IllegalSaslStateError,
    UnsupportedVersionError,
    TopicAlreadyExistsError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidReplicaAssignmentError,
    InvalidConfigError,
    NotControllerError,
    InvalidRequestError,
    UnsupportedForMessageFormatError,
    PolicyViolationError,
    OutOfOrderSequenceNumberError,
    DuplicateSequenceNumberError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    InvalidProducerIdMappingError,
    InvalidTransactionTimeoutError,
    ConcurrentTransactionsError,
    TransactionCoordinatorFencedError,
    TransactionalIdAuthorizationFailedError,
    SecurityDisabledError,
    OperationNotAttemptedError,
    KafkaStorageError,
    LogDirNotFoundError,
    SaslAuthenticationFailedError,
    UnknownProducerIdError,
    ReassignmentInProgressError,
    DelegationTokenAuthDisabledError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
    DelegationTokenAuthorizationFailedError,
    DelegationTokenExpiredError,
    InvalidPrincipalTypeError,
    NonEmptyGroupError,
    GroupIdNotFoundError,
    FetchSessionIdNotFoundError,
    InvalidFetchSessionEpochError,
    ListenerNotFoundError,
    TopicDeletionDisabledError,
    FencedLeaderEpochError,
    UnknownLeaderEpochError,
    UnsupportedCompressionTypeError,
    StaleBrokerEpochError,
    OffsetNotAvailableError,
    MemberIdRequiredError,
    PreferredLeaderNotAvailableError,
    GroupMaxSizeReachedError,
    FencedInstanceIdError,
    EligibleLeadersNotAvailableError,
    ElectionNotNeededError,
    NoReassignmentInProgressError,
    GroupSubscribedToTopicError,
    InvalidRecordError,
    UnstableOffsetCommitError,
    ThrottlingQuotaExceededError,
    ProducerFencedError,
    ResourceNotFoundError,
    DuplicateResourceError,
    UnacceptableCredentialError,
    InconsistentVoterSetError,
    InvalidUpdateVersionError,
    FeatureUpdateFailedError,
    PrincipalDeserializationFailureError,
    SnapshotNotFoundError,
    UnknownTopicIdError,
    DuplicateBrokerRegistrationError,
    BrokerIdNotRegisteredError,
    InconsistentTopicIdError,
    InconsistentClusterIdError,
    TransactionalIdNotFoundError,
    FetchSessionTopicIdError,
    IneligibleReplicaError,
    NewLeaderElectedError,
    OffsetMovedToTieredStorageError,
    FencedMemberEpochError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    StaleMemberEpochError,
    MismatchedEndpointTypeError,
    UnsupportedEndpointTypeError,
    UnknownControllerIdError,
    UnknownSubscriptionIdError,
    TelemetryTooLargeError,
    InvalidRegistrationError,
    TransactionAbortableError,
    InvalidRecordStateError,
    ShareSessionNotFoundError,
    InvalidShareSessionEpochError,
    FencedStateEpochError,
    InvalidVoterKeyError,
    DuplicateVoterError,
    VoterNotFoundError,
    InvalidRegularExpressionError,
)


_BY_CODE: dict[int, type[BrokerResponseError]] = {cls.errno: cls for cls in _BROKER_ERRORS}
_UNKNOWN_CODES: dict[int, type[BrokerResponseError]] = {}


def for_code(code: int) -> type[BrokerResponseError]:
    """The exception class for broker error ``code``.

    A code missing from the table gets a class made on first use and cached: a subclass of
    :class:`UnknownServerError` with ``errno == code`` and ``name == "UNKNOWN_ERROR_CODE_<n>"``.
    Raises :class:`ValueError` for 0 (``NONE``), which is not an error.
    """
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    if code == 0:
        raise ValueError("error code 0 (NONE) is not an error")
    cls = _UNKNOWN_CODES.get(code)
    if cls is None:
        cls = _UNKNOWN_CODES[code] = _make_unknown_code_class(code)
    return cls


def error_from_response(
    code: int,
    *,
    topic: str | None = None,
    partition: int | None = None,
    message: str | None = None,
) -> BrokerResponseError:
    """An exception instance for broker error ``code`` about ``topic``/``partition``."""
    return for_code(code)(message, topic=topic, partition=partition)


def _make_unknown_code_class(code: int) -> type[BrokerResponseError]:
    kafka_name = f"UNKNOWN_ERROR_CODE_{code}"

    class _UnknownCodeError(UnknownServerError):
        errno = code
        name = kafka_name
        retriable = False

    label = f"UnknownErrorCode{code}Error".replace("-", "Minus")
    _UnknownCodeError.__name__ = _UnknownCodeError.__qualname__ = label
    _UnknownCodeError.__doc__ = f"{kafka_name} ({code}): a code missing from the error table."
    return _UnknownCodeError


def _unknown_code_error(code: int, message: str | None) -> BrokerResponseError:
    return for_code(code)(message)


# -- aliases -------------------------------------------------------------------------------
# aiokafka's names for the same exceptions (the same class objects), so code migrating from
# ``aiokafka.errors`` keeps importing. aiokafka raises MessageSizeTooLargeError client side
# for a record over max_request_size; aiokafka_lite raises RecordTooLargeError there.

# client side
ProducerClosed = ProducerClosedError
IllegalOperation = IllegalStateError
IncompatibleBrokerVersion = IncompatibleBrokerVersionError
KafkaConfigurationError = ConfigError
KafkaProtocolError = ProtocolError
CorruptResponseError = ProtocolError

# broker codes: aiokafka name = our class  # code
UnknownError = UnknownServerError  # -1
CorruptRecordException = CorruptMessageError  # 2
InvalidMessageError = CorruptMessageError  # 2
InvalidFetchRequestError = InvalidFetchSizeError  # 4
NotLeaderForPartitionError = NotLeaderOrFollowerError  # 6
MessageSizeTooLargeError = MessageTooLargeError  # 10
StaleLeaderEpochCodeError = NetworkError  # 13
GroupLoadInProgressError = CoordinatorLoadInProgressError  # 14
GroupCoordinatorNotAvailableError = CoordinatorNotAvailableError  # 15
NotCoordinatorForGroupError = NotCoordinatorError  # 16
InvalidReplicationAssignmentError = InvalidReplicaAssignmentError  # 39
InvalidConfigurationError = InvalidConfigError  # 40
OutOfOrderSequenceNumber = OutOfOrderSequenceNumberError  # 45
DuplicateSequenceNumber = DuplicateSequenceNumberError  # 46
InvalidProducerEpoch = InvalidProducerEpochError  # 47
InvalidTxnState = InvalidTxnStateError  # 48
InvalidProducerIdMapping = InvalidProducerIdMappingError  # 49
InvalidTransactionTimeout = InvalidTransactionTimeoutError  # 50
ConcurrentTransactions = ConcurrentTransactionsError  # 51
TransactionCoordinatorFenced = TransactionCoordinatorFencedError  # 52
TransactionalIdAuthorizationFailed = TransactionalIdAuthorizationFailedError  # 53
SecurityDisabled = SecurityDisabledError  # 54
OperationNotAttempted = OperationNotAttemptedError  # 55
LogDirNotFound = LogDirNotFoundError  # 57
SaslAuthenticationFailed = SaslAuthenticationFailedError  # 58
UnknownProducerId = UnknownProducerIdError  # 59
ReassignmentInProgress = ReassignmentInProgressError  # 60
DelegationTokenAuthDisabled = DelegationTokenAuthDisabledError  # 61
DelegationTokenNotFound = DelegationTokenNotFoundError  # 62
DelegationTokenOwnerMismatch = DelegationTokenOwnerMismatchError  # 63
DelegationTokenRequestNotAllowed = DelegationTokenRequestNotAllowedError  # 64
DelegationTokenAuthorizationFailed = DelegationTokenAuthorizationFailedError  # 65
DelegationTokenExpired = DelegationTokenExpiredError  # 66
InvalidPrincipalType = InvalidPrincipalTypeError  # 67
NonEmptyGroup = NonEmptyGroupError  # 68
GroupIdNotFound = GroupIdNotFoundError  # 69
FetchSessionIdNotFound = FetchSessionIdNotFoundError  # 70
InvalidFetchSessionEpoch = InvalidFetchSessionEpochError  # 71
ListenerNotFound = ListenerNotFoundError  # 72
MemberIdRequired = MemberIdRequiredError  # 79
ProducerFenced = ProducerFencedError  # 90
