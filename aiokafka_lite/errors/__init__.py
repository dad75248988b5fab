"""Exceptions raised by aiokafka_lite.

Every exception derives from :class:`KafkaError` (a ``RuntimeError``, as aiokafka's). Broker
error codes map to one :class:`BrokerResponseError` subclass per code, declared as a table in
:mod:`aiokafka_lite.errors.codes` from the Kafka protocol's error list. Names
are the Kafka name in CamelCase with a trailing ``_ERROR``/``_EXCEPTION`` dropped and
``Error`` added: ``NOT_LEADER_OR_FOLLOWER`` is :class:`NotLeaderOrFollowerError`,
``UNKNOWN_SERVER_ERROR`` is :class:`UnknownServerError`, ``NETWORK_EXCEPTION`` is
:class:`NetworkError`.

Hierarchy::

    RuntimeError
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

Client-side :class:`RecordTooLargeError` (a record over ``max_request_size`` or
``buffer_memory``, raised by ``send()``) is a subclass of the broker's ``MESSAGE_TOO_LARGE``
(:class:`MessageTooLargeError`, aiokafka's ``MessageSizeTooLargeError``), as aiokafka raises
that class in the same place.

aiokafka names: every ``aiokafka.errors`` name exists here. Names for the same exceptions are
aliases (the same class objects), so ``from aiokafka_lite.errors import
NotLeaderForPartitionError`` works when migrating. When aiokafka is installed, each class
also derives from aiokafka's class of the same meaning, so ``except
aiokafka.errors.KafkaTimeoutError`` in code written for aiokafka catches what aiokafka_lite
raises (see :mod:`aiokafka_lite.errors.base`).
"""

from __future__ import annotations

from .base import *
from .base import __all__ as _base_names
from .codes import *
from .codes import __all__ as _code_names

# -- aliases -------------------------------------------------------------------------------
# aiokafka's names for the same exceptions (the same class objects), so code migrating from
# ``aiokafka.errors`` keeps importing.

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

__all__ = sorted(
    [
        *_base_names,
        *_code_names,
        "ProducerClosed",
        "IllegalOperation",
        "IncompatibleBrokerVersion",
        "KafkaConfigurationError",
        "KafkaProtocolError",
        "CorruptResponseError",
        "UnknownError",
        "CorruptRecordException",
        "InvalidMessageError",
        "InvalidFetchRequestError",
        "NotLeaderForPartitionError",
        "MessageSizeTooLargeError",
        "StaleLeaderEpochCodeError",
        "GroupLoadInProgressError",
        "GroupCoordinatorNotAvailableError",
        "NotCoordinatorForGroupError",
        "InvalidReplicationAssignmentError",
        "InvalidConfigurationError",
        "OutOfOrderSequenceNumber",
        "DuplicateSequenceNumber",
        "InvalidProducerEpoch",
        "InvalidTxnState",
        "InvalidProducerIdMapping",
        "InvalidTransactionTimeout",
        "ConcurrentTransactions",
        "TransactionCoordinatorFenced",
        "TransactionalIdAuthorizationFailed",
        "SecurityDisabled",
        "OperationNotAttempted",
        "LogDirNotFound",
        "SaslAuthenticationFailed",
        "UnknownProducerId",
        "ReassignmentInProgress",
        "DelegationTokenAuthDisabled",
        "DelegationTokenNotFound",
        "DelegationTokenOwnerMismatch",
        "DelegationTokenRequestNotAllowed",
        "DelegationTokenAuthorizationFailed",
        "DelegationTokenExpired",
        "InvalidPrincipalType",
        "NonEmptyGroup",
        "GroupIdNotFound",
        "FetchSessionIdNotFound",
        "InvalidFetchSessionEpoch",
        "ListenerNotFound",
        "MemberIdRequired",
        "ProducerFenced",
    ]
)
