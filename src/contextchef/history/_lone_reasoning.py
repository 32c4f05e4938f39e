"""Reasoning that no output of its turn follows: left out where the target refuses it.

OpenAI's Responses API refuses an ``input`` whose ``reasoning`` item is not followed by
the item of the model's turn it belongs to (a ``message``, a ``function_call``...):
"Item 'rs_…' of type 'reasoning' was provided without its required following item."
(``invalid_request_error``, ``param: "input"``; recorded in continuedev/continue#8933,
vercel/ai#7099, mastra-ai/mastra#14048, openai/openai-node#1567; the fake's rule is
`contextchef.testing.responses_reasoning_followed`). A reply cut at
``max_output_tokens`` while the model was still reasoning (``status: "incomplete"``) is
only such an item, and a host may remove a turn's output and leave its reasoning.

`HistoryRules.reasoning_needs_output` turns on `drop_lone_reasoning`: in each run of
consecutive assistant messages (one model turn on the wire), the reasoning parts after the
run's last other part are left out of what is sent, each message reported as
``dropped_thinking``; the history keeps them. `normalize` sees only messages not sent
before (`Continuation`), so what an earlier request sent is never edited (append-only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from contextchef.history._messages import Message, ReasoningPart

__all__ = ["drop_lone_reasoning"]


def drop_lone_reasoning(
    indexed: list[tuple[int, Message]], report: Callable[[int, str], None]
) -> list[tuple[int, Message]]:
    """`indexed` without the reasoning no other part of its turn follows (see the module).

    Args:
        indexed: (history index, message) pairs, as `normalize`'s steps hold them.
        report: Called with the history index and a detail per message that lost reasoning.

    Returns:
        The pairs, messages rebuilt only where reasoning was left out (a message left empty
        stays, for `normalize`'s next step to drop).
    """
    out = list(indexed)
    followed = False  # a later part of the assistant run being read follows this message
    for k in range(len(out) - 1, -1, -1):  # last first: a run's last other part found first
        i, message = out[k]
        if message.role != "assistant":
            followed = False
            continue
        if followed:
            continue
        last = max(
            (j for j, p in enumerate(message.parts) if not isinstance(p, ReasoningPart)),
            default=-1,
        )
        if last + 1 < len(message.parts):
            out[k] = (i, replace(message, parts=message.parts[: last + 1]))
            report(
                i,
                f"message {i}: its reasoning was left out of the request, since no output "
                "of its turn follows it (a reply cut while reasoning, or its output "
                "removed), and the provider refuses reasoning without its following item",
            )
        followed = last >= 0
    return out
