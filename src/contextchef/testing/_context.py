"""Anthropic's server-side context management, as `FakeAnthropic` enforces and applies it.

Sources: ../shared/research/provider-context-management.md section 2.1 (SDK 2.16 types
``beta_context_management_config_param.py``, ``beta_clear_tool_uses_20250919_edit_param.py``,
``beta_clear_thinking_20251015_edit_param.py``, ``beta_compact_20260112_edit_param.py``,
``beta_compaction_block.py``, ``beta_compaction_config_param.py``,
``beta_context_management_response.py``; Anthropic docs ``context-editing.md``,
``compaction-threshold.md``, ``compaction-on-demand``, ``compaction-keep-recent-turns.md``)
and anthropic-preserved-thinking.md R21, R22. What the fake does:

* **What the model sees** (`model_view`): the API "drops all content blocks prior to the
  `compaction` block" (compaction-threshold.md), so the view starts at the newest
  ``compaction`` block of ``messages``; the edits of ``context_management.edits`` then
  apply to that view, in their order: ``clear_thinking_20251015`` removes the thinking
  blocks of all but the ``keep`` latest assistant messages holding some (default 1 turn;
  ``"all"`` keeps all), ``clear_tool_uses_20250919`` fires when its ``trigger``
  (``input_tokens`` or ``tool_uses``; default 100,000 input tokens) is exceeded and
  replaces the results of all but the ``keep`` latest tool uses (default 3) with a
  placeholder, skipping ``exclude_tools`` and blanking the inputs ``clear_tool_inputs``
  names, unless less than ``clear_at_least`` input tokens would go. The defaults are
  Anthropic's context-editing page's (mirrored by LangChain's ``ClearToolUsesEdit``); the
  research file does not state them. Each edit that removed something is reported in the
  reply's ``context_management.applied_edits`` (``cleared_input_tokens`` and
  ``cleared_tool_uses`` / ``cleared_thinking_turns``). Token counts are the library's
  estimate (`contextchef._tokens.estimate_tokens`) of the canonical JSON of ``system``,
  ``tools`` and the view; the reply's ``usage.input_tokens`` says the view's count.
* **Threshold compaction** (``compact_20260112``): when the view after the edits reaches
  the ``trigger`` (``input_tokens`` only, at least 50,000, default 150,000), the reply
  starts with a signed ``compaction`` block summarizing it; with
  ``pause_after_compaction: true`` the reply is that block alone (``stop_reason:
  "compaction"``, no scripted turn used).
* **On-demand compaction** (top-level ``compaction: {"type": "summarize"}``): the reply is
  one signed ``compaction`` block, ``stop_reason: "compaction"``, no scripted turn used.
* Refused (`anthropic_context_management_valid`, `anthropic_compaction_closed_turn`,
  `anthropic_compaction_blocks_known`): ``compaction`` together with
  ``context_management``; edits or compaction without their beta
  (``context-management-2025-06-27``, ``compact-2026-01-12``, ``compact-2026-09-04``); an
  unknown edit type or a compaction trigger under 50,000; an on-demand compaction whose
  messages end in an assistant turn with a tool call not answered yet
  (compaction-keep-recent-turns.md); a ``compaction`` block this fake did not return, or
  returned with other values (``compaction_signature_invalid``,
  ``compaction_content_mismatch``: provider-native-disclosure.md section 1.9).

The prefix check on thinking blocks (`contextchef.testing._binding`) starts at the newest
compaction block too (R6, R21).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextchef._tokens import estimate_tokens
from contextchef.testing._body import NO_HEADERS, as_list, betas, canonical, dicts
from contextchef.testing._body import without_cache_control as _plain
from contextchef.testing._claude import claude_model
from contextchef.testing._records import RecordedRequest
from contextchef.testing._replies import Ids
from contextchef.testing._signing import opened, seal

__all__ = [
    "COMPACT_BETA",
    "CONTEXT_MANAGEMENT_BETA",
    "ON_DEMAND_COMPACT_BETA",
    "ContextViews",
    "ModelView",
    "anthropic_compaction_blocks_known",
    "anthropic_compaction_closed_turn",
    "anthropic_context_management_valid",
    "compaction_start",
    "model_view",
]

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The ``anthropic-beta`` value for ``clear_tool_uses`` / ``clear_thinking`` edits."""
COMPACT_BETA = "compact-2026-01-12"
"""The ``anthropic-beta`` value for threshold compaction (``compact_20260112``)."""
ON_DEMAND_COMPACT_BETA = "compact-2026-09-04"
"""The ``anthropic-beta`` value for on-demand compaction (top-level ``compaction``)."""

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
_BETA_OF = {
    CLEAR_TOOL_USES: CONTEXT_MANAGEMENT_BETA,
    CLEAR_THINKING: CONTEXT_MANAGEMENT_BETA,
    COMPACT: COMPACT_BETA,
}
COMPACT_MIN_TRIGGER = 50_000
"""Fewest input tokens a ``compact_20260112`` trigger may name."""
COMPACT_DEFAULT_TRIGGER = 150_000
"""Input tokens at which ``compact_20260112`` fires when no trigger is given."""
CLEAR_DEFAULT_TRIGGER = 100_000
"""Input tokens above which ``clear_tool_uses_20250919`` fires when no trigger is given."""
CLEAR_DEFAULT_KEEP = 3
"""Tool uses ``clear_tool_uses_20250919`` keeps when no ``keep`` is given."""
THINKING_DEFAULT_KEEP = 1
"""Assistant turns whose thinking ``clear_thinking_20251015`` keeps by default."""
CLEARED = "[cleared by context management]"
"""What a cleared tool result holds in the fake's view (the API's text is not documented)."""
_THINKING = ("thinking", "redacted_thinking")


def compaction_start(messages: object) -> tuple[int, int] | None:
    """(message, block) index of the newest ``compaction`` block, or None."""
    found = None
    for i, message in dicts(messages):
        if message.get("role") == "system":
            continue
        for j, block in dicts(message.get("content")):
            if block.get("type") == "compaction":
                found = (i, j)
    return found


def from_compaction(messages: object) -> list[Any]:
    """`messages` from the newest compaction block on (its message starting with it)."""
    listed = as_list(messages)
    start = compaction_start(listed)
    if start is None:
        return list(listed)
    i, j = start
    first = listed[i]
    return [{**first, "content": as_list(first.get("content"))[j:]}, *listed[i + 1 :]]


def _tokens(body: Mapping[str, Any], messages: Sequence[Any]) -> int:
    parts = (body.get("system"), body.get("tools"), list(messages))
    return sum(estimate_tokens(canonical(part)) for part in parts if part is not None)


@dataclass(frozen=True)
class ModelView:
    """What the model sees of one request, after compaction and context edits."""

    messages: tuple[Any, ...]
    """The messages, from the newest compaction block, edits applied."""
    input_tokens: int
    """The estimated input tokens of ``system``, ``tools`` and `messages`."""
    applied_edits: tuple[dict[str, Any], ...]
    """The reply's ``context_management.applied_edits``."""
    compact: bool = False
    """Whether threshold compaction fires on this request."""
    pause: bool = False
    """Whether it pauses after compacting (``pause_after_compaction``)."""


def _edits(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    config = body.get("context_management")
    return [e for _, e in dicts(config.get("edits"))] if isinstance(config, Mapping) else []


def _value(spec: object, default: int) -> int:
    value = spec.get("value") if isinstance(spec, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _clear_thinking(edit: Mapping[str, Any], messages: list[Any]) -> dict[str, Any] | None:
    keep = edit.get("keep")
    if keep == "all" or (isinstance(keep, Mapping) and keep.get("type") == "all"):
        return None
    turns = [
        i
        for i, m in dicts(messages)
        if m.get("role") == "assistant"
        and any(b.get("type") in _THINKING for _, b in dicts(m.get("content")))
    ]
    cleared = turns[: max(len(turns) - _value(keep, THINKING_DEFAULT_KEEP), 0)]
    for i in cleared:
        content = messages[i]["content"]
        messages[i] = {**messages[i], "content": [b for b in content if not _thinking(b)]}
    return {"type": CLEAR_THINKING, "cleared_thinking_turns": len(cleared)} if cleared else None


def _thinking(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") in _THINKING


def _fires(edit: Mapping[str, Any], tokens: int, uses: int) -> bool:
    trigger = edit.get("trigger")
    if isinstance(trigger, Mapping) and trigger.get("type") == "tool_uses":
        return uses > _value(trigger, 0)
    return tokens > _value(trigger, CLEAR_DEFAULT_TRIGGER)


def _clear_tool_uses(
    edit: Mapping[str, Any], messages: list[Any], tokens: int
) -> dict[str, Any] | None:
    uses = [
        (i, j, block)
        for i, m in dicts(messages)
        if m.get("role") == "assistant"
        for j, block in dicts(m.get("content"))
        if block.get("type") == "tool_use"
    ]
    if not _fires(edit, tokens, len(uses)):
        return None
    kept = _value(edit.get("keep"), CLEAR_DEFAULT_KEEP)
    excluded = set(as_list(edit.get("exclude_tools")))
    inputs = edit.get("clear_tool_inputs")
    targets = [u for u in uses[: max(len(uses) - kept, 0)] if u[2].get("name") not in excluded]
    ids = {block.get("id"): block for _, _, block in targets}
    for _, m in dicts(messages):
        for _, block in dicts(m.get("content")):
            if block.get("type") == "tool_result" and block.get("tool_use_id") in ids:
                block["content"] = [{"type": "text", "text": CLEARED}]
    for _, _, block in targets:
        name = block.get("name")
        if inputs is True or (isinstance(inputs, list) and name in inputs):
            block["input"] = {}
    return {"type": CLEAR_TOOL_USES, "cleared_tool_uses": len(targets)} if targets else None


def model_view(body: Mapping[str, Any]) -> ModelView:
    """What the model sees of `body` (see the module docstring).

    Args:
        body: An Anthropic Messages request that passed the fake's rules.
    """
    edits = _edits(body)
    messages = from_compaction(body.get("messages"))
    if any(e.get("type") in (CLEAR_THINKING, CLEAR_TOOL_USES) for e in edits):
        messages = copy.deepcopy(messages)
    applied: list[dict[str, Any]] = []
    compact: dict[str, Any] | None = None
    for edit in edits:
        before = _tokens(body, messages)
        trial = copy.deepcopy(messages)
        if edit.get("type") == CLEAR_THINKING:
            done = _clear_thinking(edit, trial)
        elif edit.get("type") == CLEAR_TOOL_USES:
            done = _clear_tool_uses(edit, trial, before)
        else:
            compact = edit if edit.get("type") == COMPACT else compact
            continue
        cleared = before - _tokens(body, trial)
        if done is None or cleared < _value(edit.get("clear_at_least"), 0):
            continue
        messages = trial
        applied.append({**done, "cleared_input_tokens": cleared})
    tokens = _tokens(body, messages)
    trigger = _value(compact.get("trigger"), COMPACT_DEFAULT_TRIGGER) if compact else 0
    fires = compact is not None and tokens >= trigger
    pause = fires and compact is not None and compact.get("pause_after_compaction") is True
    return ModelView(tuple(messages), tokens, tuple(applied), compact=fires, pause=pause)


def compaction_block(view: ModelView, ids: Ids) -> dict[str, Any]:
    """A signed ``compaction`` block summarizing `view` (deterministic text)."""
    summary = f"Summary of {len(view.messages)} messages ({view.input_tokens} input tokens)."
    block = {"type": "compaction", "content": summary, "encrypted_content": ids.take("cmpenc_")}
    return {**block, "signature": seal(ids.take("cmpsig_"), canonical(block))}


def compaction_reply(block: Mapping[str, Any], model: str, ids: Ids, tokens: int) -> dict[str, Any]:
    """A ``message`` holding only `block`, ``stop_reason: "compaction"``."""
    return {
        "id": ids.take("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [dict(block)],
        "stop_reason": "compaction",
        "stop_sequence": None,
        "usage": {"input_tokens": tokens, "output_tokens": 0},
    }


def pauses(body: Mapping[str, Any]) -> bool:
    """Whether a ``compact_20260112`` edit asks to pause after compacting."""
    return any(
        e.get("type") == COMPACT and e.get("pause_after_compaction") is True for e in _edits(body)
    )


def manages_context(body: Mapping[str, Any]) -> bool:
    """Whether the request asks for context management or on-demand compaction."""
    return body.get("context_management") is not None or body.get("compaction") is not None


class ContextViews:
    """What the model saw of each request a fake answered, and the replies it shapes.

    `FakeAnthropic` holds one: `unscripted` answers an on-demand (or paused) compaction
    with the block alone, `managed` adds ``context_management``, the view's usage and a
    threshold compaction block to a scripted reply.

    Args:
        ids: The fake's id source (compaction block ids).
        lock: The fake's lock, held while `views` is read.
    """

    def __init__(self, ids: Ids, lock: Any) -> None:
        self._ids = ids
        self._lock = lock
        self._views: list[ModelView] = []

    @property
    def views(self) -> tuple[ModelView, ...]:
        """What the model saw of each request answered from the script or by compaction."""
        with self._lock:
            return tuple(self._views)

    def _seen(self, body: Mapping[str, Any]) -> ModelView:
        view = model_view(body)
        self._views.append(view)
        return view

    def unscripted(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """The compaction block alone: on demand, or paused after threshold compaction."""
        if body.get("compaction") is None and not (pauses(body) and model_view(body).pause):
            return None
        view = self._seen(body)
        block = compaction_block(view, self._ids)
        model = body.get("model") if isinstance(body.get("model"), str) else ""
        reply = compaction_reply(block, str(model), self._ids, view.input_tokens)
        if body.get("context_management") is not None:
            reply["context_management"] = {"applied_edits": list(view.applied_edits)}
        return reply

    def managed(self, reply: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
        """`reply` with ``context_management``, its usage and a threshold compaction block."""
        view = self._seen(body)
        if manages_context(body):
            reply["usage"]["input_tokens"] = view.input_tokens
            reply["context_management"] = {"applied_edits": list(view.applied_edits)}
        if view.compact:
            reply["content"].insert(0, compaction_block(view, self._ids))
        return reply


# -- rules -------------------------------------------------------------------------------


def _edit_problems(k: int, edit: Mapping[str, Any], sent: frozenset[str]) -> Iterator[str]:
    kind = edit.get("type")
    where = f"context_management.edits.{k}"
    if kind not in _BETA_OF:
        yield (
            f"{where}.type: Input tag {kind!r} found using 'type' does not match any of the "
            f"expected tags: {', '.join(repr(t) for t in _BETA_OF)}"
        )
        return
    if _BETA_OF[kind] not in sent:
        yield f"{where}: {kind} requires the `{_BETA_OF[kind]}` value in the anthropic-beta header"
    trigger = edit.get("trigger")
    if kind == COMPACT and trigger is not None:
        ok = isinstance(trigger, Mapping) and trigger.get("type") == "input_tokens"
        if not ok or _value(trigger, 0) < COMPACT_MIN_TRIGGER:
            yield (
                f"{where}.trigger: compaction triggers on input_tokens only, with a value of "
                f"at least {COMPACT_MIN_TRIGGER:,} (got {trigger!r:.80})"
            )


def anthropic_context_management_valid(
    body: Mapping[str, Any],
    earlier: Sequence[RecordedRequest],
    *,
    headers: Mapping[str, str] = NO_HEADERS,
) -> Iterator[str]:
    """``context_management`` and ``compaction`` are well formed, with their betas.

    ``compaction`` "cannot be combined with `context_management`" (SDK 2.16
    ``messages.create`` docstring; research section 2.1); each edit type needs its beta;
    ``compact_20260112`` triggers on ``input_tokens`` only, at 50,000 or more
    (compaction-threshold.md); compaction only on the models taking it (`ClaudeModel`).
    """
    sent = betas(headers)
    config, compaction = body.get("context_management"), body.get("compaction")
    if config is not None and compaction is not None:
        yield "compaction: cannot be combined with `context_management`; send one of them"
    yield from _unsupported(body, compaction is not None)
    if compaction is not None:
        if ON_DEMAND_COMPACT_BETA not in sent:
            yield (
                f"compaction: requires the `{ON_DEMAND_COMPACT_BETA}` value in the "
                "`anthropic-beta` header"
            )
        if not isinstance(compaction, Mapping) or compaction.get("type") != "summarize":
            yield f"compaction.type: Input should be 'summarize' (got {compaction!r:.80})"
    if config is None:
        return
    if not isinstance(config, Mapping) or not isinstance(config.get("edits", []), list):
        yield "context_management: Input should be an object with an `edits` list"
        return
    for k, edit in enumerate(as_list(config.get("edits"))):
        if not isinstance(edit, Mapping):
            yield f"context_management.edits.{k}: Input should be a valid dictionary"
            continue
        yield from _edit_problems(k, edit, sent)


def _unsupported(body: Mapping[str, Any], on_demand: bool) -> Iterator[str]:
    """Compaction on a known Claude model that does not take it (`ClaudeModel`)."""
    name = body.get("model")
    model = claude_model(name)
    if model is None:
        return
    threshold = any(e.get("type") == COMPACT for e in _edits(body))
    if threshold and not model.compaction:
        yield f"context_management: compact_20260112 is not supported on {model.label}"
    bedrock = isinstance(name, str) and "anthropic." in name.lower()
    if on_demand and (bedrock or not model.compaction_on_demand):
        where = "on Bedrock" if bedrock and model.compaction_on_demand else f"on {model.label}"
        yield f"compaction: on-demand compaction is not supported {where}"


def anthropic_compaction_closed_turn(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """An on-demand compaction's messages do not end with a tool call not answered yet.

    compaction-keep-recent-turns.md: "If the messages you send end in an assistant turn
    whose tool call has no result yet, the API rejects" it; cut before the call.
    """
    if body.get("compaction") is None:
        return
    conversation = [m for _, m in dicts(body.get("messages")) if m.get("role") != "system"]
    last = conversation[-1] if conversation else None
    if isinstance(last, dict) and last.get("role") == "assistant":
        calls = [b.get("id") for _, b in dicts(last.get("content")) if b.get("type") == "tool_use"]
        if calls:
            yield (
                f"messages: the messages to compact end in an assistant turn whose tool calls "
                f"{calls} have no result yet; cut before that turn or send its tool_result"
            )


def _returned(earlier: Sequence[RecordedRequest]) -> dict[object, dict[str, Any]]:
    found: dict[object, dict[str, Any]] = {}
    for request in earlier:
        if request.status == 200:
            for _, block in dicts(request.reply.get("content")):
                if block.get("type") == "compaction":
                    found[block.get("signature")] = block
    return found


def anthropic_compaction_blocks_known(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """Every ``compaction`` block sent is one this fake returned, unchanged.

    The block is signed and "to be sent back with the block verbatim" (SDK
    ``beta_compaction_block.py``); the API answers ``compaction_signature_invalid`` or
    ``compaction_content_mismatch`` otherwise (provider-native-disclosure.md 1.9). Only
    ``cache_control`` may be added.
    """
    returned: dict[object, dict[str, Any]] | None = None
    for i, message in dicts(body.get("messages")):
        for j, block in dicts(message.get("content")):
            if block.get("type") != "compaction":
                continue
            returned = _returned(earlier) if returned is None else returned
            origin = returned.get(block.get("signature"))
            unsigned = {k: v for k, v in _plain(block).items() if k != "signature"}
            if origin is None and opened(block.get("signature"), canonical(unsigned)) is not None:
                continue  # sealed by a fake with the same key (another process): unchanged
            if origin is None:
                yield (
                    f"messages.{i}.content.{j}: compaction_signature_invalid: this compaction "
                    "block was not returned by the API; send back blocks exactly as returned"
                )
            elif canonical(_plain(block)) != canonical(origin):
                yield (
                    f"messages.{i}.content.{j}: compaction_content_mismatch: the block "
                    "differs from the one returned; send it back unchanged"
                )
