"""Optional API keys: when settings.api_keys is non-empty, /v1 routes need `Bearer <key>`."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr

from service.deps import SettingsDep
from service.errors import Unauthorized

# auto_error=False: the missing-key answer must be our own 401 envelope, not FastAPI's 403.
_bearer = HTTPBearer(auto_error=False, description="One of the configured API keys.")


def key_is_valid(given: str, keys: list[SecretStr]) -> bool:
    # compare_digest against every key, so timing does not tell which prefix matched.
    secret = given.encode()
    matches = [hmac.compare_digest(secret, key.get_secret_value().encode()) for key in keys]
    return any(matches)


async def require_api_key(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    if not settings.api_keys:
        return
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'")
    if not key_is_valid(credentials.credentials, settings.api_keys):
        raise Unauthorized("invalid API key")
