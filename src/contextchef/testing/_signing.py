"""Stateless opaque tokens: what a fake issues, any fake with the same key verifies.

A real provider verifies a thinking ``signature`` (Anthropic), a ``compaction`` block's
``encrypted_content`` or a thought signature without remembering having issued it: the
token carries what it vouches for, sealed with a key only the provider holds
(https://platform.claude.com/docs/en/build-with-claude/extended-thinking, "signature";
the preserved-thinking prefix check rebuilds nothing from server state either). The fakes
do the same, so a session that talked to one fake, was snapshotted and restored in another
process can go on against a *new* fake: the fake still refuses a token whose content was
edited, or one it could not have issued.

A sealed token is ``<id>.<claims>.<tag>``: ``id`` the fake's counter id (``sig_0001``),
``claims`` base64url canonical JSON (what the token vouches for besides its content, such
as the prefix it was produced after; may be empty), and ``tag`` the first 32 hex digits of
HMAC-SHA256 over the id, the claims and the content, under the fake's ``signing_key``
(`FAKE_SIGNING_KEY` unless the fake was built with another one: two fakes built with
different keys act as two accounts, each refusing the other's tokens). The default key is
fixed and public: these tokens prove nothing outside tests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["FAKE_SIGNING_KEY", "digest", "digests", "opened", "seal", "signing_key", "unpacked"]

FAKE_SIGNING_KEY = b"contextchef.testing fake provider signing key, v1"
"""The key every fake seals its opaque tokens with (fixed, so two fakes in two processes
agree; public, so the tokens are for tests only)."""

_KEY: ContextVar[bytes] = ContextVar("contextchef_fake_signing_key", default=FAKE_SIGNING_KEY)


@contextmanager
def signing_key(key: bytes) -> Iterator[None]:
    """Seal and open tokens with `key` inside the block (a fake's ``signing_key``)."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def digest(text: str) -> str:
    """A short (8 bytes, base64url) digest of `text`, for claims."""
    raw = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def digests(texts: Iterable[str]) -> str:
    """`digest` of each of `texts`, packed into one base64url string (11 chars each)."""
    return "".join(digest(t) for t in texts)


def unpacked(packed: str) -> list[str]:
    """The digests of a `digests` string, in order."""
    return [packed[k : k + 11] for k in range(0, len(packed), 11)]


def _tag(token_id: str, claims: str, content: str) -> str:
    message = "\x1f".join((token_id, claims, content)).encode()
    return hmac.new(_KEY.get(), message, hashlib.sha256).hexdigest()[:32]


def seal(token_id: str, content: str, claims: Mapping[str, Any] | None = None) -> str:
    """The token for `content` (any text; canonical JSON for a block) and `claims`.

    Args:
        token_id: The fake's id for it (``sig_0001``); no ``.`` in it.
        content: What the token is valid with; a changed character breaks it.
        claims: JSON-serialisable facts the token vouches for, read back by `opened`.
    """
    packed = ""
    if claims:
        text = json.dumps(claims, sort_keys=True, separators=(",", ":"))
        packed = base64.urlsafe_b64encode(text.encode()).decode("ascii").rstrip("=")
    return f"{token_id}.{packed}.{_tag(token_id, packed, content)}"


def opened(token: object, content: str) -> dict[str, Any] | None:
    """The claims of `token` when a fake sealed it for `content`, else None.

    None for anything else: a token for other content (edited text), a made-up or cut
    token, one sealed under another key.
    """
    if not isinstance(token, str) or token.count(".") != 2:
        return None
    token_id, packed, tag = token.split(".")
    if not hmac.compare_digest(tag, _tag(token_id, packed, content)):
        return None
    if not packed:
        return {}
    text = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4)).decode()
    claims = json.loads(text)
    return claims if isinstance(claims, dict) else None
