"""Gemini 3's thought-signature rule on the Interactions wire: where a step is signed.

The rule is the model's, whatever the API: "When using Gemini 3 models, you must pass
back thought signatures during function calling, or you will get a validation error"
(https://ai.google.dev/gemini-api/docs/thought-signatures); only the current turn (the
model's steps since the last user input) is validated, Gemini 1.x / 2.x validate none.
On Interactions the signature is a step's, not a part's: the model's ``thought`` step
carries it ("signature ... Always present, even when the model performs minimal
reasoning", https://ai.google.dev/gemini-api/docs/interactions/thinking), and
server-tool steps may too (research gemini-interactions.md §2.2).

An answer without one (another provider's, Gemini 2.5's with thinking off) gets the
placeholder generateContent documents for calls the model did not make (`SKIP_SIGNATURE`)
as a ``thought`` step of its own right before its first ``function_call`` (`placed`;
the session's own calls get it on every model, as on generateContent, `with_placeholder`):
the step google-genai 3.6.1 types with a ``signature`` (``ThoughtStepParam``; its
``FunctionCallStepParam`` has none, though one stored copy of Google's Interactions guide
shows the placeholder on the call: research §2.2 CONFLICT and §3; the server's choice is
UNVERIFIED without a live key).

One answer of the model is several steps in a row (``thought``, ``model_output``,
``function_call``...), read as one message by the parser; it is signed when any of them
carries a ``signature``. The turn logic is generateContent's
(`contextchef.providers.gemini._signatures`): this module says only where the
Interactions wire keeps a signature (`signed`, `STEPS`), where the placeholder goes
(`placed`), and which recorded thought steps go back at all (`thought_kept`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from contextchef._errors import shown
from contextchef.history._messages import Message, ReasoningPart, ToolCall
from contextchef.history._refused import Refused
from contextchef.providers._hints import hints
from contextchef.providers._keeps import reasoning_refused
from contextchef.providers.gemini._signatures import SKIP_SIGNATURE, StepLayout

__all__ = [
    "FIELD",
    "PLACEHOLDER",
    "STEPS",
    "THOUGHT_NEEDS",
    "placed",
    "signed",
    "thought_before",
    "thought_kept",
    "with_placeholder",
]

FORMAT = "gemini-interactions"
"""The wire's name and ``provider_data`` tag (`_render.FORMAT`)."""
FIELD = "signature"
"""The step field a thought signature is in."""
CLIENT_STEPS = ("user_input", "function_result")
"""The steps the client sends; every other step is the model's (or the server's)."""


def signed(message: Message) -> bool:
    """Whether a model message carries a signature of this wire.

    A ``thought`` step recorded from this API with its ``signature``, or a call recorded
    with one (a ``function_call`` step that came with a ``signature``) or sent after the
    placeholder (`with_placeholder`).
    """
    for part in message.parts:
        if isinstance(part, ReasoningPart) and part.provider == FORMAT:
            step = hints(part.provider_data, FORMAT).get("step")
            if isinstance(step, Mapping) and isinstance(step.get(FIELD), str):
                return True
        elif isinstance(part, ToolCall):
            hint = hints(part.provider_data, FORMAT)
            extra, before = hint.get("extra"), hint.get(THOUGHT)
            if any(
                isinstance(h, Mapping) and isinstance(h.get(FIELD), str) for h in (extra, before)
            ):
                return True
    return False


THOUGHT = "thought_before"
"""The ``provider_data`` hint of a call sent after a placeholder ``thought`` step."""
PLACEHOLDER = {"type": "thought", FIELD: SKIP_SIGNATURE}
"""The ``thought`` step that signs an answer the model did not sign (`SKIP_SIGNATURE`)."""


def with_placeholder(call: ToolCall) -> ToolCall:
    """`call`, to be sent right after the `PLACEHOLDER` thought step (`thought_before`)."""
    data = {**hints(call.provider_data, FORMAT), "provider": FORMAT, THOUGHT: PLACEHOLDER}
    return dataclasses.replace(call, provider_data=data)


def placed(message: Message, call: ToolCall) -> Message:
    """`message` with `call` sent after a ``thought`` step holding the placeholder."""
    signed_call = with_placeholder(call)
    return dataclasses.replace(
        message, parts=tuple(signed_call if p is call else p for p in message.parts)
    )


def thought_before(call: ToolCall) -> dict[str, Any] | None:
    """The ``thought`` step to send right before `call` (`with_placeholder`), or None."""
    step = hints(call.provider_data, FORMAT).get(THOUGHT)
    return dict(step) if isinstance(step, Mapping) else None


THOUGHT_NEEDS = (
    "its recorded thought step and that step's 'signature' (a generateContent thought "
    "signature is bound to that API)"
)
"""What Interactions needs to take reasoning back (`providers._keeps.reasoning_refused`):
its own ``thought`` step, replayed whole with its signature (research §3;
https://ai.google.dev/gemini-api/docs/interactions/thinking)."""


def thought_kept(part: ReasoningPart) -> bool | Refused:
    """True when `part` is this API's own thought step with its signature, else why not.

    The docs give every thought step a ``signature`` ("Always present, even when the
    model performs minimal reasoning"): a step without one, hand-built, has nothing for
    the server to verify and is left out.
    """
    step = hints(part.provider_data, FORMAT).get("step") if part.provider == FORMAT else None
    if step is None:
        return reasoning_refused(part, FORMAT, THOUGHT_NEEDS)
    if not isinstance(step.get("signature"), str):
        got = shown(step["signature"], 40) if "signature" in step else "none"
        return Refused(
            f"its thought step needs a string 'signature' (the API gives each one), got {got}"
        )
    return True


def _type(step: Mapping[str, Any]) -> object:
    return step.get("type")


STEPS = StepLayout(
    opens_turn=lambda step: _type(step) == "user_input",
    model=lambda step: _type(step) not in CLIENT_STEPS,
    calls=lambda step: _type(step) == "function_call",
    signs=lambda step: isinstance(step.get(FIELD), str),
    joined=True,
)
"""``input`` steps: the model's steps in a row are one step of the turn, signed by any."""
