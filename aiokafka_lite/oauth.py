"""OAUTHBEARER token providers that know when their token expires and refresh it in time.

:class:`RefreshingTokenProvider` keeps the last token with its expiry and fetches a
new one once ``refresh_factor`` (0.8, as Java's ``sasl.login.refresh.window.factor``)
of its lifetime has passed; callers at the same moment (a producer connecting to
every broker) share one fetch. Re-authentication (KIP-368) asks for a token at 85-95 %
of the session, which never outlives the token, so each connection re-authenticates
with a fresh token before the old one expires.

:class:`OIDCClientCredentials` gets tokens from an OpenID Connect / OAuth 2
token endpoint with the client-credentials grant (RFC 6749 section 4.4), over
the project's own small HTTP client (:mod:`aiokafka_lite._internal._http`): no new
dependency. Amazon MSK IAM is in :mod:`aiokafka_lite.msk` (optional extra).

Providers derive from aiokafka's ``AbstractTokenProvider`` when aiokafka is
installed, so aiokafka's own consumer accepts them too: ``token()`` returns the
``str`` aiokafka expects; this project's producer calls :meth:`oauth_token` for the
expiry as well.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import importlib.util
import json
import logging
import math
import ssl
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from ._internal._http import HttpError, post_form
from .security import OAuthToken

__all__ = [
    "OAuthToken",
    "OIDCClientCredentials",
    "RefreshingTokenProvider",
    "TokenEndpointError",
]

log = logging.getLogger("aiokafka_lite.oauth")

if TYPE_CHECKING:
    _Base = ABC
elif importlib.util.find_spec("aiokafka") is not None:
    _Base = importlib.import_module("aiokafka.abc").AbstractTokenProvider
else:
    _Base = ABC

_LOOPBACK = ("127.0.0.1", "::1", "localhost")
#: After a failed refresh with the old token still valid, try again this soon (s) at most.
RETRY_AFTER_FAILURE = 10.0


class TokenEndpointError(Exception):
    """The token endpoint could not be reached, refused the client, or answered nonsense."""


class RefreshingTokenProvider(_Base):
    """A token provider that caches :meth:`fetch`'s token until it is due for refresh.

    Subclasses implement :meth:`fetch` (an :class:`OAuthToken` with ``expires_at``).
    A token without an expiry is kept until a fetch is forced by :meth:`invalidate`.
    If a refresh fails while the cached token is still valid, the cached token is
    used (and the failure logged); once it has expired, the failure is raised.
    """

    def __init__(
        self, *, refresh_factor: float = 0.8, extensions: Mapping[str, str] | None = None
    ) -> None:
        if not 0.0 < refresh_factor <= 1.0:
            raise ValueError(f"refresh_factor must be in (0, 1], got {refresh_factor!r}")
        self.refresh_factor = refresh_factor
        self._extensions = dict(extensions or {})
        self._current: OAuthToken | None = None
        self._refresh_at = 0.0  # time.time() from which the next call fetches
        self._fetching: asyncio.Future[OAuthToken] | None = None
        #: how many tokens :meth:`fetch` returned (tests and logs use it)
        self.fetches = 0

    @abstractmethod
    async def fetch(self) -> OAuthToken:
        """A new token from the identity provider, with its expiry if known."""

    async def oauth_token(self) -> OAuthToken:
        """The cached token, or a new one once the old one is due for refresh."""
        current = self._current
        if current is not None and time.time() < self._refresh_at:
            return current
        pending = self._fetching
        if pending is None or pending.get_loop() is not asyncio.get_running_loop():
            pending = self._fetching = asyncio.ensure_future(self._refresh())
            pending.add_done_callback(self._fetched)
        return await asyncio.shield(pending)

    async def token(self) -> str:
        """aiokafka's ``AbstractTokenProvider.token()``: the token itself."""
        return (await self.oauth_token()).token

    def extensions(self) -> dict[str, str]:
        """aiokafka's ``AbstractTokenProvider.extensions()``: SASL extensions to send."""
        return dict(self._extensions)

    def invalidate(self) -> None:
        """Forget the cached token: the next call fetches a new one."""
        self._refresh_at = 0.0

    def _fetched(self, future: asyncio.Future[OAuthToken]) -> None:
        if self._fetching is future:
            self._fetching = None
        if not future.cancelled():
            future.exception()  # retrieved: the callers raise it

    async def _refresh(self) -> OAuthToken:
        old = self._current
        try:
            new = await self.fetch()
        except Exception as e:
            now = time.time()
            if old is not None and (old.expires_at is None or old.expires_at > now):
                left = math.inf if old.expires_at is None else old.expires_at - now
                self._refresh_at = now + min(RETRY_AFTER_FAILURE, left / 2)
                log.warning(
                    "%s: refreshing the token failed (%s: %s); the current one is valid "
                    "for %.0f s more",
                    type(self).__name__,
                    type(e).__name__,
                    e,
                    left,
                )
                return old
            raise
        if not isinstance(new, OAuthToken) or not new.token:
            raise TypeError(f"{type(self).__name__}.fetch() must return a non-empty OAuthToken")
        now = time.time()
        self.fetches += 1
        self._current = new
        if new.expires_at is None:
            self._refresh_at = math.inf
        else:
            self._refresh_at = now + max(0.0, new.expires_at - now) * self.refresh_factor
        return new


class OIDCClientCredentials(RefreshingTokenProvider):
    """Tokens from an OpenID Connect token endpoint, client-credentials grant.

    POSTs ``grant_type=client_credentials`` (and ``scope``, ``audience`` and any
    ``params``) to ``token_endpoint_url``, authenticating with HTTP Basic
    (RFC 6749 section 2.3.1; ``credentials_in_body=True`` sends ``client_id``
    and ``client_secret`` as form fields instead, for endpoints that want that).
    The expiry is ``expires_in`` from the answer, else the JWT's ``exp`` claim.
    ``https`` endpoints are verified with ``ssl_context`` (system CAs by default).
    """

    def __init__(
        self,
        token_endpoint_url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str | None = None,
        audience: str | None = None,
        params: Mapping[str, str] | None = None,
        credentials_in_body: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        timeout: float = 10.0,
        refresh_factor: float = 0.8,
        extensions: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(refresh_factor=refresh_factor, extensions=extensions)
        if not token_endpoint_url.startswith(("https://", "http://")):
            raise ValueError(f"token_endpoint_url must be an http(s) URL: {token_endpoint_url!r}")
        if not client_id:
            raise ValueError("client_id must not be empty")
        host = urlsplit(token_endpoint_url).hostname or ""
        if token_endpoint_url.startswith("http://") and host not in _LOOPBACK:
            log.warning(
                "OIDCClientCredentials: %s is plain http: the client secret and tokens "
                "cross the network unencrypted (use https)",
                token_endpoint_url,
            )
        self.token_endpoint_url = token_endpoint_url
        self.client_id = client_id
        self._client_secret = client_secret
        self.scope = scope
        self.audience = audience
        self._params = dict(params or {})
        self._credentials_in_body = credentials_in_body
        self._ssl_context = ssl_context
        self.timeout = timeout

    def __repr__(self) -> str:  # never the secret
        return (
            f"OIDCClientCredentials({self.token_endpoint_url!r}, client_id={self.client_id!r}, "
            f"scope={self.scope!r})"
        )

    async def fetch(self) -> OAuthToken:
        form = {"grant_type": "client_credentials", **self._params}
        if self.scope:
            form["scope"] = self.scope
        if self.audience:
            form["audience"] = self.audience
        headers: dict[str, str] = {}
        if self._credentials_in_body:
            form["client_id"] = self.client_id
            form["client_secret"] = self._client_secret
        else:
            pair = f"{quote(self.client_id, safe='')}:{quote(self._client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        url = self.token_endpoint_url
        sent = time.time()
        try:
            response = await post_form(
                url,
                urlencode(form).encode(),
                headers=headers,
                ssl_context=self._ssl_context,
                timeout=self.timeout,
            )
        except HttpError as e:
            raise TokenEndpointError(f"token endpoint {e}") from None
        answer = _json_object(response.body)
        if response.status != 200:
            error = answer.get("error", "") if answer else ""
            detail = answer.get("error_description", "") if answer else ""
            said = ": ".join(str(s) for s in (error, detail) if s)
            raise TokenEndpointError(
                f"token endpoint {url} answered {response.status} {response.reason}"
                + (f" ({said})" if said else "")
            )
        if answer is None:
            raise TokenEndpointError(f"token endpoint {url} did not answer with a JSON object")
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise TokenEndpointError(f"token endpoint {url}: the answer has no access_token")
        token_type = answer.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise TokenEndpointError(f"token endpoint {url}: token_type {token_type!r}, not Bearer")
        expires_in = answer.get("expires_in")
        if isinstance(expires_in, str) and expires_in.isdigit():
            expires_in = int(expires_in)  # some endpoints send it as a string
        expiries = [jwt_expiry(token)]  # a JWT's own exp may come sooner (whole seconds)
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
            expiries.append(sent + float(expires_in))
        known = [e for e in expiries if e is not None]
        return OAuthToken(token, min(known) if known else None)


def jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (seconds since the epoch), unverified; None if absent."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, TypeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
