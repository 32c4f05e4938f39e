"""OpenAI Responses server-side compaction, as `FakeResponses` enforces and answers it.

Source: ../shared/research/provider-context-management.md section 2.2 (openai-python 3.60
types ``response_create_params.ContextManagement``, ``response_compaction_item.py``,
``response_compaction_item_param_param.py``; the compaction guide on
developers.openai.com):

* a request may carry ``context_management: [{"type": "compaction", "compact_threshold":
  N}]`` ("Currently only 'compaction' is supported"; `responses_context_management_valid`);
* when the input from the newest ``compaction`` item on reaches ``N`` tokens (the library's
  estimate, `contextchef._tokens.estimate_tokens`, of the canonical JSON of
  ``instructions``, ``tools`` and those items) the response's ``output`` starts with a
  ``compaction`` item ``{"type": "compaction", "id": "cmp_0001", "encrypted_content":
  ...}``; with stateless chaining "you can drop items that came before the most recent
  compaction item", so the count starts there. A threshold of ``null`` leaves the choice
  to the server, which the fake never makes;
* ``POST /v1/responses/compact`` (`compacted_response`) answers a ``response.compaction``
  object whose ``output`` is "a list of all user messages, followed by a single
  compaction item" (SDK ``compacted_response.py``); each is an output item with an ``id``
  and ``status`` (the SDK's output item types require both; an ``id`` sent on the input
  item is kept); it uses no scripted turn;
* the item is opaque and readable only by OpenAI (OpenRouter: "readable only by the
  producing provider"): a ``compaction`` input item whose ``encrypted_content`` this fake
  did not return, or with another ``id``, is refused (`responses_compaction_items_known`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef._tokens import estimate_tokens
from contextchef.testing._body import as_list, canonical, dicts
from contextchef.testing._records import RecordedRequest
from contextchef.testing._replies import Ids
from contextchef.testing._signing import opened, seal

__all__ = [
    "COMPACT_PATH",
    "compacted_response",
    "compaction_item",
    "responses_compaction_items_known",
    "responses_context_management_valid",
]


def _threshold(body: Mapping[str, Any]) -> int | None:
    for _, entry in dicts(body.get("context_management")):
        value = entry.get("compact_threshold")
        if entry.get("type") == "compaction" and isinstance(value, int):
            return value
    return None


def input_tokens_since_compaction(body: Mapping[str, Any]) -> int:
    """Estimated input tokens from the newest ``compaction`` input item on."""
    items = as_list(body.get("input")) if isinstance(body.get("input"), list) else []
    start = max((i for i, item in dicts(items) if item.get("type") == "compaction"), default=0)
    text = body.get("input") if isinstance(body.get("input"), str) else None
    parts: tuple[Any, ...] = (body.get("instructions"), body.get("tools"), items[start:], text)
    return sum(estimate_tokens(canonical(part)) for part in parts if part is not None)


def compaction_item(body: Mapping[str, Any], ids: Ids) -> dict[str, Any] | None:
    """The ``compaction`` output item `body` earns, or None below its threshold."""
    threshold = _threshold(body)
    if threshold is None or input_tokens_since_compaction(body) < threshold:
        return None
    return _sealed_item(ids)


def _sealed_item(ids: Ids) -> dict[str, Any]:
    """A ``compaction`` item whose ``encrypted_content`` seals its id (`_signing`)."""
    item_id = ids.take("cmp_")
    content = seal(ids.take("cmpenc_"), "", {"id": item_id})
    return {"type": "compaction", "id": item_id, "encrypted_content": content}


COMPACT_PATH = "/v1/responses/compact"
"""The standalone compaction endpoint."""


def _parts(content: object) -> object:
    """Message content as a list of parts (a string becomes one ``input_text``)."""
    return [{"type": "input_text", "text": content}] if isinstance(content, str) else content


def compacted_response(body: Mapping[str, Any], ids: Ids) -> dict[str, Any]:
    """The ``response.compaction`` object for a ``/responses/compact`` request `body`."""
    raw = body.get("input")
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else as_list(raw)
    users = [
        {"id": ids.take("msg_"), "status": "completed", "type": "message", **item}
        | {"content": _parts(item.get("content"))}
        for _, item in dicts(items)
        if item.get("role") == "user"
    ]
    item = _sealed_item(ids)
    tokens = input_tokens_since_compaction(body)
    usage = {
        "input_tokens": tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens,
    }
    return {
        "id": ids.take("resp_"),
        "object": "response.compaction",
        "created_at": 0,
        "output": [*users, item],
        "usage": usage,
    }


def responses_context_management_valid(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """``context_management`` is a list of ``compaction`` entries with a whole threshold."""
    config = body.get("context_management")
    if config is None:
        return
    if not isinstance(config, list):
        yield "context_management: expected an array of context management entries"
        return
    for k, entry in enumerate(config):
        if not isinstance(entry, dict):
            yield f"context_management[{k}]: expected an object"
            continue
        if entry.get("type") != "compaction":
            yield (
                f"context_management[{k}].type: {entry.get('type')!r} is not supported; "
                "currently only 'compaction' is supported"
            )
        value = entry.get("compact_threshold")
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            yield f"context_management[{k}].compact_threshold: expected an integer or null"
        elif isinstance(value, int) and value < 1:
            yield f"context_management[{k}].compact_threshold: must be positive (got {value})"


def responses_compaction_items_known(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """Every ``compaction`` input item is one this fake returned, unchanged.

    Its ``encrypted_content`` is readable only by the provider that produced it (research
    section 2.2), so a foreign or edited one cannot be decrypted.
    """
    returned: dict[object, object] | None = None
    for i, item in dicts(body.get("input")):
        if item.get("type") != "compaction":
            continue
        if returned is None:
            returned = {
                out.get("encrypted_content"): out.get("id")
                for r in earlier
                if r.status == 200
                for _, out in dicts(r.reply.get("output"))
                if out.get("type") == "compaction"
            }
        content = item.get("encrypted_content")
        claims = opened(content, "")  # sealed by a fake with the same key (another process)
        if claims is not None and item.get("id", claims.get("id")) == claims.get("id"):
            continue
        if content not in returned or item.get("id", returned[content]) != returned[content]:
            yield (
                f"input[{i}]: the compaction item's encrypted_content could not be decrypted "
                "or verified; send back compaction items exactly as this API returned them "
                "(items from another provider or account are not readable)"
            )
