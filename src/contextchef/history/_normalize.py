"""The history normalizer: repair pairing before anything reaches a provider (messages layer).

Providers reject a history in which a tool call is unanswered, a result answers nothing,
results are split from their batch, or a thinking block was edited; one bad message and
every later request fails. `normalize` is the last gate before an adapter renders a
history (after Codex ``normalize.rs`` and OpenHands' view properties). It is a pure
function: the input is never mutated and every repair is reported as a `Change`.

Steps, in order:

1. **Clean** (`history._clean`): parts the target cannot receive are dropped, with the
   reason its ``keeps`` gives (`Refused`); whitespace-only text parts without
   ``provider_data`` are dropped (a blank text part that carries a Gemini thought
   signature is kept); a call whose name not every provider takes back (a history the
   host built: replies are renamed as they are read) is sent under
   ``malformed_tool_call`` (`history._call_names.legal_name`; ``provider_data`` as it is).
2. **Pair**: a call reusing an earlier call's id gets a new one (`renamed_duplicates`;
   results are matched to calls in order), so no exchange is lost; each assistant message
   with calls is followed by one user message whose first parts are the batch's results,
   in call order (or as given, `HistoryRules.results_any_order`); a call with no result
   gets a synthesized error result saying it was interrupted and not executed; a result
   with no earlier call, or a second result for one call, is dropped. A parallel batch is
   never split.
3. **Drop lone reasoning** where refused (`history._lone_reasoning`), then **empty** messages.
4. **Merge roles** (when `HistoryRules.alternate_roles`): consecutive messages of one role
   become one, an assistant message that opens with reasoning included (a reply that
   continued the model's turn): Anthropic combines such turns itself (`_merge_roles`).
5. **Bound reasoning** (when `HistoryRules.bound_reasoning`): reasoning after the first
   repaired part is dropped and the rest normalized again (`contextchef.history._bound`).

`ReasoningPart` values and every ``provider_data`` mapping are never edited, reordered
within their message or removed (except by step 5, which removes reasoning). The output
satisfies `check_pairing` (up to the order of a batch's results, where
`HistoryRules.results_any_order`), and normalizing it again changes nothing
(``normalize(normalize(h).messages).changes == ()``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from contextchef._echo import echo
from contextchef._errors import UsageError, shown
from contextchef.history._as_is import valid_as_is as _valid_as_is
from contextchef.history._bound import drop_invalidated
from contextchef.history._clean import for_target
from contextchef.history._late import late_results_as_text
from contextchef.history._lone_reasoning import drop_lone_reasoning
from contextchef.history._messages import (
    Message,
    Part,
    TextPart,
    ToolCall,
    ToolResult,
    check_message,
    messages_arg,
)
from contextchef.history._refused import Keeps, Refused
from contextchef.history._unique_ids import renamed_duplicates

__all__ = [
    "PORTABLE",
    "Change",
    "ChangeKind",
    "Continuation",
    "HistoryRules",
    "Normalized",
    "Refused",
    "check_pairing",
    "interrupted_result",
    "is_user_turn",
    "normalize",
]


@dataclass(frozen=True, kw_only=True)
class HistoryRules:
    """What one provider requires of a history's shape (data, not branches).

    Attributes:
        name: Preset name; the provider presets use the compile target names.
        alternate_roles: Consecutive messages of one role are merged (Anthropic and Gemini
            want strict user/assistant alternation).
        results_first: The results of a batch lead the user message that follows it and
            share it with that message's other parts (Anthropic: ``tool_result`` blocks
            first, then text). When False, results get a user message of their own and
            the user's other parts follow in a separate message (the OpenAI wire shape:
            ``role: tool`` messages, then a ``role: user`` message).
        keep_all_reasoning: Every reasoning block must be sent back, old turns included
            (DeepSeek with tools: a missing ``reasoning_content`` is a 400), so
            ``clear_thinking`` refuses to drop any.
        assistant_media: The model's turns may hold images and files (Gemini's model
            turns can; Chat, Responses and Anthropic take media from the user only).
            When False, media in an assistant message (a history from Gemini) is sent
            as a short text naming its type, reported as ``media_as_text``.
        results_any_order: The results leading the user message after a batch may come
            in any order: results given in another order than the calls are kept as
            given, not moved. Anthropic: one ``tool_result`` per ``tool_use``, all in the
            next user message, before any other block, matched by ``tool_use_id``
            (https://platform.claude.com/docs/en/agents-and-tools/tool-use/parallel-tool-use,
            ``handle-tool-calls``); moving them would edit the prefix later thinking is
            bound to (research anthropic-preserved-thinking.md R8).
        bound_reasoning: Reasoning is checked against everything sent before it (the
            model runs Anthropic's prefix check, `ModelRules.prefix_check`): a repair in
            front of a reasoning part drops that reasoning and all later reasoning,
            reported as ``dropped_thinking`` (`contextchef.history._bound`).
        reasoning_needs_output: Reasoning that no other part of its turn follows is left
            out (``dropped_thinking``): Responses refuses it (`history._lone_reasoning`).
    """

    name: str
    alternate_roles: bool = False
    results_first: bool = True
    keep_all_reasoning: bool = False
    assistant_media: bool = False
    results_any_order: bool = False
    bound_reasoning: bool = False
    reasoning_needs_output: bool = False


PORTABLE = HistoryRules(name="portable", alternate_roles=True)
"""The default: valid for every provider (alternating roles, results first). Each
provider's own rules live with it (`Profile.history`; by name: `contextchef.PRESETS`)."""

ChangeKind = Literal[
    "added_result_id",
    "dropped_bad_signature",
    "dropped_blank_text",
    "dropped_duplicate_id",
    "dropped_duplicate_result",
    "dropped_empty",
    "dropped_foreign_part",
    "inserted_leading_user",
    "late_result_as_text",
    "dropped_orphan_result",
    "dropped_search_block",
    "dropped_thinking",
    "media_as_text",
    "merged_roles",
    "moved_result",
    "replaced_malformed_arguments",
    "renamed_duplicate_call",
    "renamed_illegal_call",
    "rewrote_reference",
    "signed_foreign_call",
    "split_results",
    "synthesized_result",
    "tool_use_as_text",
]


@dataclass(frozen=True, kw_only=True)
class Change:
    """One repair `normalize` made (or, in `Normalized.notes`, chose not to make).

    Attributes:
        kind: What happened.
        index: Index in the *input* history of the message concerned.
        call_id: The tool call concerned, if any.
        detail: One human-readable sentence.
    """

    kind: ChangeKind
    index: int
    call_id: str | None = None
    detail: str


@dataclass(frozen=True, kw_only=True)
class Normalized:
    """The result of `normalize`.

    Attributes:
        messages: The repaired history.
        changes: Every repair, in the order made; ``()`` when the input was already valid.
        notes: Shapes left as they are on purpose, which repeat on every run and are
            not changes (none at present: an assistant message holding reasoning, once
            kept apart as ``kept_reasoning_separate``, is now merged).
    """

    messages: tuple[Message, ...]
    changes: tuple[Change, ...] = ()
    notes: tuple[Change, ...] = ()


_INTERRUPTED = (
    "Tool call interrupted: {name} (call id {id}) was not executed and returned no result. "
    "Do not assume it ran; call it again if it is still needed."
)


def interrupted_text(name: str, call_id: str) -> str:
    """The text of `interrupted_result` for a call of `name` and `call_id`."""
    return _INTERRUPTED.format(name=echo(name), id=echo(call_id))


def interrupted_result(call: ToolCall) -> ToolResult:
    """The error result `normalize` synthesizes for a call that was never answered."""
    return ToolResult(
        call_id=call.id, name=call.name, content=interrupted_text(call.name, call.id), is_error=True
    )


def is_user_turn(message: Message) -> bool:
    """True for a user message holding something besides tool results (a user turn)."""
    return message.role == "user" and any(not isinstance(p, ToolResult) for p in message.parts)


@dataclass(frozen=True, kw_only=True)
class Continuation:
    """What `normalize` needs to know of messages already sent, to normalize what follows.

    Attributes:
        offset: How many history messages were sent before (indices in changes count
            from there).
        calls: Ids of the tool calls already sent (each answered there): a later call
            reusing one is dropped as a duplicate, a later result for one as a second
            result, unless `sent` answered it as interrupted (`history._late`).
        sent: The messages already sent, as sent (read only for a result of one of
            `calls`).
    """

    offset: int
    calls: Collection[str] = ()
    sent: Sequence[Message] = ()


class _Log:
    def __init__(self, offset: int = 0) -> None:
        self.offset = offset
        self.changes: list[Change] = []

    def add(self, kind: ChangeKind, index: int, detail: str, call_id: str | None = None) -> None:
        self.changes.append(Change(kind=kind, index=index, call_id=call_id, detail=detail))


LEADING_USER_TEXT = "(The conversation so far continues from an earlier context.)"
"""Text of the user turn inserted when a history would open with the assistant."""


def normalize(
    history: Sequence[Message],
    *,
    profile: HistoryRules | None = None,
    keeps: Keeps | None = None,
    after: Continuation | None = None,
) -> Normalized:
    """Repair a history so every provider accepts it (see the module docstring).

    Args:
        history: The messages, oldest first; not mutated.
        profile: The target's rules; None for `PORTABLE` (valid everywhere).
        keeps: The target adapter's test for reasoning / provider-only parts it can
            receive; parts it cannot are dropped first (and reported, with the reason a
            `Refused` verdict gives), so role merging sees the messages as they will be
            sent. None keeps every part.
        after: `history` continues messages already sent (see `Continuation`): they
            are not repeated or edited; calls they hold count as made and answered.

    Tool calls whose arguments are not a JSON object get ``{}`` (reported; the gate has
    answered such a call with an error result). A history that would open with the
    assistant gets a short user turn first (`LEADING_USER_TEXT`), since Anthropic and
    Gemini require the user to speak first.

    Calls at the very end of the history are answered too (as interrupted): normalize a
    history you are about to send, not one whose last calls are still running.

    Returns:
        The repaired messages, the changes made, and notes on shapes kept on purpose.

    Raises:
        CorruptHistoryError: An entry is not a `Message`, or a part sits in a role that
            cannot hold it (a tool call in a user message...), which no repair can fix.
    """
    history = messages_arg(history)
    for name, value, kind in (("profile", profile, HistoryRules), ("after", after, Continuation)):
        if value is not None and not isinstance(value, kind):
            raise UsageError(f"{name} must be a {kind.__name__} or None, got {shown(value, 60)}")
    if keeps is not None and not callable(keeps):
        raise UsageError(f"keeps must be callable or None, got {shown(keeps, 60)}")
    rules = profile or PORTABLE
    offset = after.offset if after is not None else 0
    if _valid_as_is(history, rules, keeps, None if after is None else after.calls):
        return Normalized(messages=history)  # unchanged by the steps (checked there too)
    for i, message in enumerate(history, start=offset):
        check_message(message, i)
    log = _Log(offset)
    media = rules.assistant_media
    cleaned = [
        for_target(m, i, keeps, log.add, assistant_media=media)
        for i, m in enumerate(history, start=offset)
    ]
    earlier = after.calls if after is not None else ()
    if after is not None and after.sent:  # a result after its call was told it did not run
        note = lambda i, said, cid: log.add("late_result_as_text", i, said, cid)  # noqa: E731
        cleaned = late_results_as_text(cleaned, earlier, after.sent, interrupted_text, note, offset)
    cleaned = renamed_duplicates(
        cleaned,
        earlier,
        lambda i, cid, said: log.add("renamed_duplicate_call", i, said, cid),
        offset,
    )
    indexed = _Pairer(cleaned, rules, log, earlier).run()
    if rules.reasoning_needs_output:
        indexed = drop_lone_reasoning(indexed, lambda i, d: log.add("dropped_thinking", i, d))
    indexed = _drop_empty(indexed, log)
    if indexed and indexed[0][1].role == "assistant" and after is None:
        log.add("inserted_leading_user", 0, "the history opened with the assistant")
        indexed.insert(0, (0, Message(role="user", parts=(TextPart(text=LEADING_USER_TEXT),))))
    if rules.alternate_roles:
        indexed = _merge_roles(indexed, log)
    messages = tuple(m for _, m in indexed)
    bound = rules.bound_reasoning and log.changes
    found = drop_invalidated(history, messages, keeps) if bound else None
    if found is None:
        return Normalized(messages=messages, changes=tuple(log.changes))
    first = min(log.changes, key=lambda c: c.index)  # what made the messages differ
    done = normalize(
        found[0], profile=replace(rules, bound_reasoning=False), keeps=keeps, after=after
    )
    dropped = [
        Change(
            kind="dropped_thinking",
            index=i + offset,
            detail=f"message {i + offset}: its thinking was dropped, since a repair before it "
            f"({first.kind}: {first.detail}) changes what it was produced after, which the "
            "model checks (prefix check)",
        )
        for i in found[1]
    ]
    return Normalized(messages=done.messages, changes=(*done.changes, *dropped))


_Indexed = list[tuple[int, Message]]


class _Pairer:
    """Step 2 of `normalize`: one pass to find calls and results, one to rebuild."""

    def __init__(
        self,
        messages: list[Message],
        rules: HistoryRules,
        log: _Log,
        earlier: Collection[str] = (),
    ) -> None:
        self.messages = messages
        self.rules = rules
        self.log = log
        self.earlier = earlier  # ids of calls sent (and answered) before these messages
        self.off = log.offset  # logs and output name history indices, not list positions
        # call id -> (message index, part position, result)
        self.answers: dict[str, tuple[int, int, ToolResult]] = {}

    def run(self) -> _Indexed:
        call_at = self._find_calls()
        self._find_results(call_at)
        out: _Indexed = []
        absorbed: set[int] = set()
        for i, message in enumerate(self.messages):
            if i in absorbed:
                continue
            if message.role == "user":  # its results were placed or dropped already
                out.append((i + self.off, _without_results(message)))
                continue
            out.append((i + self.off, message))
            if message.tool_calls:
                out.extend(self._results_after(i, message.tool_calls, absorbed))
        return out

    def _find_calls(self) -> dict[str, int]:
        """Call id -> its message's history index (ids are unique: `renamed_duplicates`)."""
        return {
            part.id: i + self.off
            for i, message in enumerate(self.messages)
            for part in message.parts
            if isinstance(part, ToolCall)
        }

    def _find_results(self, call_at: dict[str, int]) -> None:
        for i, message in enumerate(self.messages):
            for pos, part in enumerate(message.parts):
                if not isinstance(part, ToolResult):
                    continue
                cid, at = part.call_id, i + self.off
                if cid in self.answers or cid in self.earlier:
                    self.log.add(
                        "dropped_duplicate_result",
                        at,
                        f"message {at}: dropped a second result for call {shown(cid)}"
                        + (" (answered in a message already sent)" if cid in self.earlier else ""),
                        cid,
                    )
                elif call_at.get(cid, at) < at:
                    self.answers[cid] = (i, pos, part)
                else:
                    self.log.add(
                        "dropped_orphan_result",
                        at,
                        f"message {at}: dropped a result for {shown(cid)}, which no earlier "
                        "tool call has",
                        cid,
                    )

    def _results_after(self, i: int, calls: tuple[ToolCall, ...], absorbed: set[int]) -> _Indexed:
        """The user message(s) that must follow the batch of assistant message `i`."""
        nxt, at = i + 1, i + 1 + self.off
        if self.rules.results_any_order and self._answered_as_given(nxt, calls):
            absorbed.add(nxt)  # the batch's results lead it, maybe in another order
            return [(at, self.messages[nxt])]
        results = [self._result_for(i, j, call) for j, call in enumerate(calls)]
        if nxt >= len(self.messages) or self.messages[nxt].role != "user":
            return [(i + self.off, Message(role="user", parts=tuple(results)))]
        absorbed.add(nxt)
        following = self.messages[nxt]
        rest = tuple(p for p in following.parts if not isinstance(p, ToolResult))
        if _same_parts((*results, *rest), following.parts) and (
            self.rules.results_first or not rest
        ):
            return [(at, following)]  # already in place: the message as it is
        if self.rules.results_first:
            return [(at, Message(role="user", parts=(*results, *rest)))]
        if rest and len(rest) < len(self.messages[nxt].parts):
            self.log.add(
                "split_results",
                at,
                f"message {at}: tool results moved to a message of their own, before the "
                "rest of the user message",
            )
        out = [(at, Message(role="user", parts=tuple(results)))]
        return [*out, (at, Message(role="user", parts=rest))] if rest else out

    def _answered_as_given(self, nxt: int, calls: tuple[ToolCall, ...]) -> bool:
        """Message `nxt` opens with the answers to `calls` (any order) and holds no other."""
        if nxt >= len(self.messages) or self.messages[nxt].role != "user":
            return False
        parts, n = self.messages[nxt].parts, len(calls)
        found = [self.answers.get(c.id) for c in calls]
        return sorted((f[0], f[1]) if f else (-1, -1) for f in found) == [
            (nxt, pos) for pos in range(n)
        ] and not any(isinstance(p, ToolResult) for p in parts[n:])

    def _result_for(self, i: int, slot: int, call: ToolCall) -> ToolResult:
        found = self.answers.get(call.id)
        at = i + self.off
        if found is None:
            self.log.add(
                "synthesized_result",
                at,
                f"message {at}: call {shown(call.id)} to {shown(call.name)} had no result; "
                f"added an "
                "error result saying it was interrupted and not executed",
                call.id,
            )
            return interrupted_result(call)
        where, pos, result = found
        if (where, pos) != (i + 1, slot):
            self.log.add(
                "moved_result",
                where + self.off,
                f"message {where + self.off}: moved the result for {shown(call.id)} right after "
                f"its call batch in message {at} (position {slot})",
                call.id,
            )
        return result


def _same_parts(parts: tuple[Part, ...], others: tuple[Part, ...]) -> bool:
    """The same part objects, in the same order."""
    return len(parts) == len(others) and all(a is b for a, b in zip(parts, others, strict=True))


def _without_results(message: Message) -> Message:
    rest = tuple(p for p in message.parts if not isinstance(p, ToolResult))
    return message if len(rest) == len(message.parts) else replace(message, parts=rest)


def _drop_empty(indexed: _Indexed, log: _Log) -> _Indexed:
    out: _Indexed = []
    for i, message in indexed:
        if message.parts:
            out.append((i, message))
        else:
            log.add("dropped_empty", i, f"message {i}: dropped a message with no parts left")
    return out


def _merge_roles(indexed: _Indexed, log: _Log) -> _Indexed:
    """Consecutive messages of one role as one, in order, reasoning included.

    Anthropic itself combines consecutive turns of one role into one ("Consecutive
    ``user`` or ``assistant`` turns in your request will be combined into a single
    turn", Messages API, ``messages``), so an assistant message that opens with thinking
    (a reply continuing the model's turn) joins the one before: the request the API
    reads is the same, and the roles alternate, as every alternating-role target wants.
    Thinking then opens no turn; where that matters (thinking on, the last tool turn),
    the Anthropic adapter drops ``thinking`` or raises (`RequestOptions.missing_thinking`).
    """
    out: _Indexed = []
    for i, message in indexed:
        if not out or out[-1][1].role != message.role:
            out.append((i, message))
            continue
        j, prev = out[-1]
        out[-1] = (j, Message(role=prev.role, parts=(*prev.parts, *message.parts)))
        log.add("merged_roles", i, f"message {i}: merged into the {message.role} message before")
    return out


def check_pairing(history: Sequence[Message]) -> list[str]:
    """Pairing problems of a history, in the strictest form every provider accepts.

    Checks that call ids are unique; that each assistant message with calls is followed
    by a user message whose leading parts are exactly that batch's results in call order;
    and that no other tool result exists. Roles and empty messages are not checked.

    Returns:
        One sentence per problem; ``[]`` when the pairing is valid.
    """
    history = messages_arg(history)
    problems: list[str] = []
    seen: set[str] = set()
    for i, message in enumerate(history):
        for call in message.tool_calls:
            if call.id in seen:
                problems.append(f"message {i}: call id {shown(call.id)} is used twice")
            seen.add(call.id)
        if message.tool_calls:
            problems += _batch_problems(history, i)
        if message.role == "user":
            problems += _result_problems(history, i)
    return problems


def _batch_problems(history: Sequence[Message], i: int) -> list[str]:
    want = [c.id for c in history[i].tool_calls]
    nxt = history[i + 1] if i + 1 < len(history) else None
    if nxt is None or nxt.role != "user":
        return [f"message {i}: calls {want} are not followed by a user message with results"]
    lead = [p.call_id for p in nxt.parts[: len(want)] if isinstance(p, ToolResult)]
    if lead != want:
        return [f"message {i + 1}: should start with results for {want} in order, has {lead}"]
    return []


def _result_problems(history: Sequence[Message], i: int) -> list[str]:
    prev = history[i - 1] if i > 0 else None
    want = [c.id for c in prev.tool_calls] if prev is not None and prev.role == "assistant" else []
    problems = []
    for pos, part in enumerate(history[i].parts):
        if isinstance(part, ToolResult) and (pos >= len(want) or want[pos] != part.call_id):
            problems.append(
                f"message {i}: result for {shown(part.call_id)} at position {pos} does not answer "
                "the call at that position in the message before"
            )
    return problems
