"""Call ids as each OpenAI wire accepts them (providers layer).

OpenAI refuses a replayed call whose id is empty or too long: Chat Completions takes a
``tool_calls[].id`` of at most 40 characters ("Invalid 'messages[2].tool_calls[0].id':
string too long. Expected a string with maximum length 40"), and Responses a
``call_id`` of 1 to 64 ("Invalid 'input[4].call_id': empty string. Expected a string
with minimum length 1"; "... maximum length 64"), as the API's own errors state. Such
ids reach a history from elsewhere: Gemini calls have none, proxies and other servers
make long ones, and a host may build calls by hand. Each is sent in a short form made
from its text and a hash of it, the same on every request, so a call and its result keep
matching, two different ids stay different, and a replayed prefix is byte-identical.
(Anthropic's own rule, a pattern as well as a length, is met in ``anthropic/_render.py``.)
"""

from __future__ import annotations

import hashlib

__all__ = ["CHAT_ID_LIMIT", "RESPONSES_ID_LIMIT", "fitted_id"]

CHAT_ID_LIMIT = 40
"""Most characters in a Chat Completions ``tool_calls[].id`` / ``tool_call_id``."""

RESPONSES_ID_LIMIT = 64
"""Most characters in a Responses ``call_id``."""


def fitted_id(call_id: str, limit: int) -> str:
    """`call_id` as sent where ids are 1 to `limit` characters (``limit`` >= 20).

    An id in range is sent as it is. Any other becomes its first characters, ``_`` and the
    first 12 hex digits of the SHA-256 of its UTF-8 bytes (``call_`` and the digest for an
    empty id), at most `limit` characters, the same every time.
    """
    if 0 < len(call_id) <= limit:
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    head = call_id[: limit - len(digest) - 1] or "call"
    return f"{head}_{digest}"
