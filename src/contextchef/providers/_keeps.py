"""Which parts a target's adapter can send back (`Adapter.keeps`), and why not.

Plain parts (`PLAIN_PARTS`) every target takes. Reasoning and provider-only parts carry
one provider's recorded data: an adapter keeps its own (reasoning as its `reasoning`
test says; a provider part of its wire format with the least shape that format needs)
and leaves out the rest. A part left out gets a `Refused` verdict naming why (reasoning:
`reasoning_refused`, which provider made it and what the target needs), which the
normalizer puts in its ``dropped_foreign_part`` change.
"""

from __future__ import annotations

from collections.abc import Callable

from contextchef._errors import shown
from contextchef.history._messages import (
    Part,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from contextchef.history._refused import Refused

__all__ = ["PLAIN_PARTS", "keeps_part", "reasoning_refused"]

PLAIN_PARTS = frozenset({TextPart, ToolCall, ToolResult})
"""Part types (exactly these) `keeps_part` always keeps: an adapter's `keeps` tests them
first, without a call (most parts of a history)."""

_TYPED_FORMATS = {
    "anthropic": "content block",
    "responses": "input item",
    "gemini-interactions": "step",
}
"""Wire formats whose every content block, input item or step carries a ``type``."""


def reasoning_refused(part: ReasoningPart, own: str | None, needs: str) -> Refused:
    """Why a target leaves out the reasoning `part`: who made it, what the target needs.

    Reasoning goes back only to the provider that made it, as that provider recorded it:
    a signature, an encrypted item or a recorded block only it can verify or read. A
    target takes back reasoning `own` made (None: none at all, the API has no field for
    it) that carries what `needs` names; another provider's is left out saying who made
    it, and one of `own`'s without what it needs saying what it lacks.
    """
    if own is None:
        return Refused(
            f"it is reasoning made by {shown(part.provider, 40)}; this target takes no "
            "reasoning back"
        )
    if part.provider != own:
        return Refused(
            f"it is reasoning made by {shown(part.provider, 40)}; this target takes back only "
            f"{own!r} reasoning, with {needs}"
        )
    return Refused(f"it is {own!r} reasoning without {needs}")


def keeps_part(
    part: Part, *, fmt: str, reasoning: Callable[[ReasoningPart], bool | Refused]
) -> bool | Refused:
    """Whether an adapter for wire format `fmt` can send `part` (see `Adapter.keeps`).

    Reasoning is kept when `reasoning` accepts it (typically: it came from this provider
    with its recorded block; its `Refused` says why not, `reasoning_refused`);
    provider-only parts when they are in this format and have the least shape it needs
    (a block or item ``type`` where the format has one, else some field): an empty or
    untyped one, hand-built, would make every later request fail. A provider part left
    out gets the reason (`Refused`).
    """
    if isinstance(part, ReasoningPart):
        return reasoning(part)
    if not isinstance(part, ProviderPart):
        return True
    if part.provider != fmt:
        return Refused(f"it holds {shown(part.provider, 40)} data; this target takes {fmt!r} only")
    kind = _TYPED_FORMATS.get(fmt)
    if kind is not None and not isinstance(part.data.get("type"), str):
        got = shown(part.data["type"], 40) if "type" in part.data else "none"
        return Refused(f"{fmt!r} {kind}s need a string 'type' (their kind), got {got}")
    return True if part.data else Refused(f"its {fmt!r} data is empty (an object with no field)")
