"""Cache diagnostics: the reply's ``diagnostics`` for a request that asks for them (R29).

A request carrying ``diagnostics: {"previous_message_id": X}`` gets a top-level
``diagnostics`` in the reply (``build-with-claude/cache-diagnostics`` under
https://platform.claude.com/docs/en/; rule R29 of this fake's numbering of the
preserved-thinking and caching rules, see `contextchef.testing._binding`):

* ``null`` when X is null (the first turn) or nothing diverged from the request that
  produced message X;
* ``{"cache_miss_reason": {"type": "previous_message_not_found"}}`` when this fake never
  answered X;
* otherwise the first divergence, in the cache's order (R30: tools, then system, then
  messages), after the model: ``model_changed``, ``tools_changed`` (tools added, removed,
  changed or reordered; not ``defer_loading: true`` declarations appended after the earlier
  request's tools, which "are not included in the system-prompt prefix": "adding tools
  dynamically through tool search does not break your cache", agents-and-tools/tool-use/
  tool-use-with-prompt-caching. The strict reading: a deferred declaration inserted among
  the earlier tools, or any move, is a change, as the cache-diagnostics page lists
  reordered tools and a measured miss after a reveal is on record, research note C11),
  ``system_changed``, ``messages_changed`` (the earlier request's
  messages are not the start of this one's); each with ``cache_missed_input_tokens`` (0,
  as every count the fake reports);
* ``unavailable`` when only other prompt-affecting parameters differ (``tool_choice``,
  ``thinking``, ``context_management``, ``output_config``, ``output_format``, the beta set
  as recorded in ``anthropic-beta``).

Values are compared as JSON values (key order does not matter); ``cache_control`` markers
are left out (whether the API flags moved breakpoints is not documented, R29). The
"diagnosis pending" answer (``{"cache_miss_reason": null}``) is never given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextchef.testing._body import as_list, betas, canonical, without_cache_control
from contextchef.testing._records import RecordedRequest

__all__ = ["cache_diagnostics"]

_OTHER_PARAMETERS = (
    "tool_choice",
    "thinking",
    "context_management",
    "output_config",
    "output_format",
)


def _value(value: Any) -> str:
    return canonical(without_cache_control(value))


def _tools_extend(before: list[Any], after: list[Any]) -> bool:
    """The same tools, or the same followed by ``defer_loading: true`` declarations (R30)."""
    if _value(after) == _value(before):
        return True
    added = after[len(before) :]
    return (
        len(after) > len(before)
        and _value(after[: len(before)]) == _value(before)
        and all(isinstance(t, Mapping) and t.get("defer_loading") is True for t in added)
    )


def _reason(
    body: Mapping[str, Any], headers: Mapping[str, str], origin: RecordedRequest
) -> str | None:
    old: Mapping[str, Any] = origin.body
    if body.get("model") != old.get("model"):
        return "model_changed"
    if not _tools_extend(as_list(old.get("tools")), as_list(body.get("tools"))):
        return "tools_changed"
    if _value(body.get("system")) != _value(old.get("system")):
        return "system_changed"
    messages, before = as_list(body.get("messages")), as_list(old.get("messages"))
    if len(before) > len(messages) or _value(messages[: len(before)]) != _value(before):
        return "messages_changed"
    if any(_value(body.get(k)) != _value(old.get(k)) for k in _OTHER_PARAMETERS):
        return "unavailable"
    if betas(headers) != betas(origin.headers):
        return "unavailable"
    return None


def cache_diagnostics(
    body: Mapping[str, Any],
    earlier: Sequence[RecordedRequest],
    headers: Mapping[str, str],
) -> dict[str, Any] | None:
    """The ``diagnostics`` value of the reply to `body` (see the module docstring).

    Args:
        body: The request's JSON body (it carries ``diagnostics``).
        earlier: The fake's earlier requests; the one whose 200 reply has ``id`` X is
            compared.
        headers: The request's headers (for the beta set).
    """
    asked = body.get("diagnostics")
    previous = asked.get("previous_message_id") if isinstance(asked, dict) else None
    if previous is None:
        return None
    origin = next(
        (
            r
            for r in earlier
            if r.status == 200 and isinstance(r.body, dict) and r.reply.get("id") == previous
        ),
        None,
    )
    if origin is None:
        return {"cache_miss_reason": {"type": "previous_message_not_found"}}
    reason = _reason(body, headers, origin)
    if reason is None:
        return None
    entry: dict[str, Any] = {"type": reason}
    if reason != "unavailable":
        entry["cache_missed_input_tokens"] = 0
    return {"cache_miss_reason": entry}
