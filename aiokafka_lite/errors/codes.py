"""One :class:`BrokerResponseError` subclass per broker error code, declared as a table.

The table is Kafka's error-code list (``tests/data/error-codes.tsv`` holds the copy
the tests check it against): code, Kafka name, flags (``R`` retriable, i.e. Java's
``RetriableException``; ``M`` invalid metadata, i.e. Java's
``InvalidMetadataException``: refresh metadata before retrying), and the Java
exception. Each row becomes a class named after the Kafka name in CamelCase, a
trailing ``_ERROR``/``_EXCEPTION`` dropped and ``Error`` added:
``NOT_LEADER_OR_FOLLOWER`` is ``NotLeaderOrFollowerError``, ``NETWORK_EXCEPTION`` is
``NetworkError``. ``codes.pyi`` declares the same classes for type checkers.
"""

from __future__ import annotations

from .base import BrokerResponseError, KafkaError, KafkaTimeoutError

__all__ = [
    "InvalidTopicNameError",
    "RecordTooLargeError",
    "UnknownTopicTimeoutError",
    "error_from_response",
    "for_code",
]

_TABLE = """
  -1 UNKNOWN_SERVER_ERROR                  -- UnknownServerException
   1 OFFSET_OUT_OF_RANGE                   -- OffsetOutOfRangeException
   2 CORRUPT_MESSAGE                       R- CorruptRecordException
   3 UNKNOWN_TOPIC_OR_PARTITION            RM UnknownTopicOrPartitionException
   4 INVALID_FETCH_SIZE                    -- InvalidFetchSizeException
   5 LEADER_NOT_AVAILABLE                  RM LeaderNotAvailableException
   6 NOT_LEADER_OR_FOLLOWER                RM NotLeaderOrFollowerException
   7 REQUEST_TIMED_OUT                     R- TimeoutException
   8 BROKER_NOT_AVAILABLE                  -- BrokerNotAvailableException
   9 REPLICA_NOT_AVAILABLE                 RM ReplicaNotAvailableException
  10 MESSAGE_TOO_LARGE                     -- RecordTooLargeException
  11 STALE_CONTROLLER_EPOCH                -- ControllerMovedException
  12 OFFSET_METADATA_TOO_LARGE             -- OffsetMetadataTooLarge
  13 NETWORK_EXCEPTION                     RM NetworkException
  14 COORDINATOR_LOAD_IN_PROGRESS          R- CoordinatorLoadInProgressException
  15 COORDINATOR_NOT_AVAILABLE             R- CoordinatorNotAvailableException
  16 NOT_COORDINATOR                       R- NotCoordinatorException
  17 INVALID_TOPIC_EXCEPTION               -- InvalidTopicException
  18 RECORD_LIST_TOO_LARGE                 -- RecordBatchTooLargeException
  19 NOT_ENOUGH_REPLICAS                   R- NotEnoughReplicasException
  20 NOT_ENOUGH_REPLICAS_AFTER_APPEND      R- NotEnoughReplicasAfterAppendException
  21 INVALID_REQUIRED_ACKS                 -- InvalidRequiredAcksException
  22 ILLEGAL_GENERATION                    -- IllegalGenerationException
  23 INCONSISTENT_GROUP_PROTOCOL           -- InconsistentGroupProtocolException
  24 INVALID_GROUP_ID                      -- InvalidGroupIdException
  25 UNKNOWN_MEMBER_ID                     -- UnknownMemberIdException
  26 INVALID_SESSION_TIMEOUT               -- InvalidSessionTimeoutException
  27 REBALANCE_IN_PROGRESS                 -- RebalanceInProgressException
  28 INVALID_COMMIT_OFFSET_SIZE            -- InvalidCommitOffsetSizeException
  29 TOPIC_AUTHORIZATION_FAILED            -- TopicAuthorizationException
  30 GROUP_AUTHORIZATION_FAILED            -- GroupAuthorizationException
  31 CLUSTER_AUTHORIZATION_FAILED          -- ClusterAuthorizationException
  32 INVALID_TIMESTAMP                     -- InvalidTimestampException
  33 UNSUPPORTED_SASL_MECHANISM            -- UnsupportedSaslMechanismException
  34 ILLEGAL_SASL_STATE                    -- IllegalSaslStateException
  35 UNSUPPORTED_VERSION                   -- UnsupportedVersionException
  36 TOPIC_ALREADY_EXISTS                  -- TopicExistsException
  37 INVALID_PARTITIONS                    -- InvalidPartitionsException
  38 INVALID_REPLICATION_FACTOR            -- InvalidReplicationFactorException
  39 INVALID_REPLICA_ASSIGNMENT            -- InvalidReplicaAssignmentException
  40 INVALID_CONFIG                        -- InvalidConfigurationException
  41 NOT_CONTROLLER                        R- NotControllerException
  42 INVALID_REQUEST                       -- InvalidRequestException
  43 UNSUPPORTED_FOR_MESSAGE_FORMAT        -- UnsupportedForMessageFormatException
  44 POLICY_VIOLATION                      -- PolicyViolationException
  45 OUT_OF_ORDER_SEQUENCE_NUMBER          -- OutOfOrderSequenceException
  46 DUPLICATE_SEQUENCE_NUMBER             -- DuplicateSequenceException
  47 INVALID_PRODUCER_EPOCH                -- InvalidProducerEpochException
  48 INVALID_TXN_STATE                     -- InvalidTxnStateException
  49 INVALID_PRODUCER_ID_MAPPING           -- InvalidPidMappingException
  50 INVALID_TRANSACTION_TIMEOUT           -- InvalidTxnTimeoutException
  51 CONCURRENT_TRANSACTIONS               R- ConcurrentTransactionsException
  52 TRANSACTION_COORDINATOR_FENCED        -- TransactionCoordinatorFencedException
  53 TRANSACTIONAL_ID_AUTHORIZATION_FAILED -- TransactionalIdAuthorizationException
  54 SECURITY_DISABLED                     -- SecurityDisabledException
  55 OPERATION_NOT_ATTEMPTED               -- OperationNotAttemptedException
  56 KAFKA_STORAGE_ERROR                   RM KafkaStorageException
  57 LOG_DIR_NOT_FOUND                     -- LogDirNotFoundException
  58 SASL_AUTHENTICATION_FAILED            -- SaslAuthenticationException
  59 UNKNOWN_PRODUCER_ID                   -- UnknownProducerIdException
  60 REASSIGNMENT_IN_PROGRESS              -- ReassignmentInProgressException
  61 DELEGATION_TOKEN_AUTH_DISABLED        -- DelegationTokenDisabledException
  62 DELEGATION_TOKEN_NOT_FOUND            -- DelegationTokenNotFoundException
  63 DELEGATION_TOKEN_OWNER_MISMATCH       -- DelegationTokenOwnerMismatchException
  64 DELEGATION_TOKEN_REQUEST_NOT_ALLOWED  -- UnsupportedByAuthenticationException
  65 DELEGATION_TOKEN_AUTHORIZATION_FAILED -- DelegationTokenAuthorizationException
  66 DELEGATION_TOKEN_EXPIRED              -- DelegationTokenExpiredException
  67 INVALID_PRINCIPAL_TYPE                -- InvalidPrincipalTypeException
  68 NON_EMPTY_GROUP                       -- GroupNotEmptyException
  69 GROUP_ID_NOT_FOUND                    -- GroupIdNotFoundException
  70 FETCH_SESSION_ID_NOT_FOUND            R- FetchSessionIdNotFoundException
  71 INVALID_FETCH_SESSION_EPOCH           R- InvalidFetchSessionEpochException
  72 LISTENER_NOT_FOUND                    RM ListenerNotFoundException
  73 TOPIC_DELETION_DISABLED               -- TopicDeletionDisabledException
  74 FENCED_LEADER_EPOCH                   RM FencedLeaderEpochException
  75 UNKNOWN_LEADER_EPOCH                  R- UnknownLeaderEpochException
  76 UNSUPPORTED_COMPRESSION_TYPE          -- UnsupportedCompressionTypeException
  77 STALE_BROKER_EPOCH                    -- StaleBrokerEpochException
  78 OFFSET_NOT_AVAILABLE                  R- OffsetNotAvailableException
  79 MEMBER_ID_REQUIRED                    -- MemberIdRequiredException
  80 PREFERRED_LEADER_NOT_AVAILABLE        RM PreferredLeaderNotAvailableException
  81 GROUP_MAX_SIZE_REACHED                -- GroupMaxSizeReachedException
  82 FENCED_INSTANCE_ID                    -- FencedInstanceIdException
  83 ELIGIBLE_LEADERS_NOT_AVAILABLE        RM EligibleLeadersNotAvailableException
  84 ELECTION_NOT_NEEDED                   R- ElectionNotNeededException
  85 NO_REASSIGNMENT_IN_PROGRESS           -- NoReassignmentInProgressException
  86 GROUP_SUBSCRIBED_TO_TOPIC             -- GroupSubscribedToTopicException
  87 INVALID_RECORD                        -- InvalidRecordException
  88 UNSTABLE_OFFSET_COMMIT                R- UnstableOffsetCommitException
  89 THROTTLING_QUOTA_EXCEEDED             R- ThrottlingQuotaExceededException
  90 PRODUCER_FENCED                       -- ProducerFencedException
  91 RESOURCE_NOT_FOUND                    -- ResourceNotFoundException
  92 DUPLICATE_RESOURCE                    -- DuplicateResourceException
  93 UNACCEPTABLE_CREDENTIAL               -- UnacceptableCredentialException
  94 INCONSISTENT_VOTER_SET                -- InconsistentVoterSetException
  95 INVALID_UPDATE_VERSION                -- InvalidUpdateVersionException
  96 FEATURE_UPDATE_FAILED                 -- FeatureUpdateFailedException
  97 PRINCIPAL_DESERIALIZATION_FAILURE     -- PrincipalDeserializationException
  98 SNAPSHOT_NOT_FOUND                    -- SnapshotNotFoundException
 100 UNKNOWN_TOPIC_ID                      RM UnknownTopicIdException
 101 DUPLICATE_BROKER_REGISTRATION         -- DuplicateBrokerRegistrationException
 102 BROKER_ID_NOT_REGISTERED              -- BrokerIdNotRegisteredException
 103 INCONSISTENT_TOPIC_ID                 RM InconsistentTopicIdException
 104 INCONSISTENT_CLUSTER_ID               -- InconsistentClusterIdException
 105 TRANSACTIONAL_ID_NOT_FOUND            -- TransactionalIdNotFoundException
 106 FETCH_SESSION_TOPIC_ID_ERROR          R- FetchSessionTopicIdException
 107 INELIGIBLE_REPLICA                    -- IneligibleReplicaException
 108 NEW_LEADER_ELECTED                    -- NewLeaderElectedException
 109 OFFSET_MOVED_TO_TIERED_STORAGE        -- OffsetMovedToTieredStorageException
 110 FENCED_MEMBER_EPOCH                   -- FencedMemberEpochException
 111 UNRELEASED_INSTANCE_ID                -- UnreleasedInstanceIdException
 112 UNSUPPORTED_ASSIGNOR                  -- UnsupportedAssignorException
 113 STALE_MEMBER_EPOCH                    -- StaleMemberEpochException
 114 MISMATCHED_ENDPOINT_TYPE              -- MismatchedEndpointTypeException
 115 UNSUPPORTED_ENDPOINT_TYPE             -- UnsupportedEndpointTypeException
 116 UNKNOWN_CONTROLLER_ID                 -- UnknownControllerIdException
 117 UNKNOWN_SUBSCRIPTION_ID               -- UnknownSubscriptionIdException
 118 TELEMETRY_TOO_LARGE                   -- TelemetryTooLargeException
 119 INVALID_REGISTRATION                  -- InvalidRegistrationException
 120 TRANSACTION_ABORTABLE                 -- TransactionAbortableException
 121 INVALID_RECORD_STATE                  -- InvalidRecordStateException
 122 SHARE_SESSION_NOT_FOUND               R- ShareSessionNotFoundException
 123 INVALID_SHARE_SESSION_EPOCH           R- InvalidShareSessionEpochException
 124 FENCED_STATE_EPOCH                    -- FencedStateEpochException
 125 INVALID_VOTER_KEY                     -- InvalidVoterKeyException
 126 DUPLICATE_VOTER                       -- DuplicateVoterException
 127 VOTER_NOT_FOUND                       -- VoterNotFoundException
 128 INVALID_REGULAR_EXPRESSION            -- InvalidRegularExpression
"""


def _class_name(kafka_name: str) -> str:
    for suffix in ("_ERROR", "_EXCEPTION"):
        kafka_name = kafka_name.removesuffix(suffix)
    return "".join(part.capitalize() for part in kafka_name.split("_")) + "Error"


# aiokafka's client-side class for a fenced producer, which it raises for either code.
_ALSO_AIOKAFKA = {47: ("ProducerFenced",), 90: ("ProducerFenced",)}


def _declare(row: str) -> type[BrokerResponseError]:
    code, kafka_name, flags, java = row.split()
    cls = type(BrokerResponseError)(
        _class_name(kafka_name),
        (BrokerResponseError,),
        {
            "__module__": __package__,
            "__doc__": f"{kafka_name} ({code}); Java ``{java}``.",
            "description": f"the broker answered {kafka_name} ({code}); Java's {java}",
            "errno": int(code),
            "name": kafka_name,
            "retriable": flags[0] == "R",
            "invalid_metadata": flags[1] == "M",
        },
        aiokafka=_ALSO_AIOKAFKA.get(int(code), ()),
    )
    globals()[cls.__name__] = cls
    __all__.append(cls.__name__)
    return cls


_BY_CODE: dict[int, type[BrokerResponseError]] = {
    cls.errno: cls for cls in map(_declare, _TABLE.strip().splitlines())
}
_UNKNOWN_CODES: dict[int, type[BrokerResponseError]] = {}


class RecordTooLargeError(_BY_CODE[10], aiokafka=("RecordTooLargeError",)):
    """Client side: a record is larger than ``max_request_size`` or ``buffer_memory``.

    Raised by ``send()`` before anything is sent. A kind of the broker's
    ``MESSAGE_TOO_LARGE`` (aiokafka raises ``MessageSizeTooLargeError`` here, so
    ``except MessageSizeTooLargeError`` catches it), whose message is just the
    reason.
    """

    def __str__(self) -> str:
        return self.message or ""


class UnknownTopicTimeoutError(KafkaTimeoutError, _BY_CODE[3]):
    """A topic did not appear in metadata within ``max_block_ms``.

    A :class:`KafkaTimeoutError`, as Java raises there, and an
    ``UnknownTopicOrPartitionError``, as aiokafka raises there, so that either
    ``except`` catches it; the message is just the reason.
    """

    def __str__(self) -> str:
        return self.message or ""


class InvalidTopicNameError(_BY_CODE[17], _BY_CODE[3], ValueError):
    """Client side: ``send()`` to a name Kafka refuses as a topic name.

    Raised at the call, before anything is sent. A kind of the broker's
    ``INVALID_TOPIC_EXCEPTION`` (:class:`InvalidTopicError`, what Java raises), of
    ``UNKNOWN_TOPIC_OR_PARTITION`` (aiokafka raises ``UnknownTopicOrPartitionError`` for
    such a name once ``request_timeout_ms`` has passed, so ``except KafkaError`` and
    ``except UnknownTopicOrPartitionError`` written for aiokafka catch it) and a
    ``ValueError`` (a bad argument); the message is just the reason.
    """

    def __str__(self) -> str:
        return self.message or ""


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
    label = f"UnknownErrorCode{code}Error".replace("-", "Minus")
    return type(BrokerResponseError)(
        label,
        (_BY_CODE[-1],),
        {
            "__module__": __package__,
            "__qualname__": label,
            "__doc__": f"{kafka_name} ({code}): a code missing from the error table.",
            "errno": code,
            "name": kafka_name,
            "retriable": False,
        },
    )


def made_for_unknown_code(cls: type[KafkaError]) -> bool:
    code = getattr(cls, "errno", None)
    return code is not None and _UNKNOWN_CODES.get(code) is cls


def unknown_code_error(code: int, message: str | None) -> BrokerResponseError:
    return for_code(code)(message)
