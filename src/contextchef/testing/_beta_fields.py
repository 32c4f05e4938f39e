"""Request rules on Anthropic betas: beta-only fields and Files API sources.

`anthropic_beta_fields`: a beta-only request field goes with its ``anthropic-beta`` value.

The fields of the anthropic SDK's beta ``MessageCreateParams`` that its GA type lacks are
taken by the API only under their beta (the API answers a 400 for the field otherwise):

* ``mcp_servers``: an ``mcp-client-*`` beta (the MCP connector docs,
  https://platform.claude.com/docs/en/agents-and-tools/mcp-connector);
* ``fallbacks``: ``server-side-fallback-*`` (SDK ``BetaFallbackParam``: "These rules
  apply with the server-side-fallback-2026-07-01 beta header");
* ``fallback_credit_token`` in its object form: ``fallback-credit-*`` (SDK
  ``BetaFallbackCreditTokenParam``: "without that header the field accepts the bare
  string only");
* ``thread``: ``message-threads-*`` (the SDK's ``lib/threads``, ``MESSAGE_THREADS_BETA``).

A value of the feature in any version counts (a host may pin an older one).

`anthropic_file_sources`: an ``image`` or ``document`` block whose ``source`` is a
Files API ``file`` (in a message or a ``tool_result``) goes with
``files-api-2025-04-14``: "The Files API is currently in beta. To use the Files API,
you'll need to include the beta feature header" (the Files API pages,
https://platform.claude.com/docs/en/build-with-claude/files).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import NO_HEADERS, betas, blocks, dicts
from contextchef.testing._records import RecordedRequest

__all__ = ["FILES_API_BETA", "anthropic_beta_fields", "anthropic_file_sources"]

FILES_API_BETA = "files-api-2025-04-14"
"""The beta a request holding a Files API ``file`` source sends."""

_FEATURES = {
    "mcp_servers": "mcp-client-",
    "fallbacks": "server-side-fallback-",
    "fallback_credit_token": "fallback-credit-",
    "thread": "message-threads-",
}


def anthropic_beta_fields(
    body: Mapping[str, Any],
    earlier: Sequence[RecordedRequest],
    *,
    headers: Mapping[str, str] = NO_HEADERS,
) -> Iterator[str]:
    """Each beta-only field of the body goes with a beta of its feature (module doc)."""
    sent = betas(headers)
    for field, feature in _FEATURES.items():
        value = body.get(field)
        if value is None or (field == "fallback_credit_token" and isinstance(value, str)):
            continue
        if not any(b.startswith(feature) for b in sent):
            yield (
                f"{field}: Extra inputs are not permitted without a `{feature}*` value in "
                f"the anthropic-beta header (sent: {sorted(sent)})"
            )


def _file_source(block: Mapping[str, Any]) -> bool:
    source = block.get("source")
    kind = block.get("type")
    return (
        kind in ("image", "document")
        and isinstance(source, Mapping)
        and source.get("type") == "file"
    )


def anthropic_file_sources(
    body: Mapping[str, Any],
    earlier: Sequence[RecordedRequest],
    *,
    headers: Mapping[str, str] = NO_HEADERS,
) -> Iterator[str]:
    """A ``file`` source goes with the Files API beta (module doc)."""
    if FILES_API_BETA in betas(headers):
        return
    for i, message in dicts(body.get("messages")):
        for j, block in blocks(message):
            inner = dicts(block.get("content")) if block.get("type") == "tool_result" else []
            found = [f"content.{j}"] if _file_source(block) else []
            found += [f"content.{j}.content.{k}" for k, b in inner if _file_source(b)]
            for at in found:
                yield (
                    f"messages.{i}.{at}.source: a file source requires the "
                    f"`{FILES_API_BETA}` value in the anthropic-beta header"
                )
