"""`normalize`'s one pass over a history that needs no repair (messages layer).

Most histories a session compiles are valid already (an imported conversation, a host's
own loop). `valid_as_is` finds that in one pass over the parts, so `normalize` gives the
history back without its repair steps; anything it is not sure of goes to the steps,
which repair and report (tests/history/test_normalize_as_is.py runs both ways).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol

from contextchef.history._arguments import parse_json_object
from contextchef.history._call_names import legal_name
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.history._refused import Keeps

__all__ = [
    "index_calls",
    "is_json_object",
    "keeps_plain_parts",
    "kept_parse",
    "placed",
    "valid_as_is",
]

_PLAIN_KEPT: set[Callable[..., object]] = set()
"""`keeps` functions marked by `keeps_plain_parts`."""


def keeps_plain_parts(keeps: Callable[..., object]) -> None:
    """Mark an adapter class's ``keeps`` function as keeping every plain part.

    Plain: a `TextPart` with visible text, a `ToolCall` and a `ToolResult`, each of
    exactly that type. `valid_as_is` then asks that method about other parts only (one
    call less per message of a long history); a subclass overriding it is asked about
    every part again. `contextchef.providers.get_adapter` marks the target table's
    adapters, and tests/history/test_keeps_plain.py holds each of them to it.
    """
    _PLAIN_KEPT.add(keeps)


class _Rules(Protocol):
    """What is read of `contextchef.history._normalize.HistoryRules`."""

    @property
    def alternate_roles(self) -> bool: ...
    @property
    def results_first(self) -> bool: ...
    @property
    def assistant_media(self) -> bool: ...

    @property
    def results_any_order(self) -> bool: ...

    @property
    def reasoning_needs_output(self) -> bool: ...


def valid_as_is(
    history: tuple[Message, ...],
    rules: _Rules,
    keeps: Keeps | None,
    earlier: Collection[str] | None,
) -> bool:
    """True when every step of `normalize` would leave `history` as it is, with no note.

    One pass over the parts, for the common case of a history that is valid already (an
    imported conversation, a host's own loop): each part kept by `keeps`, no media in a
    model turn the target refuses, arguments that are a JSON object, call names every
    provider takes back, no blank text; call ids new; each batch of calls answered, in
    order, by the leading parts of the user message right after it (and only by them
    where results are not first); no other result; no empty message; no leading
    assistant turn; roles alternating where the target wants that; no run of assistant
    messages ending with reasoning where the target refuses it (`reasoning_needs_output`).
    Anything else: False, and the steps run (and report). `earlier`: the ids of calls already sent
    (`Continuation.calls`), None for a history from the start.

    True also means every entry passes `check_message` (roles ``user`` / ``assistant``,
    parts of the exact part types, each in a role that may hold it), so `normalize` runs
    that check only when this is False.
    """
    seen: set[str] = set()
    want: list[str] = _NO_CALLS  # ids of the calls the message being read must answer first
    if earlier is None and history and history[0].role == "assistant":
        return False  # a user turn goes first
    earlier = earlier or ()
    alternate, last = rules.alternate_roles, ""
    lone, open_reasoning = rules.reasoning_needs_output, False  # `history._lone_reasoning`
    method = getattr(keeps, "__func__", None)  # compared by identity: any object may come
    plain = keeps is None or any(method is f for f in _PLAIN_KEPT)
    for message in history:
        parts, role = message.parts, message.role
        if (
            role not in _ROLES
            or not parts
            or (want and role != "user")
            or (role == last and alternate)
            or (open_reasoning and role != "assistant")
        ):
            return False
        open_reasoning = lone and role == "assistant" and type(parts[-1]) is ReasoningPart
        answered, want = want, _NO_CALLS  # (a list made only for a message with calls)
        if answered and (
            len(parts) < len(answered) or (not rules.results_first and len(parts) > len(answered))
        ):
            return False
        answered = _in_given_order(parts, answered, rules.results_any_order)
        for pos, part in enumerate(parts):
            kept = plain  # a plain part is kept by a marked `keeps` (no call for it)
            if pos < len(answered):
                if type(part) is not ToolResult or part.call_id != answered[pos]:
                    return False
            elif type(part) is TextPart:  # the commonest part first, tested here (no call)
                visible = part.text and not part.text.isspace()  # `strip()`'s test, no copy
                kept = kept and bool(visible)
                if part.provider_data is None and not visible:
                    return False
            elif type(part) is ToolCall:
                if role != "assistant" or part.id in seen or part.id in earlier:
                    return False
                if not is_json_object(part) or not legal_name(part.name):
                    return False
                seen.add(part.id)
                want = [*want, part.id]
            elif not _part_as_is(part, role, rules):
                return False
            else:
                kept = False  # media, reasoning, a provider part: the target decides
            if not kept and keeps is not None and not keeps(part):
                return False
        last = role
    return not want and not open_reasoning  # the last batch answered, no lone reasoning


def _in_given_order(parts: tuple[Part, ...], answered: list[str], any_order: bool) -> list[str]:
    """The batch's call ids in the order `parts` open with their results, if they do.

    Only for a target that takes a batch's results in any order (`any_order`,
    Anthropic); otherwise `answered` itself.
    """
    if not any_order or not answered:
        return answered
    lead = [p.call_id if type(p) is ToolResult else "" for p in parts[: len(answered)]]
    return lead if lead != answered and set(lead) == set(answered) else answered


def _part_as_is(part: Part, role: str, rules: _Rules) -> bool:
    """A part (not a leading result, text or a call) that steps 1-2 keep as it is."""
    if type(part) is MediaPart:
        return role != "assistant" or rules.assistant_media
    if type(part) is ReasoningPart:
        return role == "assistant"
    return type(part) is ProviderPart  # not a result out of place, nor a subclass


_ROLES = ("user", "assistant")
_NO_CALLS: list[str] = []  # never changed: `valid_as_is` makes a new list to add to it
_HELD = {
    "user": frozenset({TextPart, MediaPart, ToolResult, ProviderPart}),
    "assistant": frozenset({TextPart, MediaPart, ReasoningPart, ToolCall, ProviderPart}),
}
"""The exact part types each role may hold (`check_message`'s rules)."""


def placed(message: object) -> bool:
    """Whether `check_message` surely passes `message` (found in C, for a long history).

    True: a `Message` whose parts all are of exact part types its role may hold. False
    says nothing: run `check_message` (a subclass, another role, a misplaced part).
    """
    if type(message) is not Message or type(message.role) is not str:
        return False
    held = _HELD.get(message.role)
    return held is not None and held.issuperset(map(type, message.parts))


_PARSES: dict[int, tuple[weakref.ref[ToolCall], Any]] = {}
"""Parses of calls' arguments, by call id while the call lives (never on the call itself:
compile does not touch the caller's objects)."""


def kept_parse(call: ToolCall) -> Any:
    """The parsed arguments kept for `call`, or None.

    Its own copy of the dict it was built from, or `is_json_object`'s parse. Shared:
    copy it before changing it.
    """
    kept = call.__dict__.get("_parsed")
    if kept is not None and kept[0] == id(call):
        return kept[1]
    hit = _PARSES.get(id(call))
    return hit[1] if hit is not None and hit[0]() is call else None


def is_json_object(call: ToolCall) -> bool:
    """Whether `call`'s arguments are a JSON object, parsed once per call object.

    The parse is kept beside the call (`kept_parse`, by object id while it lives), so the
    renderer reads it instead of parsing again
    (`contextchef.providers._base.object_arguments`).
    """
    if kept_parse(call) is not None:
        return True  # a plain copy of a dict, or an earlier parse of this call's text
    value = parse_json_object(call.arguments)
    if isinstance(value, str):
        return False
    key = id(call)
    _PARSES[key] = (weakref.ref(call, lambda _: _PARSES.pop(key, None)), value)
    return True


def index_calls(calls: dict[str, int], messages: Iterable[Message], start: int) -> None:
    """Add each call of `messages` to `calls`: its id -> its message's index from `start`.

    An id already there keeps its index (the first call of that id). The parts are read
    in one pass (no `Message.tool_calls` tuple per message: a ledger indexes every one).
    """
    for offset, message in enumerate(messages, start=start):
        for part in message.parts:
            if isinstance(part, ToolCall):
                calls.setdefault(part.id, offset)
