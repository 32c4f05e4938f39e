"""A context policy's figures for one model: budget, triggers and ``clear_at_least``.

`context_budget` reads the model's window from its profile data (`ModelRules.context_window`,
each wire's model table) and the prompt-cache prices from `CacheRules`; a model the tables
do not know gets `DEFAULT_CONTEXT_WINDOW`, small enough for any current model (a budget too
small compacts early; one too large overflows the window, the failure users report:
../shared/research/provider-context-management.md, "What users ask for" items 11-12 and
"Capabilities" F).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from contextchef._json import canonical_dumps
from contextchef._tokens import estimate_tokens
from contextchef.history._compaction import SUMMARY_TAG
from contextchef.history._context_policy import ContextPolicy
from contextchef.history._forms import text_digest
from contextchef.history._messages import Message, TextPart
from contextchef.history._notes import HEADROOM_SHARE, NoteBudget, messages_tokens
from contextchef.history._quotes import QUOTES_SHARE
from contextchef.providers._reading import ResponseNotice
from contextchef.providers._usage import CacheRules
from contextchef.tools._tool import CompiledTool

logger = logging.getLogger("contextchef")

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_OUTPUT_RESERVE",
    "ContextBudget",
    "ContextUsage",
    "Due",
    "budget_notices",
    "compaction_due",
    "context_budget",
    "fixed_notice",
    "note_budget",
    "notice_digest",
    "request_tokens",
    "summary_notice",
]

DEFAULT_CONTEXT_WINDOW = 128_000
"""Tokens assumed for a model whose window the profile tables do not know."""
DEFAULT_OUTPUT_RESERVE = 16_384
"""Tokens kept for the answer when neither the policy nor the model says."""


@dataclass(frozen=True, kw_only=True)
class ContextBudget:
    """A `ContextPolicy` in tokens, for one model.

    Attributes:
        window: The model's context window (input and output), or the default.
        window_known: Whether `window` is the model's (False: `DEFAULT_CONTEXT_WINDOW`).
        output_reserve: Tokens kept free for the answer.
        budget: The input tokens the conversation may take.
        clear_trigger: Input tokens at which old tool results are cleared.
        compact_trigger: Input tokens at which the conversation is compacted.
        clear_at_least: The fewest input tokens a clearing must remove to pay for the
            cache rewrite it causes (see `clearing_pays`).
    """

    window: int
    window_known: bool
    output_reserve: int
    budget: int
    clear_trigger: int
    compact_trigger: int
    clear_at_least: int


def clearing_pays(prompt: int, cache: CacheRules, turns: int) -> int:
    """The fewest tokens a clearing of a `prompt`-token conversation must remove.

    A clearing restarts the prompt cache where it cuts (context-editing.md: clearing
    "invalidates cached prompt prefixes"), so at worst the rest of the prompt, ``prompt -
    C`` tokens, is written again at the write price instead of read: an extra ``(write -
    read) * (prompt - C)``. Each of the next `turns` requests then reads ``C`` fewer
    tokens, saving ``read * C`` each. The clearing pays when ``read * C * turns >= (write -
    read) * (prompt - C)``, that is ``C >= (write - read) * prompt / (read * turns + write
    - read)``. Prices are `cache`'s multipliers (the default lifetime's write).
    """
    write = cache.write.get(cache.ttl, max(cache.write.values(), default=1.0))
    extra = max(write - cache.read, 0.0)
    if extra == 0.0:
        return 0
    return math.ceil(extra * prompt / (cache.read * turns + extra))


def context_budget(
    policy: ContextPolicy, window: int | None, max_output: int | None, cache: CacheRules
) -> ContextBudget:
    """`policy`'s figures for a model (see `ContextBudget`).

    Args:
        policy: The host's policy.
        window: The model's context window (`ModelRules.context_window`), None if unknown.
        max_output: The model's output limit (`ModelRules.max_output`), None if unknown.
        cache: The model's prompt-cache prices (`Adapter.cache_rules`).
    """
    known = window is not None
    window = window or DEFAULT_CONTEXT_WINDOW
    reserve = policy.output_reserve
    if reserve is None:
        reserve = max_output or DEFAULT_OUTPUT_RESERVE
    budget = fits = max(window - reserve, 1)
    if policy.budget_tokens is not None and (policy.budget_tokens <= fits or not known):
        budget = policy.budget_tokens
    elif policy.budget_tokens is not None:  # past the window: nothing would fire in time
        logger.warning(
            "contextchef: ContextPolicy.budget_tokens %s is past the model's window of %s "
            "tokens less %s for the answer; using %s",
            f"{policy.budget_tokens:,}",
            f"{window:,}",
            f"{reserve:,}",
            f"{fits:,}",
        )
    clear = math.ceil(budget * policy.clear_at)
    return ContextBudget(
        window=window,
        window_known=known,
        output_reserve=reserve,
        budget=budget,
        clear_trigger=clear,
        compact_trigger=math.ceil(budget * policy.compact_at),
        clear_at_least=clearing_pays(clear, cache, policy.payback_turns),
    )


@dataclass(frozen=True, kw_only=True)
class ContextUsage:
    """How much of its budget the next request to one target and model takes (in tokens).

    Attributes:
        target: The target.
        model: The model.
        used: Input tokens of the next request: the last request's input as the provider
            reported it (every input token, cache reads and writes included:
            `CacheReport.input_tokens`) plus our estimate of the messages added since,
            or, when no usage is known, our estimate of the whole request (`request_tokens`).
        budget: The input tokens the policy allows (`ContextBudget.budget`).
        source: ``"usage"`` (the provider's figure) or ``"estimate"`` (ours alone).
        fixed: Our estimate of the system prompt and the resident tools' definitions
            (`request_tokens`), part of ``used``: what no compaction can remove.
    """

    target: str
    model: str
    used: int
    budget: int
    source: Literal["usage", "estimate"]
    fixed: int = 0

    @property
    def headroom(self) -> int:
        """Tokens left under the budget (negative: over it)."""
        return self.budget - self.used


Due = tuple[ContextUsage, int]
"""The next request's `ContextUsage` and the `ContextPolicy`'s compaction trigger (tokens)."""


def note_budget(request: Due | None) -> NoteBudget | None:
    """What a compaction before `request` sizes its notes by: the trigger and fixed part."""
    return None if request is None else NoteBudget(trigger=request[1], fixed=request[0].fixed)


def request_tokens(system: str, tools: Sequence[CompiledTool], messages: Sequence[Message]) -> int:
    """Our estimate of a request's input tokens (`contextchef.estimate_tokens`).

    Over the system text, each tool's name, description and canonical JSON schema, and
    each message's canonical JSON form (about ±15% on English JSON and prose; no wire
    framing counted).
    """
    parts = [
        system,
        *(f"{t.name} {t.description} {canonical_dumps(t.input_schema)}" for t in tools),
    ]
    return sum(estimate_tokens(p) for p in parts) + messages_tokens(messages)


def _summary_tokens(history: Sequence[Message]) -> int:
    """Our estimate of the summary opening `history` (a local compaction's), else 0.

    That is the first part of the first message when it is a ``<conversation_summary>``
    text (`contextchef.history.summary_message`, with the notes the session adds).
    """
    return estimate_tokens(_summary_text(history))


def _summary_text(history: Sequence[Message]) -> str:
    """The summary opening `history` (see `_summary_tokens`), else ``""``."""
    first = history[0].parts[:1] if history else ()
    text = first[0].text if first and isinstance(first[0], TextPart) else ""
    return text if text.startswith(f"<{SUMMARY_TAG}>") else ""


def compaction_due(
    history: Sequence[Message],
    request: Due | None,
    history_limit: int | None,
) -> tuple[bool, bool]:
    """Whether a local compaction is due: past the policy's trigger, past the history limit.

    Args:
        history: The history.
        request: The next request's `ContextUsage` and the `ContextPolicy`'s compaction
            trigger (`ContextBudget.compact_trigger`, tokens); None where the provider
            compacts.
        history_limit: The `OverflowHandoff`'s ``max_history_tokens`` (tokens of
            `history`, `request_tokens`), or None.

    What a compaction cannot remove is set aside when it is past the trigger by itself:
    the system prompt and resident tools (``ContextUsage.fixed``; the history limit
    counts no such part) plus the summary opening `history`. Compacting then could not
    bring the request under the trigger (the summarizer would be paid on every turn
    and the conversation cut to its last turn each time), so the next compaction runs
    once what follows that part is past the trigger itself: one summarizer call per
    trigger's worth of new conversation, as when everything fits. The rule reads only
    the history and the request, so a restored session (a snapshot, `SessionSync`)
    keeps it; `summary_notice` and `fixed_notice` tell the host when it applies.

    After a local compaction (the history opens with its summary) the policy's trigger
    also waits for real growth: the messages after the summary message must take at
    least 1/`HEADROOM_SHARE` of the trigger (`contextchef.history._notes`), unless the
    request is past the budget itself (``ContextUsage.budget``, which no request passes).
    A compaction leaves that much room when it can (its notes give way), but where the
    system prompt, tools, summary and the user's current request take more, the next
    turn would pass the trigger again and pay the summarizer for one turn's growth:
    38 calls in 40 turns at a 1,200-token budget. Now each call follows half a trigger
    of new conversation at least.
    """
    summary = _summary_tokens(history)

    def past(used: int, trigger: int, fixed: int = 0) -> bool:
        aside = fixed + summary
        return used - (aside if aside > trigger else 0) > trigger

    def due_now(usage: ContextUsage, trigger: int) -> bool:
        if not past(usage.used, trigger, usage.fixed):
            return False
        return not summary or usage.used > usage.budget or _grown(history, trigger)

    due = request is not None and due_now(*request)
    sized = history_limit is not None and past(request_tokens("", (), history), history_limit)
    return due, sized


def _grown(history: Sequence[Message], trigger: int) -> bool:
    """Whether the messages after the first take 1/`HEADROOM_SHARE` of `trigger` (tokens).

    Counted from the newest back, stopping once they do, so a long history costs no
    more than the messages that reach it.
    """
    enough, tokens = trigger // HEADROOM_SHARE, 0
    for message in reversed(history[1:]):
        tokens += messages_tokens((message,))
        if tokens >= enough:
            return True
    return False


NEAR = 4
"""A fixed part leaving less than 1/`NEAR` of the compaction trigger is near it."""


def fixed_notice(request: Due | None) -> tuple[ResponseNotice, ...]:
    """A notice when the system prompt and tools alone take (nearly) all of the trigger.

    Args:
        request: As for `compaction_due` (None: no local compaction; no notice).

    Returns:
        ``()`` or one notice (`reason` ``compact_at``) naming the estimated tokens of the
        system prompt and resident tools (``ContextUsage.fixed``), the trigger in tokens,
        what follows and what the host can do: fewer resident tools (deferred loading,
        a tool search strategy), a shorter system prompt or a larger budget.
        ``fixed_over_budget`` when they are past the trigger (`compaction_due` sets them
        aside); ``fixed_near_budget`` when they leave the conversation less than a
        quarter of it (`NEAR`): the session compacts whenever the conversation outgrows
        that room, nearly every turn, and the model sees little of it word for word.
    """
    if request is None or request[1] - request[0].fixed >= request[1] // NEAR:
        return ()
    fixed, trigger = request[0].fixed, request[1]
    what = f"{request[0].target} {request[0].model}'s request"
    if fixed > trigger:
        kind, effect = (
            "fixed_over_budget",
            (
                f"past the compaction trigger of {trigger:,} tokens (ContextPolicy.compact_at): "
                "no compaction can bring the request under it, so the session compacts only "
                f"when the conversation itself is past {trigger:,} tokens"
            ),
        )
    else:
        kind, effect = (
            "fixed_near_budget",
            (
                f"leaving {trigger - fixed:,} tokens of the compaction trigger of {trigger:,} "
                "(ContextPolicy.compact_at) to the conversation: the session compacts whenever "
                "it outgrows that, nearly every turn, and the model sees little of it verbatim"
            ),
        )
    notice = ResponseNotice(
        kind=kind,
        reason="compact_at",
        detail=f"the system prompt and resident tools take about {fixed:,} tokens "
        f"(estimated) of {what}, {effect}; declare fewer tools resident (defer=[...] "
        "patterns or a tool-search strategy), shorten the system prompt, or raise "
        "ContextPolicy.budget_tokens/compact_at well above "
        f"{fixed:,} tokens",
    )
    return (notice,)


def summary_notice(
    history: Sequence[Message],
    request: Due | None,
    max_history_tokens: int | None,
) -> tuple[ResponseNotice, ...]:
    """A ``summary_over_budget`` notice when a compaction left a summary past a trigger.

    Args:
        history: The history (a local compaction's summary first, if any).
        request: As for `compaction_due`: the trigger of the `ContextPolicy` in tokens
            of the request, with the system prompt and tools (``ContextUsage.fixed``)
            that share it; None when it did not apply.
        max_history_tokens: The `OverflowHandoff`'s trigger in tokens of the history,
            None when not set.

    Returns:
        ``()`` when the summary fits under every trigger set (with the fixed part for
        ``compact_at``; a fixed part past it alone is `fixed_notice`'s); else one notice
        naming the summary message's estimated tokens, split into the summarizer's text
        (inside the tags) and the notes the library added after it (what was archived,
        the user's words: `contextchef.history._quotes`), the smallest trigger
        it is past (`reason`: ``compact_at`` or ``max_history_tokens``), and what the
        session does about it (`compaction_due`).
    """
    tokens = _summary_tokens(history)
    fixed, trigger = (request[0].fixed, request[1]) if request else (0, None)
    notes = estimate_tokens(_summary_text(history).partition(f"</{SUMMARY_TAG}>")[2].strip())
    own = tokens - notes  # the tags count as the summarizer's
    room = {"compact_at": None if trigger is None or fixed > trigger else trigger - fixed}
    room["max_history_tokens"] = max_history_tokens
    past = sorted((t, name) for name, t in room.items() if t is not None and tokens > t)
    if not past:
        return ()
    limit, name = past[0]
    where = "ContextPolicy" if name == "compact_at" else "OverflowHandoff"
    shared = (
        f" together with the system prompt and tools' {fixed:,} tokens"
        if name == "compact_at" and fixed
        else ""
    )
    trigger = trigger if name == "compact_at" else limit
    notice = ResponseNotice(
        kind="summary_over_budget",
        reason=name,
        detail=f"the summary message opening the history is about {tokens:,} tokens "
        f"(estimated): the on_overflow summarizer's text about {own:,}, the notes "
        f"contextchef adds to it (what was archived, the user's words) about {tokens - own:,}; "
        f"that is past the compaction trigger of {trigger:,} tokens ({where}.{name})"
        f"{shared}: compacting again cannot bring the request under it, so the session "
        "compacts next when what follows the summary is past the trigger itself; "
        + (
            f"have the summarizer return fewer than {max(limit - (tokens - own), 1):,} tokens"
            if own > tokens - own
            else "the notes are the larger part (their quotes take at most 1/"
            f"{QUOTES_SHARE} of the trigger): raise ContextPolicy.budget_tokens/compact_at"
        ),
    )
    return (notice,)


def budget_notices(
    history: Sequence[Message],
    request: Due | None,
    max_history_tokens: int | None,
    given: set[str],
) -> tuple[ResponseNotice, ...]:
    """`summary_notice` and `fixed_notice` not `given` yet, each logged as a warning.

    Called at each compile with the digests of the notices given so far in the
    conversation (`notice_digest`; a snapshot's ``noticed``, so a restored session does not
    give them again), to which it adds those it returns: a notice with the same figures
    (the same summary, the same fixed part and trigger) is given once, and a new summary
    or a changed tool set is reported again.
    """
    found = (*summary_notice(history, request, max_history_tokens), *fixed_notice(request))
    new = tuple(n for n in found if notice_digest(n) not in given)
    for notice in new:
        given.add(notice_digest(notice))
        logger.warning("contextchef: %s", notice.detail)
    return new


def notice_digest(notice: ResponseNotice) -> str:
    """A budget notice's digest, of its kind, reason and detail (16 hex digits, `text_digest`)."""
    return text_digest(canonical_dumps([notice.kind, notice.reason, notice.detail]))
