"""What a connection asks before its first request, as declared data: ApiVersions (18)
(which versions the broker speaks), SaslHandshake (17) and SaslAuthenticate (36).

(How these declarations are written and checked: :mod:`aiokafka_lite._internal.protocol`.)
"""

from __future__ import annotations

from typing import Annotated as A

from .codec import F, Message, Request, Response

__all__ = [
    "ApiVersion",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "FinalizedFeatureKey",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "SupportedFeatureKey",
]


# ---------------------------------------------------------------------------
# ApiVersions (18)


class ApiVersion(Message):
    api_key: A[int, F("int16")] = 0
    min_version: A[int, F("int16")] = 0
    max_version: A[int, F("int16")] = 0


class SupportedFeatureKey(Message):
    name: A[str, F("string", "3+")] = ""
    min_version: A[int, F("int16", "3+")] = 0
    max_version: A[int, F("int16", "3+")] = 0


class FinalizedFeatureKey(Message):
    name: A[str, F("string", "3+")] = ""
    max_version_level: A[int, F("int16", "3+")] = 0
    min_version_level: A[int, F("int16", "3+")] = 0


class ApiVersionsResponse(Response):
    API_KEY = 18
    FLEXIBLE_SINCE = 3

    error_code: A[int, F("int16")] = 0
    api_keys: A[list[ApiVersion], F("[]ApiVersion")] = []
    throttle_time_ms: A[int, F("int32", "1+")] = 0
    supported_features: A[list[SupportedFeatureKey], F("[]SupportedFeatureKey", "3+", tag=0)] = []
    finalized_features_epoch: A[int, F("int64", "3+", tag=1)] = -1
    finalized_features: A[list[FinalizedFeatureKey], F("[]FinalizedFeatureKey", "3+", tag=2)] = []
    zk_migration_ready: A[bool, F("bool", "3+", tag=3)] = False


class ApiVersionsRequest(Request):
    API_KEY = 18
    MIN_VERSION = 0
    MAX_VERSION = 4
    FLEXIBLE_SINCE = 3
    RESPONSE = ApiVersionsResponse

    client_software_name: A[str, F("string", "3+")] = ""
    client_software_version: A[str, F("string", "3+")] = ""


# ---------------------------------------------------------------------------
# SaslHandshake (17) and SaslAuthenticate (36)

# SaslHandshake has no flexible version ("flexibleVersions": "none").
_NEVER_FLEXIBLE = 0x7FFF


class SaslHandshakeResponse(Response):
    API_KEY = 17
    FLEXIBLE_SINCE = _NEVER_FLEXIBLE

    error_code: A[int, F("int16")] = 0
    mechanisms: A[list[str], F("[]string")] = []


class SaslHandshakeRequest(Request):
    API_KEY = 17
    MIN_VERSION = 1  # v0 sends the SASL tokens unframed; v1 wraps them in SaslAuthenticate
    MAX_VERSION = 1
    FLEXIBLE_SINCE = _NEVER_FLEXIBLE
    RESPONSE = SaslHandshakeResponse

    mechanism: A[str, F("string")] = ""


class SaslAuthenticateResponse(Response):
    API_KEY = 36
    FLEXIBLE_SINCE = 2

    error_code: A[int, F("int16")] = 0
    error_message: A[str | None, F("string", nullable="0+")] = None
    auth_bytes: A[bytes, F("bytes")] = b""
    session_lifetime_ms: A[int, F("int64", "1+")] = 0


class SaslAuthenticateRequest(Request):
    API_KEY = 36
    MIN_VERSION = 0
    MAX_VERSION = 2
    FLEXIBLE_SINCE = 2
    RESPONSE = SaslAuthenticateResponse

    auth_bytes: A[bytes, F("bytes")] = b""
