"""Amazon MSK IAM logins: OAUTHBEARER tokens signed by AWS's own signer library.

MSK's IAM access control takes a SigV4-presigned ``kafka-cluster:Connect`` URL as
the OAUTHBEARER token. AWS publishes the signer (``aws-msk-iam-sasl-signer-python``,
on botocore); this module wraps it as a :class:`~aiokafka_lite.oauth.RefreshingTokenProvider`
and installs with the ``msk`` extra: ``pip install 'aiokafka-lite[msk]'``.

botocore's credential chain reads files, may call STS or the instance metadata
service, and blocks: every call runs in a worker thread (``asyncio.to_thread``),
never on the event loop.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from .errors import ConfigError
from .oauth import RefreshingTokenProvider
from .security import OAuthToken

__all__ = ["MSKIAMTokenProvider"]


def _signer() -> Any:
    try:
        # MSKAuthTokenProvider is a module of functions in AWS's package.
        return importlib.import_module("aws_msk_iam_sasl_signer.MSKAuthTokenProvider")
    except ImportError:
        raise ConfigError(
            "MSK IAM needs AWS's signer library: pip install 'aiokafka-lite[msk]' "
            "(aws-msk-iam-sasl-signer-python)"
        ) from None


class MSKIAMTokenProvider(RefreshingTokenProvider):
    """OAUTHBEARER tokens for Amazon MSK with IAM access control.

    Credentials come from botocore's default chain (environment, config files,
    SSO, container or instance roles), or from ``profile``, or by assuming
    ``role_arn``, or from a botocore ``credentials_provider``; at most one of the
    three. Use it with ``security_protocol="SASL_SSL"`` and
    ``sasl_mechanism="OAUTHBEARER"``. The signer's tokens last 15 minutes; a new
    one is signed after ``refresh_factor`` of that.
    """

    def __init__(
        self,
        region: str,
        *,
        profile: str | None = None,
        role_arn: str | None = None,
        role_session_name: str = "aiokafka-lite",
        credentials_provider: Any = None,
        refresh_factor: float = 0.8,
    ) -> None:
        super().__init__(refresh_factor=refresh_factor)
        if not region:
            raise ConfigError("MSKIAMTokenProvider: region must be given (e.g. 'us-east-1')")
        given = [
            name
            for name, value in (
                ("profile", profile),
                ("role_arn", role_arn),
                ("credentials_provider", credentials_provider),
            )
            if value is not None
        ]
        if len(given) > 1:
            raise ConfigError(f"MSKIAMTokenProvider: give one of {' and '.join(given)}, not both")
        self._signer = _signer()  # fails now, at construction, without the extra
        self.region = region
        self.profile = profile
        self.role_arn = role_arn
        self.role_session_name = role_session_name
        self._credentials_provider = credentials_provider

    def __repr__(self) -> str:
        how = self.profile or self.role_arn or ("provider" if self._credentials_provider else "")
        return f"MSKIAMTokenProvider({self.region!r}{', ' + repr(how) if how else ''})"

    def _sign(self) -> tuple[str, int]:
        signer = self._signer
        if self.profile is not None:
            result = signer.generate_auth_token_from_profile(self.region, self.profile)
        elif self.role_arn is not None:
            result = signer.generate_auth_token_from_role_arn(
                self.region, self.role_arn, self.role_session_name
            )
        elif self._credentials_provider is not None:
            result = signer.generate_auth_token_from_credentials_provider(
                self.region, self._credentials_provider
            )
        else:
            result = self._sign_with_found_credentials(signer)
        token, expiry_ms = result
        return str(token), int(expiry_ms)

    def _sign_with_found_credentials(self, signer: Any) -> Any:
        """The default chain's token; AWS's signer signs with whatever the chain found,
        and when it found nothing, fails on ``None.access_key``: say what is missing."""
        try:
            return signer.generate_auth_token(self.region)
        except AttributeError as e:
            if e.name != "access_key" or e.obj is not None:
                raise
            raise ConfigError(
                "MSKIAMTokenProvider: botocore's default chain found no AWS credentials "
                "(environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                "~/.aws/credentials or config, SSO, a container or instance role); "
                "configure one, or pass profile=, role_arn= or credentials_provider="
            ) from None

    async def fetch(self) -> OAuthToken:
        token, expiry_ms = await asyncio.to_thread(self._sign)
        return OAuthToken(token, expiry_ms / 1000)
