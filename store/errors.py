"""The store's exceptions: one base class, mapped to HTTP in one place by the service."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every error the store raises on purpose."""


class StoreUnavailable(StoreError):
    """The backend cannot be reached, timed out, or refused the call (the service answers 503)."""


class StateCodecError(StoreError):
    """A stored state is truncated, corrupted, of an unknown version, or of the wrong shape."""


class CorruptRecord(StoreError):
    """A document's stored metadata is unreadable: not JSON, or of another schema."""


class StoreMisconfigured(StoreError):
    """The backend is set up so that acknowledged writes could silently vanish (a Redis that
    evicts keys): the service refuses to start on it."""
