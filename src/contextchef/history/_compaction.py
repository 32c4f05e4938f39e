"""Safe cut points, compaction and clearing (messages layer: pure functions on the IR).

**Cut points.** A history may be split into ``history[:i]`` / ``history[i:]`` only where no
tool call is pending. A balance counter (each call +1, each result -1, after DeepSeek
Harness' ``tool-pairing.ts``) must be 0 at ``i``; ``history[i]`` must hold no tool result
(Cline: "a tool_result-only user message is never safe"); and ``i`` must not fall inside
a tool loop whose first assistant message holds a `ReasoningPart` (Anthropic requires that
thinking block while the loop runs, so such a loop is kept or cut whole, as in
OpenHands' ``tool_loop_atomicity``) unless ``history[i]`` is an assistant message that
leads with its own `ReasoningPart` (interleaved thinking: the kept part then starts with
the thinking block the rule asks for). A *tool loop* runs from the assistant message that
answers a user turn up to the next user turn.

**Compaction** (`compact`) summarizes the oldest slice up to the latest safe cut that keeps
``keep_recent_turns`` user turns; when the history holds fewer user turns than that (one
long task: a single user message and its tool loop) it counts model steps (assistant
messages) instead, so a long agent loop is compacted inside its loop. The summarizer is injected
(the library never calls a model) and receives the slice rendered as plain text, tool
calls and results included as readable lines, so the summary request needs no tools
(after Roo Code and Cline). The new history is one user message wrapping the summary,
then the kept messages verbatim.

**Clearing** replaces old tool results with a placeholder while keeping ids and pairing
(after Anthropic's ``clear_tool_uses_20250919`` and LangChain's ``ClearToolUsesEdit``);
`clear_thinking` drops old reasoning blocks where the provider allows it.

Every function here expects a normalized history (see `normalize`) and returns new
values; inputs are never mutated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from contextchef._errors import (
    CorruptHistoryError,
    UsageError,
    check_callable,
    check_int,
    check_str,
    check_strings,
    shown,
)
from contextchef._json import is_unicode
from contextchef.history._messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    messages_arg,
)
from contextchef.history._normalize import Change, HistoryRules, is_user_turn

logger = logging.getLogger("contextchef")

__all__ = [
    "ARCHIVED_PLACEHOLDER",
    "DEFAULT_CLEARED_PLACEHOLDER",
    "Cleared",
    "Compacted",
    "CompactionPlan",
    "ThinkingCleared",
    "clear_thinking",
    "clear_tool_results",
    "compact",
    "cut_points",
    "loaded_tool_names",
    "pending_tail",
    "plan_compaction",
    "render_transcript",
    "summary_message",
    "tool_use_as_text",
]

DEFAULT_CLEARED_PLACEHOLDER = "[tool result cleared to save context]"
"""Text that replaces a cleared tool result."""
ARCHIVED_PLACEHOLDER = DEFAULT_CLEARED_PLACEHOLDER[:-1] + "; archived as "  # see _archive

# -- cut points ------------------------------------------------------------------------------


def _delta(message: Message) -> int:
    if message.role == "assistant":
        return len(message.tool_calls)
    return -len(message.tool_results)


def _opens_loop(history: Sequence[Message], i: int) -> bool:
    """Message `i` is the first assistant message after a user turn (or the history start)."""
    return history[i].role == "assistant" and (i == 0 or is_user_turn(history[i - 1]))


def cut_points(history: Sequence[Message]) -> tuple[int, ...]:
    """Indexes ``i`` (``0 <= i <= len(history)``) where the history may be split.

    See the module docstring for the three rules. ``0`` and ``len(history)`` are included
    when they satisfy them (cutting at 0 summarizes nothing, at the end keeps nothing).

    Args:
        history: A normalized history.

    Returns:
        The safe indexes, ascending.

    Raises:
        CorruptHistoryError: The balance goes negative: a result comes before any call
            it could answer (run `normalize` first).
    """
    history = messages_arg(history)
    cuts: list[int] = []
    balance = 0
    thinking_loop = False  # the loop holding history[i - 1] opened with reasoning
    for i in range(len(history) + 1):
        if i > 0:
            prev = history[i - 1]
            balance += _delta(prev)
            if balance < 0:
                raise CorruptHistoryError(
                    f"message {i - 1}: a tool result has no pending call to answer; run "
                    "normalize() on the history first",
                    index=i - 1,
                )
            if is_user_turn(prev):
                thinking_loop = False
            elif _opens_loop(history, i - 1):
                thinking_loop = any(isinstance(p, ReasoningPart) for p in prev.parts)
        if balance == 0 and _may_start(history, i, thinking_loop):
            cuts.append(i)
    return tuple(cuts)


def _may_start(history: Sequence[Message], i: int, thinking_loop: bool) -> bool:
    if i == len(history):
        return True
    head = history[i]
    if head.tool_results:
        return False
    if not thinking_loop or is_user_turn(head):
        return True
    return (
        head.role == "assistant" and bool(head.parts) and isinstance(head.parts[0], ReasoningPart)
    )


def pending_tail(history: Sequence[Message]) -> int:
    """Where a trailing run holding a still-pending tool call starts (``len(history)``: none).

    The run is the last assistant message that made tool calls when only tool results
    follow it and one of its calls has none yet: its result may still come. A compaction
    keeps the run verbatim after the summary instead of summarizing it away with the
    error result `normalize` would give the call, and logs that it did (a pending or
    orphaned call never stalls compaction: google/adk-python#7236, research
    provider-context-management.md "What users ask for" item 1). A call followed by a
    user turn is an orphan: it is summarized with the rest.
    """
    answered: set[str] = set()
    for i in range(len(history) - 1, -1, -1):
        message = history[i]
        if message.role == "assistant":
            waiting = [c.id for c in message.tool_calls if c.id not in answered]
            if waiting:
                logger.warning("contextchef: compaction keeps pending call(s) %s", waiting)
                return i
            break
        if is_user_turn(message):
            break
        answered.update(r.call_id for r in message.tool_results)
    return len(history)


# -- compaction ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CompactionPlan:
    """Where `plan_compaction` splits a history.

    The system prompt is not part of the IR history, so it is neither summarized nor
    kept here: it stays where the caller keeps it.

    Attributes:
        cut: The safe index chosen; ``history[:cut]`` is summarized.
        to_summarize: The oldest messages, to be replaced by a summary (may be empty).
        to_keep: The recent messages, kept verbatim.
        counted: What ``keep_recent_turns`` counted: ``"turns"`` (user turns) or
            ``"steps"`` (assistant messages, when the history holds fewer user turns).
    """

    cut: int
    to_summarize: tuple[Message, ...]
    to_keep: tuple[Message, ...]
    counted: Literal["turns", "steps"] = "turns"


def plan_compaction(history: Sequence[Message], *, keep_recent_turns: int) -> CompactionPlan:
    """Split at the latest safe cut that keeps at least `keep_recent_turns` user turns.

    A user turn is a user message holding more than tool results (`is_user_turn`). When
    the history holds fewer user turns than `keep_recent_turns` (one user message and a
    long tool loop after it), the cut is the latest that keeps `keep_recent_turns` model
    steps (assistant messages) instead, ``counted="steps"``.

    Args:
        history: A normalized history.
        keep_recent_turns: User turns (else model steps) the kept part must hold (>= 0).
            With exactly as many user turns as the history has, or more steps than it
            has, nothing is summarized.

    Raises:
        UsageError: `keep_recent_turns` is negative.
        CorruptHistoryError: See `cut_points`.
    """
    history = messages_arg(history)
    _check_count("keep_recent_turns", keep_recent_turns)
    cuts = set(cut_points(history))
    counted: Literal["turns", "steps"] = "turns"
    cut = _latest_cut(history, cuts, keep_recent_turns, is_user_turn)
    if cut == 0 and sum(map(is_user_turn, history)) < keep_recent_turns:
        counted = "steps"
        cut = _latest_cut(history, cuts, keep_recent_turns, lambda m: m.role == "assistant")
    return CompactionPlan(
        cut=cut,
        to_summarize=tuple(history[:cut]),
        to_keep=tuple(history[cut:]),
        counted=counted if cut else "turns",
    )


def _latest_cut(
    history: Sequence[Message], cuts: Collection[int], keep: int, counts: Callable[[Message], bool]
) -> int:
    """The latest of `cuts` with at least `keep` messages that `counts` after it (else 0)."""
    after = 0
    for i in range(len(history), -1, -1):
        if i < len(history):
            after += counts(history[i])
        if after >= keep and i in cuts:
            return i
    return 0


RESULT_PREVIEW_CHARS = 500
"""Characters of each tool result shown to the summarizer."""


def _role(message: Message) -> str:
    return "User" if message.role == "user" else "Assistant"


def _render_part(role: str, part: Part) -> str | None:
    if isinstance(part, TextPart):
        return f"{role}: {part.text}"
    if isinstance(part, ToolCall):
        return f"→ tool {part.name}({part.arguments})"
    if isinstance(part, ToolResult):
        return _render_result(part)
    if isinstance(part, ReasoningPart):
        return None  # a summary keeps what was said and done, not the thinking
    if isinstance(part, MediaPart):
        return f"{role}: [attached {part.media_type}]"
    return f"{role}: [{part.provider} block]"


def _render_result(result: ToolResult) -> str:
    text = result.content[:RESULT_PREVIEW_CHARS]
    more = len(result.content) - len(text)
    line = f"← {result.name}{' (error)' if result.is_error else ''}: {text}"
    if more:
        line += f" … [{more} more chars]"
    if result.media:
        line += f" [+{len(result.media)} attachment(s)]"
    return line


def render_transcript(messages: Sequence[Message]) -> str:
    """A history as readable text for a summarizer (no tool blocks, so no tools needed).

    One line per part: ``User: …`` / ``Assistant: …`` for text; ``→ tool name(<arguments
    JSON as produced>)`` for a call; ``← name: <first 500 chars>`` for a result (``(error)``
    after the name for an error, ``… [N more chars]`` when cut). Reasoning is left out;
    media and provider-only blocks become a bracketed mention.
    """
    lines: list[str] = []
    for message in messages:
        role = _role(message)
        lines += [x for p in message.parts if (x := _render_part(role, p)) is not None]
    return "\n".join(lines)


def tool_use_as_text(
    messages: Sequence[Message], *, offset: int = 0
) -> tuple[tuple[Message, ...], tuple[Change, ...]]:
    """`messages` with every tool call and result written as text (the transcript lines).

    For a request that declares no tools at all: providers refuse tool blocks there
    (Anthropic needs ``tools`` defined for ``tool_use`` / ``tool_result`` blocks), so the
    exchange is kept as what was said and done. Each message changed is a `Change`
    (``tool_use_as_text``; history indices counted from `offset`).
    """
    out: list[Message] = []
    changes: list[Change] = []
    for i, message in enumerate(messages, start=offset):
        if not any(isinstance(p, (ToolCall, ToolResult)) for p in message.parts):
            out.append(message)
            continue
        role = _role(message)
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, (ToolCall, ToolResult)):
                line = _render_part(role, part)
                parts.append(TextPart(text=line or ""))
            else:
                parts.append(part)
        out.append(Message(role=message.role, parts=tuple(parts)))
        changes.append(
            Change(
                kind="tool_use_as_text",
                index=i,
                detail=f"message {i}: the request declares no tools, so its tool calls "
                "and results were sent as text",
            )
        )
    return tuple(out), tuple(changes)


def _loaded_in_result(result: ToolResult) -> list[str]:
    if result.is_error:
        return []
    names = []
    for block in result.content.split("\n\n"):
        lines = block.splitlines()
        if lines and not lines[0][:1].isspace() and any(x.strip() == "Parameters:" for x in lines):
            names.append(lines[0].split()[0])
    return names


def loaded_tool_names(
    messages: Sequence[Message], *, search_tool: str = "tool_search"
) -> tuple[str, ...]:
    """Wire names whose full schemas `search_tool` results loaded, in first-seen order.

    The rule follows the result text contextchef's ``tool_search`` renders: entries are
    separated by blank lines; an entry that shows full parameters starts with the tool's
    wire name at column 0 (optionally followed by ``[server: …]``) and has a line reading
    ``Parameters:``. Error results and name-only listings load nothing.
    """
    seen: dict[str, None] = {}
    for message in messages:
        for result in message.tool_results:
            if result.name == search_tool:
                seen.update(dict.fromkeys(_loaded_in_result(result)))
    return tuple(seen)


@dataclass(frozen=True, kw_only=True)
class Compacted:
    """The result of `compact`.

    Attributes:
        messages: The new history: the summary message, then the kept messages verbatim
            (the input unchanged when nothing was summarized).
        summary_text: What the summarizer returned (``""`` when it was not called).
        plan: Where the history was split.
        dropped_call_ids: Ids of the tool calls in the summarized part.
        reactivate: Wire names whose schemas ``tool_search`` loaded in the summarized part
            and not again in the kept part: the session should re-expose or re-announce
            them, since the model no longer sees their schemas.
    """

    messages: tuple[Message, ...]
    summary_text: str
    plan: CompactionPlan
    dropped_call_ids: tuple[str, ...] = ()
    reactivate: tuple[str, ...] = ()


SUMMARY_TAG = "conversation_summary"
"""The tag wrapping the summary in the user message that replaces the old turns."""


def summary_message(summary: str) -> Message:
    """The user message holding a summary: ``<conversation_summary>…</…>``."""
    text = f"<{SUMMARY_TAG}>\n{summary.strip()}\n</{SUMMARY_TAG}>"
    return Message(role="user", parts=(TextPart(text=text),))


def _called(what: str, function: Callable[[Any], Any], argument: Any) -> Any:
    """`function(argument)`; an exception it raises becomes a `UsageError` naming it.

    Only ordinary exceptions: an interrupt or ``SystemExit`` propagates as is.
    """
    try:
        return function(argument)
    except Exception as exc:
        raise UsageError(
            f"{what} raised {type(exc).__name__}: {shown(str(exc), 200)}; the history was "
            "left unchanged"
        ) from exc


def compact(
    history: Sequence[Message],
    summarize: Callable[[str], str],
    *,
    keep_recent_turns: int = 2,
    render: Callable[[Sequence[Message]], str] = render_transcript,
    search_tool: str = "tool_search",
) -> Compacted:
    """Replace the oldest turns by a summary, at a safe cut (see `plan_compaction`).

    Args:
        history: A normalized history; not mutated.
        summarize: Called once with the rendered old slice; returns the summary text.
            Not called when there is nothing to summarize.
        keep_recent_turns: User turns kept verbatim.
        render: Turns the old slice into the summarizer's input.
        search_tool: Wire name of the tool-search meta-tool (for `Compacted.reactivate`).

    Raises:
        UsageError: `keep_recent_turns` is negative; `summarize` or `render` raised
            (chained with ``from``) or returned no string. The history is unchanged.
        CorruptHistoryError: See `cut_points`.
    """
    history = messages_arg(history)
    check_callable("summarize", summarize)
    check_callable("render", render)
    check_str("search_tool", search_tool)
    plan = plan_compaction(history, keep_recent_turns=keep_recent_turns)
    if not plan.to_summarize:
        if history:
            logger.warning(
                "contextchef: compact summarized nothing: no safe cut point in the %d "
                "messages keeps %s user turns or model steps after it (a cut never splits "
                "a call from its result); pass a smaller keep_recent_turns",
                len(history),
                shown(keep_recent_turns),
            )
        return Compacted(messages=tuple(history), summary_text="", plan=plan)
    rendered = _called("render", render, plan.to_summarize)
    if not isinstance(rendered, str):
        raise UsageError(f"render must return a str, got {type(rendered).__name__}")
    summary = _called("summarize", summarize, rendered)
    if not isinstance(summary, str) or not is_unicode(summary):
        raise UsageError(
            f"summarize must return valid Unicode text, got {type(summary).__name__}"
            + (" holding a lone surrogate" if isinstance(summary, str) else "")
        )
    if not summary.strip():
        raise UsageError(
            "summarize returned an empty summary; the history was left unchanged (replacing "
            f"{len(plan.to_summarize)} messages with nothing would lose them)"
        )
    kept = set(loaded_tool_names(plan.to_keep, search_tool=search_tool))
    loaded = loaded_tool_names(plan.to_summarize, search_tool=search_tool)
    return Compacted(
        messages=(summary_message(summary), *plan.to_keep),
        summary_text=summary,
        plan=plan,
        dropped_call_ids=tuple(c.id for m in plan.to_summarize for c in m.tool_calls),
        reactivate=tuple(n for n in loaded if n not in kept),
    )


# -- clearing --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Cleared:
    """The result of `clear_tool_results`.

    Attributes:
        messages: The new history (the input unchanged when nothing was cleared).
        cleared_call_ids: Ids of the results cleared by this call, oldest first.
    """

    messages: tuple[Message, ...]
    cleared_call_ids: tuple[str, ...] = ()


def _check_count(name: str, value: int) -> None:
    check_int(name, value)


def clear_tool_results(
    history: Sequence[Message],
    *,
    keep_recent: int,
    exclude_tools: Collection[str] = (),
    clear_inputs: bool = False,
    clear_at_least: int = 0,
    placeholder: str = DEFAULT_CLEARED_PLACEHOLDER,
) -> Cleared:
    """Replace the content of old tool results with `placeholder`, keeping ids and pairing.

    A cleared result keeps its call id, name, error flag and position; its text becomes
    `placeholder`, its media and ``provider_data`` (which may hold the original content
    blocks) are dropped. Results already holding exactly `placeholder`, or cleared into the
    archive (text starting with `ARCHIVED_PLACEHOLDER`), count as cleared.

    Args:
        history: The messages; not mutated.
        keep_recent: The most recent results (among those not excluded) left intact.
        exclude_tools: Wire names whose results are never cleared.
        clear_inputs: Also replace the matching calls' arguments with ``{}``.
        clear_at_least: Clear nothing unless at least this many results would be cleared;
            each clearing changes the cached prefix, so clearing in batches breaks it
            rarely (Anthropic's ``clear_at_least``).
        placeholder: The replacement text.

    Raises:
        UsageError: A negative count.
    """
    history = messages_arg(history)
    _check_count("keep_recent", keep_recent)
    _check_count("clear_at_least", clear_at_least)
    excluded = frozenset(check_strings("exclude_tools", exclude_tools))
    check_str("placeholder", placeholder)
    if not isinstance(clear_inputs, bool):
        raise UsageError(f"clear_inputs must be a bool, got {shown(clear_inputs, 60)}")
    eligible = [r for m in history for r in m.tool_results if r.name not in excluded]
    older = eligible[: max(len(eligible) - keep_recent, 0)]
    fresh = [r for r in older if not r.content.startswith(ARCHIVED_PLACEHOLDER)]  # not archived
    targets = [r.call_id for r in fresh if r.media or r.content != placeholder]
    if not targets or len(targets) < clear_at_least:
        return Cleared(messages=tuple(history))
    ids = frozenset(targets)
    messages = tuple(_clear_message(m, ids, placeholder, clear_inputs) for m in history)
    return Cleared(messages=messages, cleared_call_ids=tuple(targets))


def _clear_part(part: Part, ids: frozenset[str], placeholder: str, inputs: bool) -> Part:
    if isinstance(part, ToolResult) and part.call_id in ids:
        return replace(part, content=placeholder, media=(), provider_data=None)
    if inputs and isinstance(part, ToolCall) and part.id in ids:
        return replace(part, arguments="{}")
    return part


def _clear_message(
    message: Message, ids: frozenset[str], placeholder: str, inputs: bool
) -> Message:
    parts = tuple(_clear_part(p, ids, placeholder, inputs) for p in message.parts)
    return message if parts == message.parts else replace(message, parts=parts)


@dataclass(frozen=True, kw_only=True)
class ThinkingCleared:
    """The result of `clear_thinking`.

    Attributes:
        messages: The new history; an assistant message left with no parts is dropped,
            so pass the result through `normalize` if roles must alternate.
        cleared_indexes: Input indexes of the messages whose reasoning was dropped.
    """

    messages: tuple[Message, ...]
    cleared_indexes: tuple[int, ...] = ()


def _protected_from(history: Sequence[Message], keep_recent_turns: int) -> int:
    """First index whose reasoning must stay: recent turns and the current tool loop."""
    turns = [i for i, m in enumerate(history) if is_user_turn(m)]
    by_turns = len(history) if keep_recent_turns == 0 else 0
    if 0 < keep_recent_turns <= len(turns):
        by_turns = turns[-keep_recent_turns]
    pure = [i for i, m in enumerate(history) if m.role == "user" and not m.tool_results]
    loop = pure[-1] if pure else 0
    return min(by_turns, loop)


def clear_thinking(
    history: Sequence[Message],
    *,
    keep_recent_turns: int,
    profile: HistoryRules | None = None,
) -> ThinkingCleared:
    """Drop reasoning blocks of old turns where the provider allows it.

    Anthropic ignores thinking blocks of previous turns, so they may be left out, but the
    thinking block that opened the *current* tool loop (the messages since the last user
    message holding no tool result) must be sent back unchanged with its signature. So
    reasoning is kept in the last `keep_recent_turns` user turns and always in the
    current loop; older `ReasoningPart` values are removed, nothing else is touched.

    Args:
        history: The messages; not mutated.
        keep_recent_turns: User turns whose reasoning is kept (>= 0).
        profile: The target's rules; with ``keep_all_reasoning`` (DeepSeek) nothing may go.

    Raises:
        UsageError: A negative count, or a profile that keeps all reasoning (DeepSeek
            rejects a tool conversation missing any ``reasoning_content``: compact instead).
    """
    history = messages_arg(history)
    _check_count("keep_recent_turns", keep_recent_turns)
    if profile is not None and not isinstance(profile, HistoryRules):
        raise UsageError(f"profile must be a HistoryRules or None, got {shown(profile, 60)}")
    if profile is not None and profile.keep_all_reasoning:
        raise UsageError(
            f"the {shown(profile.name)} rules require every reasoning block to be sent back; "
            "use compact() to shorten the history instead"
        )
    start = _protected_from(history, keep_recent_turns)
    out: list[Message] = []
    cleared: list[int] = []
    for i, message in enumerate(history):
        parts = tuple(p for p in message.parts if not isinstance(p, ReasoningPart))
        if i >= start or len(parts) == len(message.parts):
            out.append(message)
            continue
        cleared.append(i)
        if parts:
            out.append(replace(message, parts=parts))
    return ThinkingCleared(messages=tuple(out), cleared_indexes=tuple(cleared))
