"""Gemini thought signatures: which are well-formed, which calls need one, the placeholder.

A thought signature is opaque base64 text the model puts on a part (a ``thought`` part, a
text, a ``function_call``) and wants back unchanged; Gemini 3 and later refuse a function
call of the current turn without its signature, Gemini 2.5 does not validate them
(https://ai.google.dev/gemini-api/docs/thought-signatures; research
provider-context-management.md §2.3, gemini-interactions.md §3). Used by
`contextchef.providers.gemini._render.GeminiAdapter`.
"""

from __future__ import annotations

import base64
import dataclasses
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.history._normalize import Change
from contextchef.providers._base import ModelRules, hints

__all__ = [
    "CONTENTS",
    "FORMAT",
    "SKIP_SIGNATURE",
    "UNSIGNED_STEPS",
    "StepLayout",
    "bad_signature",
    "drop_bad_signatures",
    "is_base64",
    "sign_current_turn",
    "signs_calls",
    "unsigned_sent_step",
]

FORMAT = "gemini"
"""The ``provider_data`` tag of parts recorded from Gemini."""

_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
_SIGNATURE_KEYS = ("thought_signature", "thoughtSignature")


def is_base64(value: object) -> bool:
    """Whether `value` is text the google-genai SDK decodes into a ``bytes`` field.

    Standard or URL-safe base64, padding optional, no stray bits in the last symbol: what
    the SDK's ``Part.thought_signature`` (pydantic ``bytes``, base64) accepts; anything
    else (a number, an object, ``None``, ``"@@"``) fails every request it is sent in.
    """
    if not isinstance(value, str) or not _BASE64.fullmatch(value):
        return False
    body = value.rstrip("=").replace("-", "+").replace("_", "/")
    if len(body) % 4 == 1:
        return False
    raw = base64.b64decode(body + "=" * (-len(body) % 4))
    return base64.b64encode(raw).decode("ascii").rstrip("=") == body


def bad_signature(recorded: Mapping[str, Any]) -> str | None:
    """The key of a recorded part's thought signature that is not base64 text, or None."""
    return next((k for k in _SIGNATURE_KEYS if k in recorded and not is_base64(recorded[k])), None)


_UNSIGNED = re.compile(r"(?:^|/)gemini-[12](?:[.-]|$)", re.IGNORECASE)
"""Gemini models that do not validate thought signatures (1.x, 2.x; ``models/`` or Vertex
``publishers/google/models/`` prefixes allowed)."""

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The thought signature Gemini accepts on a function call the model did not make."""


def _signed(message: Message) -> bool:
    """Whether a model step carries a thought signature recorded from Gemini."""
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            recorded = hints(part.provider_data, FORMAT).get("part") or {}
            if any(is_base64(recorded.get(k)) for k in _SIGNATURE_KEYS):
                return True
        elif isinstance(part, (TextPart, ToolCall)) and is_base64(
            (hints(part.provider_data, FORMAT).get("extra") or {}).get("thought_signature")
        ):
            return True
    return False


def _without_bad_signature(part: Part) -> Part:
    """`part` without a recorded ``thought_signature`` that is not base64 text."""
    if not isinstance(part, (TextPart, MediaPart, ToolCall, ToolResult)):
        return part  # a thought part is dropped whole (`_reasoning`)
    if part.provider_data is None:
        return part
    hint = hints(part.provider_data, FORMAT)
    extra = hint.get("extra")
    if not isinstance(extra, Mapping):
        return part
    if bad_signature(extra) is None:
        return part
    kept = {k: v for k, v in extra.items() if k not in _SIGNATURE_KEYS}
    return dataclasses.replace(part, provider_data={**hint, "extra": kept})


def drop_bad_signatures(
    messages: Sequence[Message], offset: int
) -> tuple[list[Message], list[Change]]:
    """`messages` without malformed thought signatures on text / call / media parts.

    The part is kept (it is the model's text or call); its signature, which the SDK would
    refuse on every later request, is dropped and reported (``dropped_bad_signature``).
    A call of the current turn left unsigned may then get `SKIP_SIGNATURE` (`sign_current_turn`).
    """
    if all(getattr(p, "provider_data", None) is None for m in messages for p in m.parts):
        return list(messages), []  # nothing recorded: no signature to check
    out: list[Message] = []
    changes: list[Change] = []
    for i, msg in enumerate(messages):
        parts = tuple(map(_without_bad_signature, msg.parts))
        if all(map(operator.is_, parts, msg.parts)):
            out.append(msg)
            continue
        out.append(dataclasses.replace(msg, parts=parts))
        changes.append(
            Change(
                kind="dropped_bad_signature",
                index=offset + i,
                detail=f"message {offset + i}: a thought_signature that is not base64 text "
                "dropped (the SDK refuses it)",
            )
        )
    return out, changes


def signs_calls(model: str) -> bool:
    """Whether `model` refuses an unsigned function call of the current turn.

    Every model but Gemini 1.x / 2.x: "When using Gemini 3 models, you must pass back
    thought signatures during function calling, or you will get a validation error";
    2.5 returns them (with thinking on) but does not validate them
    (https://ai.google.dev/gemini-api/docs/thought-signatures). An unknown name is taken
    to validate them (the safe default: the placeholder is accepted either way).
    """
    return _UNSIGNED.search(model) is None


def _current_turn(messages: Sequence[Message]) -> int:
    """Where the current turn starts: after the last user message holding more than results."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.role == "user" and any(not isinstance(p, ToolResult) for p in msg.parts):
            return i + 1
    return 0


def _on_call(message: Message, call: ToolCall) -> Message:
    """`message` with `SKIP_SIGNATURE` as `call`'s ``thought_signature`` (generateContent)."""
    data: dict[str, Any] = {**hints(call.provider_data, FORMAT), "provider": FORMAT}
    data["extra"] = {**(data.get("extra") or {}), "thought_signature": SKIP_SIGNATURE}
    placed = dataclasses.replace(call, provider_data=data)
    return dataclasses.replace(
        message, parts=tuple(placed if p is call else p for p in message.parts)
    )


def sign_current_turn(
    messages: Sequence[Message],
    offset: int,
    rules: ModelRules | None,
    *,
    fmt: str = FORMAT,
    signed: Callable[[Message], bool] = _signed,
    place: Callable[[Message, ToolCall], Message] = _on_call,
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    """`messages` with `SKIP_SIGNATURE` on the current turn's unsigned steps, where needed.

    Only where the model validates signatures (`ModelRules.signed_calls`; None `rules`:
    assumed). The current turn is the model's steps since the last user text; a step
    (model message) with calls and no thought signature gets the placeholder with its first
    call, the one Gemini's docs give for calls the model did not make ("transfer a
    conversation trace from another model, or inject custom function calls"), each
    reported as ``signed_foreign_call`` (history index counted from `offset`). On a model
    that does not validate them, every call goes as recorded: Gemini's own calls,
    returned unsigned with thinking off, are not edited.

    The wire says where a signature is: `fmt` is its ``provider_data`` tag, `signed`
    whether a model message carries one, and `place` gives a message the placeholder
    with its first call (generateContent: the call part's ``thought_signature``;
    Interactions: a ``thought`` step before it).
    """
    out = list(messages)
    changes: list[Change] = []
    if rules is not None and not rules.signed_calls:
        return tuple(out), ()
    for i in range(_current_turn(out), len(out)):
        first = next((p for p in out[i].parts if isinstance(p, ToolCall)), None)
        if first is None or out[i].role != "assistant" or signed(out[i]):
            continue
        out[i] = place(out[i], first)
        own = bool(hints(first.provider_data, fmt))
        why = "was recorded from Gemini unsigned" if own else "has no Gemini thought signature"
        model = f", model {rules.model[:60]!r} needs signed calls" if rules is not None else ""
        changes.append(
            Change(
                kind="signed_foreign_call",
                index=offset + i,
                call_id=first.id,
                detail=f"message {offset + i}: call {first.id[:80]!r} {why}{model}; sent with "
                f"{SKIP_SIGNATURE!r}",
            )
        )
    return tuple(out), tuple(changes)


UNSIGNED_STEPS = "function calls in the current turn without a thought signature"
"""What a model that validates signatures refuses (`unsigned_sent_step`), for the edit's cause."""

_SCANNED = object()
"""The ledger cache's key for how far `unsigned_sent_step` read a ledger's wire."""

Entry = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class StepLayout:
    """How a Gemini wire lays the model's steps out in the entries it sends.

    Attributes:
        opens_turn: The entry is the user's turn (what Gemini's "current turn" starts after).
        model: The entry is the model's (or part of the model's step).
        calls: The model's entry holds a function call.
        signs: The model's entry carries a thought signature.
        joined: Consecutive model entries are one step (Interactions: ``thought``,
            ``model_output`` and ``function_call`` steps of one answer); False: each model
            entry is a step of its own (generateContent: one ``model`` content).
    """

    opens_turn: Callable[[Entry], bool]
    model: Callable[[Entry], bool]
    calls: Callable[[Entry], bool]
    signs: Callable[[Entry], bool]
    joined: bool = False


def _parts(entry: Entry) -> list[Mapping[str, Any]]:
    parts = entry.get("parts")
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, (list, tuple)) else []


def _opens_turn(entry: Entry) -> bool:
    """A ``user`` content holding more than function responses: the user's turn."""
    return entry.get("role") == "user" and any(
        not ("function_response" in p or "functionResponse" in p) for p in _parts(entry)
    )


CONTENTS = StepLayout(
    opens_turn=_opens_turn,
    model=lambda entry: entry.get("role") == "model",
    calls=lambda entry: any("function_call" in p or "functionCall" in p for p in _parts(entry)),
    signs=lambda entry: any(
        isinstance(p.get(k), str) for p in _parts(entry) for k in _SIGNATURE_KEYS
    ),
)
"""generateContent's ``contents``: a ``model`` content is one step, signed on any part."""


def unsigned_sent_step(
    entries: Sequence[Entry], memo: dict[Any, Any], layout: StepLayout = CONTENTS
) -> int | None:
    """The first of `entries` (a ledger's wire) in their last turn opening an unsigned step.

    The last turn is the model's steps after the last user entry holding more than
    function results (Gemini's "current turn", which Gemini 3 validates: "Function call
    is missing a thought_signature in functionCall parts",
    https://ai.google.dev/gemini-api/docs/thought-signatures); a step is unsigned when it
    holds a function call and none of its entries carries a signature (`layout` says
    which entries make a step and what signs one). Such a step was sent to a model that
    does not validate signatures (Gemini 2.5: its own calls come back unsigned with
    thinking off), and the turn is still open. `entries` is a ledger's wire: appended or
    cut back and rendered again (new objects), never changed in place; `memo` keeps how
    many were read, the last of them, what was found and the step being read, so only
    new entries are read.
    """
    held: tuple[int, object, int | None, tuple[int, bool, bool] | None]
    held = memo.get(_SCANNED, (0, None, None, None))
    read, last, found, step = held
    if read > len(entries) or (read and entries[read - 1] is not last):
        read, found, step = 0, None, None  # cut back: read again
    if not read:  # nothing read (a restore, a new ledger): from the last turn's start only
        opens = layout.opens_turn
        read = next((i for i in range(len(entries) - 1, -1, -1) if opens(entries[i])), 0)
    for i in range(read, len(entries)):
        entry = entries[i]
        if layout.model(entry):
            if step is None or not layout.joined:
                step = (i, False, False)
            start, calls, signs = step
            step = (start, calls or layout.calls(entry), signs or layout.signs(entry))
        else:
            step = None
            if layout.opens_turn(entry):
                found = None
        if step is not None and step[1] and found in (None, step[0]):
            found = None if step[2] else step[0]  # a step signed further on is signed
    memo[_SCANNED] = (len(entries), entries[-1] if entries else None, found, step)
    return found
