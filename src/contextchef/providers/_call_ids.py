"""Call ids a wire refuses, sent in a stable short form (providers layer).

Some wires refuse a replayed call whose id is empty or too long (each limit is stated,
with its source, in its provider package: Chat Completions and Responses, and Gemini
Interactions, which requires an id). Such ids reach a history from elsewhere: Gemini
calls have none, proxies and other servers make long ones, and a host may build calls by
hand. Each is sent in a short form made from its text and a hash of it, the same on
every request, so a call and its result keep matching, two different ids stay
different, and a replayed prefix is byte-identical. (Anthropic's own rule, a pattern as
well as a length, is met in ``anthropic/_render.py``.)
"""

from __future__ import annotations

import hashlib

__all__ = ["fitted_id"]


def fitted_id(call_id: str, limit: int | None = None) -> str:
    """`call_id` as sent where ids are 1 to `limit` characters (>= 20; None: no maximum).

    An id in range is sent as it is. Any other becomes its first characters, ``_`` and the
    first 12 hex digits of the SHA-256 of its UTF-8 bytes (``call_`` and the digest for an
    empty id), at most `limit` characters, the same every time.
    """
    if call_id and (limit is None or len(call_id) <= limit):
        return call_id
    limit = 64 if limit is None else limit
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    head = call_id[: limit - len(digest) - 1] or "call"
    return f"{head}_{digest}"
