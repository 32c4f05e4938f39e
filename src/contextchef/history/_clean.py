"""Step 1 of `normalize`: each part fitted to the target, then blank text dropped.

Parts the target cannot receive are dropped (its ``keeps`` says so, with the reason when
it gives one: `Refused`), arguments that are not a JSON object become ``{}``, a call name
not every provider takes back is sent as ``malformed_tool_call``
(`history._call_names.legal_name`; ``provider_data`` as it is), media in a model turn,
where the target takes none, becomes a note; then whitespace-only text parts without
``provider_data`` are dropped (a blank text part that carries a Gemini thought signature
is kept). Each repair is reported through `Report`, in the order made.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal, Protocol

from contextchef._errors import shown
from contextchef.history._as_is import is_json_object
from contextchef.history._call_names import MALFORMED_CALL, legal_name
from contextchef.history._messages import MediaPart, Message, Part, TextPart, ToolCall
from contextchef.history._refused import Keeps, Refused

__all__ = ["Report", "for_target"]

_Kind = Literal[
    "dropped_blank_text",
    "dropped_foreign_part",
    "media_as_text",
    "renamed_illegal_call",
    "replaced_malformed_arguments",
]


class Report(Protocol):
    """How a repair is reported (`normalize`'s log: a `Change` of that kind)."""

    def __call__(self, kind: _Kind, index: int, detail: str, call_id: str | None = None) -> None:
        """Record one repair of the message at history index `index`."""


def for_target(
    message: Message,
    index: int,
    keeps: Keeps | None,
    report: Report,
    *,
    assistant_media: bool,
) -> Message:
    """`message` fitted to the target and cleaned (see the module), in one pass.

    `index` is the message's history index; `assistant_media`: the target takes media in
    a model turn (`HistoryRules.assistant_media`). The message itself when nothing changed.
    """
    parts: list[Part] = []
    changed = False
    blank = 0
    for part in message.parts:
        if (
            type(part) is TextPart
            and (part.text.strip() or part.provider_data is not None)
            and (keeps is None or keeps(part))
        ):  # the common case: no other test applies
            parts.append(part)
            continue
        if isinstance(part, MediaPart) and message.role == "assistant" and not assistant_media:
            report(
                "media_as_text",
                index,
                f"message {index}: the model's {part.media_type} part was sent as a text note "
                "(the target takes media from the user only)",
            )
            part = TextPart(text=f"[{part.media_type} the model produced, not shown here]")
            changed = True
        verdict = True if keeps is None else keeps(part)
        if not verdict:
            why = f": {verdict.reason}" if isinstance(verdict, Refused) else ""
            report(
                "dropped_foreign_part",
                index,
                f"message {index}: dropped a {part.kind} part the target cannot receive{why}",
            )
            changed = True
            continue
        if isinstance(part, ToolCall) and not is_json_object(part):
            report(
                "replaced_malformed_arguments",
                index,
                f"message {index}: arguments of call {shown(part.id)} are not a JSON object; "
                "sent as {}",
                call_id=part.id,
            )
            part = replace(part, arguments="{}")
            changed = True
        if isinstance(part, ToolCall) and not legal_name(part.name):
            report(
                "renamed_illegal_call",
                index,
                f"message {index}: call {shown(part.id)} names {shown(part.name, 80)}, which "
                f"not every provider takes back; sent as {MALFORMED_CALL!r}",
                call_id=part.id,
            )
            part = replace(part, name=MALFORMED_CALL)  # provider_data as it is
            changed = True
        if isinstance(part, TextPart) and not part.text.strip() and part.provider_data is None:
            blank += 1
            continue
        parts.append(part)
    for _ in range(blank):
        report("dropped_blank_text", index, f"message {index}: dropped a whitespace-only text")
    return replace(message, parts=tuple(parts)) if changed or blank else message
