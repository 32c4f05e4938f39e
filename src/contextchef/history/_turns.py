"""The model's reply joined to the turn it continues (pure functions on the IR).

A request may end on the model's own turn: a ``prefill`` (the start of the answer, sent as
a trailing assistant message that is not in the history) or a history whose last message
is the model's. The model then continues that turn, and the provider returns only the
continuation: Anthropic's "Claude's response will continue from where the Assistant
message leaves off" (https://docs.claude.com/en/docs/prefill-claudes-response). Stored
as returned, the history would hold ``"a": 1}`` for a prefilled ``{``, and every later
request would show the model its own broken answer. So the reply is stored joined to what
it continues (`continue_turn`), one assistant message holding the whole turn, whatever the
target.

A reply cut at the decode cap and resumed (Gemini Interactions ``continuation_token``) is
joined the same way (`join_turn`), parts after parts.

A reply to a request after which the host appended user messages (a line typed while
the model answered) goes right after what that request sent (`placed_reply`), not after
those lines: the model never saw them.

Every wire reads a reply the same way before any of this (`without_empty_text`): an empty
text part (Gemini ``{"text": ""}``, Anthropic ``{"type": "text", "text": ""}``, Chat
``content: ""`` beside ``tool_calls``, Responses ``output_text`` ``""``) says nothing and is
not stored, and a reply left with no part is an empty reply: no turn, or after a prefill
the prefill alone (`continue_turn`). One rule for every target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from itertools import takewhile

from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolResult,
)

__all__ = ["continue_turn", "join_turn", "placed_reply", "without_empty_text"]


def without_empty_text(
    turn: tuple[Message, ...], carries: Callable[[TextPart], object] | None = None
) -> tuple[Message, ...]:
    """A reply's `turn` without its empty text parts, and without the messages left empty.

    An empty text part (``text == ""``) says nothing: stored, it would sit in the history
    though no wire sends it (Chat would send ``content: ""`` beside the calls). One that
    `carries` something the provider wants back is kept (Gemini: a thought signature, which
    may come on an empty text part: https://ai.google.dev/gemini-api/docs/thought-signatures;
    Gemini Interactions: an empty text step, one of the answer's steps the next request
    chains to as the server returned them).
    A message left with no part goes: a reply that was only empty text is an empty reply,
    as one with no content is (`continue_turn` stores the prefill alone after a prefill).
    Whitespace is text, and stays.
    """

    def said(part: Part) -> bool:
        if not isinstance(part, TextPart) or part.text:
            return True
        return carries is not None and bool(carries(part))

    out: list[Message] = []
    for message in turn:
        parts = tuple(filter(said, message.parts))
        if parts == message.parts:
            out.append(message)
        elif parts:
            out.append(replace(message, parts=parts))
    return tuple(out)


def join_turn(
    history: tuple[Message, ...], turn: tuple[Message, ...], resumed: bool
) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """`history` and `turn`, a one-message model `turn` `resumed` joined to the last turn.

    For a reply that resumes the one before it (a decode cut and continued): the parts
    of both, in order, make one assistant message. Unchanged otherwise.
    """
    if not resumed or len(turn) != 1 or turn[0].role != "assistant" or not history:
        return history, turn
    if history[-1].role != "assistant":
        return history, turn
    return history[:-1], (Message(role="assistant", parts=(*history[-1].parts, *turn[0].parts)),)


def continue_turn(
    history: tuple[Message, ...],
    turn: tuple[Message, ...],
    *,
    prefill: str = "",
    continued: bool = False,
    refused: bool = False,
) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """`history` and the reply `turn`, the reply joined to the model's turn it continues.

    Args:
        history: The history before the reply.
        turn: The reply's messages, as read (one assistant message).
        prefill: The text the request's trailing assistant message held
            (``compile(prefill=)``; ``""``: none). The stored reply starts with it: joined
            into the reply's first part when that is text, else a text part of its own
            before the reply's parts (a reply that is nothing but a stop is the prefill
            alone). Reasoning the reply opens with stays first, and the prefill goes
            with the text after it: the model thought, then wrote the answer the prefill
            starts (Anthropic wants thinking first in a turn; Chat Completions sends a
            turn's text parts joined by a blank line, which would split ``{`` from its
            continuation). An empty reply (no message, or none with a part: every wire
            reads a reply with no content as no message) is the prefill alone.
        continued: The request ended with ``history[-1]``, the model's turn (no prefill):
            the reply replaces that message, its parts after the turn's, the turn's last
            text and the reply's first one joined into one text part.
        refused: The reply is the model's refusal and nothing else it wrote (a Chat
            ``message.refusal``, a Responses ``refusal`` part, with no text beside it:
            `ReadResponse.refused`; text beside a refusal is the prefill's answer, and
            joined to it). It continues nothing: the model did not write the prefill's
            answer, so the stored turn is the refusal alone (no prefill text before it:
            the history would show the model starting an answer it refused), and a
            `continued` turn stays as it was, the refusal after it.

    Returns:
        ``(history, turn)`` to append: unchanged when there is nothing to continue, when
        the reply is not one assistant message, or when it holds a compaction block (the
        provider's summary opens a turn of its own: R22 in anthropic-preserved-thinking.md;
        `providers._compacted.swap_in` places it). A `continued` turn is also left apart
        from a reply holding reasoning, which must open its own turn (Anthropic's
        extended-thinking docs; the normalizer keeps such a message separate too).
    """
    if refused:  # not a continuation: stored as it came
        return history, turn
    if prefill and not any(m.parts for m in turn):  # an empty reply: the prefill is all
        return history, (Message(role="assistant", parts=(TextPart(text=prefill),)),)
    if not (prefill or continued) or len(turn) != 1 or turn[0].role != "assistant":
        return history, turn
    reply = turn[0].parts
    if any(isinstance(p, ProviderPart) and p.data.get("type") == "compaction" for p in reply):
        return history, turn
    if prefill:
        lead = sum(1 for _ in takewhile(lambda p: isinstance(p, ReasoningPart), reply))
        opening: tuple[Part, ...] = (TextPart(text=prefill),)
        parts = (*reply[:lead], *_joined(opening, reply[lead:]))
        return history, (Message(role="assistant", parts=parts),)
    last = history[-1] if history else None
    if last is None or last.role != "assistant" or any(isinstance(p, ReasoningPart) for p in reply):
        return history, turn
    return history[:-1], (Message(role="assistant", parts=_joined(last.parts, reply)),)


def _joined(before: tuple[Part, ...], after: tuple[Part, ...]) -> tuple[Part, ...]:
    """`before` then `after`, the last text of one and the first text of the other joined.

    The joined part keeps the provider data of the earlier part when it has some (the
    item or message the turn opened with: a Responses item id, a Chat message's
    fields), else the later one's: one text, sent as one piece (Chat Completions would
    put a blank line between two).
    """
    last, first = (before[-1] if before else None), (after[0] if after else None)
    if not (isinstance(last, TextPart) and isinstance(first, TextPart)):
        return (*before, *after)
    data = first.provider_data if last.provider_data is None else last.provider_data
    joined = replace(first, text=last.text + first.text, provider_data=data)
    return (*before[:-1], joined, *after[1:])


def placed_reply(
    history: tuple[Message, ...],
    sent: tuple[Message, ...] | None,
    at: int,
    turn: tuple[Message, ...],
) -> tuple[Message, ...] | None:
    """`history` with the reply `turn` right after the `at` messages its request sent.

    `sent` is the history that request was compiled from (None: no request is waiting
    for an answer). When the host has since appended user messages only (text or media,
    no tool result: a line typed while the model answered), the reply goes before them:
    the model answered those `at` messages, and on prefix-check models its thinking is
    bound to them (the checked prefix is every message before the block:
    research/anthropic-preserved-thinking.md R6), so it must not follow what it never
    saw. Tool results rewritten in place since (`clear_tool_results`) keep their places.
    None otherwise (the reply goes at the end): nothing was appended, the history was cut
    or replaced (`compact`, `set_history`), or the reply holds a provider block (a
    compaction is placed by its own rule).
    """
    if sent is None or at >= len(history) or len(sent) < at:
        return None
    later = history[at:]
    known = {id(m) for m in sent}
    if any(id(m) in known or m.role != "user" for m in later):
        return None
    if any(type(p) is not TextPart and type(p) is not MediaPart for m in later for p in m.parts):
        return None
    pairs = zip(history[:at], sent[:at], strict=True)
    if any(a is not b and not (_results(a) and _results(b)) for a, b in pairs):
        return None  # changed since, other than tool results rewritten in place
    if any(isinstance(p, ProviderPart) for m in turn for p in m.parts):
        return None
    return (*history[:at], *turn, *later)


def _results(message: Message) -> bool:
    return any(type(p) is ToolResult for p in message.parts)
