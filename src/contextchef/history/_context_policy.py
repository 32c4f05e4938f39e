"""The host's context policy: one frozen, validated statement of how long sessions are kept.

A `ContextPolicy` says how many tokens the conversation may take (a budget, or the
model's window less an output reserve), when to clear old tool results and when to
compact, which tools are never cleared, and whether the provider's own context management
is used where the model has it (``native``) or the local path always. It is data: the
providers compile it into their wire fields (`contextchef.providers.native_context`:
Anthropic ``context_management.edits``, Responses ``context_management``), and nothing in
it reaches a payload except through them.

Why these knobs (../shared/research/provider-context-management.md): thresholds from the
model's effective window, not the raw one (codex #40095, section "What users ask for"
item 11), so the budget leaves room for the output; choosing which tools' results are
never cleared (langchain #34145, item 14); ``clear_at_least`` so that a clearing, which
restarts the prompt cache at the cleared point (context-editing.md, section 2.1), pays for
the cache it rewrites.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contextchef._errors import (
    UsageError,
    check_flag,
    check_int,
    check_number,
    check_str,
    check_strings,
)

__all__ = ["ContextPolicy"]

_MOST = 1_000_000_000
"""The largest budget or reserve taken, in tokens (a thousand times today's largest window)."""


@dataclass(frozen=True, kw_only=True)
class ContextPolicy:
    """How a session keeps its context within the model's window.

    Attributes:
        budget_tokens: The input tokens the conversation may take, or None for the
            model's context window less `output_reserve` (the window is profile data per
            model, `ModelRules.context_window`; unknown models get a safe default). A
            budget past a known model's window less the reserve is lowered to it (with a
            warning): triggers past the window would never fire before the provider
            refuses the prompt. At most 1,000,000,000.
        output_reserve: Tokens kept free for the answer when the budget comes from the
            window; None: the model's ``max_output`` where known, else 16,384.
        clear_at: Fraction of the budget (0 to 1, exclusive of 0) at which old tool
            results are cleared.
        compact_at: Fraction of the budget at which the conversation is compacted; at
            least `clear_at`, at most 1.
        keep_tool_uses: How many of the most recent tool uses a clearing keeps.
        never_clear: Wire names of tools whose results are never cleared (sorted,
            without repeats).
        clear_tool_inputs: Whether a clearing also blanks the cleared calls' arguments.
        keep_thinking_turns: Keep the thinking of only this many latest assistant turns
            (Anthropic ``clear_thinking_20251015``); None leaves thinking to the model's
            default.
        summary_instructions: Extra instructions for the summary a compaction writes
            (``""``: the provider's own prompt).
        native: Use the provider's context management where the model has it (profile
            data, `ModelRules.native_context`); False: the local path everywhere.
        payback_turns: How many later requests a clearing has to pay for the prompt-cache
            rewrite it causes in; sizes ``clear_at_least``.

    Raises:
        UsageError: A field of the wrong type or out of range (named), or `compact_at`
            below `clear_at`.
    """

    budget_tokens: int | None = None
    output_reserve: int | None = None
    clear_at: float = 0.5
    compact_at: float = 0.8
    keep_tool_uses: int = 3
    never_clear: tuple[str, ...] = field(default=())
    clear_tool_inputs: bool = False
    keep_thinking_turns: int | None = None
    summary_instructions: str = ""
    native: bool = True
    payback_turns: int = 10

    def __post_init__(self) -> None:
        if self.budget_tokens is not None:  # no model has a window near the maximum
            check_int("ContextPolicy.budget_tokens", self.budget_tokens, minimum=1, maximum=_MOST)
        if self.output_reserve is not None:
            check_int("ContextPolicy.output_reserve", self.output_reserve, maximum=_MOST)
        check_number("ContextPolicy.clear_at", self.clear_at, minimum=0, maximum=1, above=True)
        check_number("ContextPolicy.compact_at", self.compact_at, minimum=0, maximum=1, above=True)
        if self.compact_at < self.clear_at:
            raise UsageError(
                f"ContextPolicy.compact_at ({self.compact_at}) must be at least clear_at "
                f"({self.clear_at}): results are cleared before the conversation is compacted"
            )
        check_int("ContextPolicy.keep_tool_uses", self.keep_tool_uses)
        names = check_strings("ContextPolicy.never_clear", self.never_clear)
        object.__setattr__(self, "never_clear", tuple(sorted(set(names))))
        check_flag("ContextPolicy.clear_tool_inputs", self.clear_tool_inputs)
        if self.keep_thinking_turns is not None:
            check_int("ContextPolicy.keep_thinking_turns", self.keep_thinking_turns, minimum=1)
        check_str("ContextPolicy.summary_instructions", self.summary_instructions)
        check_flag("ContextPolicy.native", self.native)
        check_int("ContextPolicy.payback_turns", self.payback_turns, minimum=1)
