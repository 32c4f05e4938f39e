"""`Compiler`: a session's part that compiles one request per model call.

The steps are in `contextchef.session._compile`; this part checks the options, runs the
compile events and the overflow handoff, adds the host's `ContextPolicy` as the provider's
own context management where the model has it (`providers.with_native`), and records the
result in the target's ledger only once the compile succeeded.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from contextchef._errors import UsageError, check_number
from contextchef._json import thaw
from contextchef.exposure._policy import unmatched_messages
from contextchef.history._context_policy import ContextPolicy
from contextchef.providers import CacheAuditFinding, get_adapter
from contextchef.providers._budget import ContextUsage
from contextchef.providers._compacted import COMPACTION
from contextchef.providers._context import context_usage, native_context, with_native
from contextchef.providers._model_rules import warn_unrecorded_thinking
from contextchef.providers._usage import SentRequest
from contextchef.session._compile import CompileInput, compile_request
from contextchef.session._ledger import Ledger, pending_answered
from contextchef.session._library import READ_MEMORIES
from contextchef.session._maintenance import Maintenance
from contextchef.session._memory import MemoryStore, render_memories
from contextchef.session._request import CompiledRequest, check_options
from contextchef.session._state import SessionState
from contextchef.session._strategies import Strategy, resolve
from contextchef.session._toolset import SessionTools
from contextchef.session._volatile import CompileEvent, VolatileState

__all__ = ["Compiler"]

logger = logging.getLogger("contextchef")


class Compiler:
    """Compiles the session for a target, append-only, and records it in the ledger.

    Args:
        state: The session's data (history, ledgers); a failed compile puts it back.
        tools: The session's tools (the frozen view compiled).
        volatile: The volatile tail's hooks and the compile events.
        memory: The memory store whose memories are shown, or None.
        maintenance: Its handoff runs first in every compile (undone with it); its reports.
        unmatched: ``"raise"`` or ``"warn"``: `ContextChef`'s ``unmatched_patterns``.
        policy: The host's `ContextPolicy`, or None (compile adds no context management).
    """

    def __init__(
        self,
        *,
        state: SessionState,
        tools: SessionTools,
        volatile: VolatileState,
        memory: MemoryStore | None,
        maintenance: Maintenance,
        unmatched: Literal["raise", "warn"],
        policy: ContextPolicy | None,
    ) -> None:
        self._state = state
        self._tools = tools
        self._volatile = volatile
        self._memory = memory
        self._maintenance = maintenance
        self._unmatched = unmatched
        self.drives = policy is not None  # compile adds the policy's context management
        self.policy = policy or ContextPolicy()
        self._warned: set[str] = set()
        self._checked: tuple[object, ...] = ()  # the last (view, defer, pin) checked

    def _check_patterns(self) -> None:
        """Apply `unmatched_patterns` to ``defer`` and ``pin`` (at compile; once per view)."""
        key = (self._tools.view(), self._state.defer, self._state.pin)
        if self._checked and self._checked[0] is key[0] and self._checked[1:] == key[1:]:
            return  # the same tools and patterns: the same answer (warned once already)
        known = self._tools.known_names() if self._state.defer or self._state.pin else set()
        for problem in unmatched_messages(self._state.defer, self._state.pin, known):
            if self._unmatched == "raise":
                raise UsageError(f"{problem}; pass unmatched_patterns='warn' to only warn")
            if problem not in self._warned:
                self._warned.add(problem)
                warnings.warn(problem, UserWarning, stacklevel=4)
        self._checked = key

    def compile(
        self,
        target: str = "anthropic",
        *,
        model: str = "model",
        max_tokens: int | None = None,
        strategy: str = "client",
        prefill: str | None = None,
        extra: Mapping[str, Any] | None = None,
        betas: Sequence[str] = (),
        diagnostics: bool = False,
        turn_gap: float | None = None,
        missing_thinking: Literal["drop", "raise"] = "drop",
    ) -> CompiledRequest:
        """Compile the session for `target`; see `ContextChef.compile`."""
        adapter = get_adapter(target)
        extra = {} if extra is None else extra
        check_options(model, max_tokens, extra, betas, diagnostics, missing_thinking)
        extra = thaw(extra)  # the payload's own: an edit of it never reaches the caller's
        gap = None if turn_gap is None else check_number("turn_gap", turn_gap, minimum=0)
        native = native_context(target, model=model, policy=self.policy)
        if self.drives:  # the same fields every turn: the request stays byte-stable
            extra, betas = with_native(native, extra, betas)
        self._check_patterns()
        declared = len(self._tools.view().flat)  # what a native strategy could declare
        chosen = resolve(strategy, adapter.profile, adapter.model_rules(model), declared=declared)
        self._volatile.emit(CompileEvent(name="compile:start", target=target))
        before = self._state.copy()
        try:  # a compile that fails leaves the session as it was, handoff included
            local = self.drives and "compact" in native.local  # the provider will not compact
            due = (self.usage(target, model), native.budget.compact_trigger) if local else None
            self._maintenance.handoff_if_due(due, wire=adapter.profile.wire)
            ledger = self._state.ledgers.get(target) or Ledger()
            if ledger.pending is None and len(ledger.marks) == 1:
                warn_unrecorded_thinking(adapter.model_rules(model), self._state.history, target)
            if ledger.undo is not None and not pending_answered(ledger, self._state.history):
                ledger = ledger.undo  # the edit was never answered: decide it again
            result, step = compile_request(
                CompileInput(
                    adapter=adapter,
                    strategy=chosen,
                    view=self._tools.view(),
                    state=self._state,
                    volatile=self._volatile,
                    ledger=ledger,
                    memories=render_memories(self._memory.items() if self._memory else ()),
                    memory_tool=self._memory_tool(chosen),
                    model=model,
                    max_tokens=max_tokens,
                    prefill=prefill,
                    extra=extra,
                    betas=tuple(betas),
                    diagnostics=diagnostics,
                    turn_gap=gap,
                    missing_thinking=missing_thinking,
                )
            )
        except BaseException:
            self._state.adopt(before)
            raise
        undo = ledger.copy() if result.edits else None
        if not result.resumes:  # a resumed reply stays the answer to the pending mark
            step.apply(ledger)
        ledger.undo = undo  # until answered, an edit can be undone
        kept, rules = adapter.keeps_state(result.payload), adapter.cache_rules(model)
        ends = COMPACTION not in extra and [m.role for m in ledger.ir[-1:]] == ["assistant"]
        sent = SentRequest(model=model, edits=result.edits, turn_gap=gap, rules=rules, kept=kept)
        sent = sent.opening(prefill or "", ends, ledger.sent)  # its reply joins that turn
        ledger.sent = sent.resuming(ledger.sent) if result.resumes else sent
        self._state.ledgers[target] = ledger
        if COMPACTION in extra:  # the block that answers it swaps in after these (swap_in)
            self._maintenance.summarized[adapter.profile.wire] = len(self._state.history)
        for edit in result.edits:
            logger.warning("contextchef: %s: %s", target, edit.detail)
        if self._volatile.cache_audit and result.edits:
            result = dataclasses.replace(result, audit=CacheAuditFinding.of_edits(result.edits))
        self._state.compiled = target
        self._state.strategy = chosen.name
        self._state.target = target if chosen.native is not None else None
        self._state.model = model if chosen.native is not None else None
        self._volatile.emit(CompileEvent(name="compile:done", target=target, request=result))
        return result

    def usage(self, target: str, model: str) -> ContextUsage:
        """The next request's tokens against the budget; see `ContextChef.context_usage`."""
        native = native_context(target, model=model, policy=self.policy)
        ledger, history = self._state.ledgers.get(target) or Ledger(), self._state.history
        mark, got = (ledger.answered and ledger.pending) or ledger.marks[-1], ledger.sent.reported
        kept = got and not ledger.undo and history[: mark.history] == ledger.history[: mark.history]
        history, got = (history[mark.history :], got) if kept else (history, 0)  # 0: ours alone
        return context_usage(native, got, history, self._state.system, self._tools.view().declared)

    def _memory_tool(self, strategy: Strategy) -> str | None:
        """Wire name of ``read_memories`` when the payload declares it, else None."""
        tools = strategy.tools(self._tools.view()) if self._memory is not None else ()
        return READ_MEMORIES if any(t.name == READ_MEMORIES for t in tools) else None
