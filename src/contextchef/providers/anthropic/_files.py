"""The Files API beta: a request whose messages refer to an uploaded file sends it.

Anthropic's Files API pages still say "The Files API is currently in beta. To use the
Files API, you'll need to include the beta feature header: ``anthropic-beta:
files-api-2025-04-14``" (https://platform.claude.com/docs/en/build-with-claude/files;
the API reference's files pages), and the installed SDK still lists that value
(``AnthropicBetaParam``), though it also has GA twins of the file source types
(``FileDocumentSourceParam``, ``FileImageSourceParam``) and of ``client.files``. A value
the API no longer needs is accepted and ignored, while a file source without the beta
where it still is needed is a 400: so a request whose messages hold an ``image`` or
``document`` block with a ``file`` source (in a ``tool_result`` too) names the beta
(`files_betas`, `Profile.payload_betas`). Such a block, once sent, is replayed in every
later request of the conversation, which therefore sends the beta too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextchef.providers._scan import first_found

__all__ = ["FILES_BETA", "files_betas"]

FILES_BETA = "files-api-2025-04-14"
_SCANNED = "contextchef anthropic file source scan"
_BLOCKS = ("image", "document")


def _refers(block: object) -> bool:
    if not isinstance(block, Mapping):
        return False
    source = block.get("source")
    if block.get("type") in _BLOCKS and isinstance(source, Mapping):
        return source.get("type") == "file"
    inner = block.get("content") if block.get("type") == "tool_result" else None
    return isinstance(inner, list) and any(map(_refers, inner))


def _holds_file(message: Mapping[str, Any]) -> bool:
    """Whether a message's blocks refer to an uploaded file.

    Read inline: a cold compile and the first compile after a restore read every message
    sent, 1,000s of them.
    """
    content = message.get("content")
    if not isinstance(content, list):
        return False
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind in _BLOCKS:
            source = block.get("source")
            if isinstance(source, Mapping) and source.get("type") == "file":
                return True
        elif (
            kind == "tool_result"
            and isinstance(block.get("content"), list)
            and any(map(_refers, block["content"]))
        ):
            return True
    return False


def files_betas(payload: Mapping[str, Any], memo: dict[Any, Any]) -> frozenset[str]:
    """`FILES_BETA` when `payload`'s messages refer to an uploaded file, else nothing.

    The recorded messages (all but the last, which may be a per-request copy with its
    cache mark) are read once each (`first_found`, `memo`: the ledger's cache).
    """
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        return frozenset()
    sent = first_found(messages[:-1], memo, _SCANNED, _holds_file)
    return frozenset({FILES_BETA}) if sent is not None or _holds_file(messages[-1]) else frozenset()
