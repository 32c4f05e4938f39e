"""`ContextChef.compile`: one request per model call, over the target's ledger.

The steps are in `contextchef.session._compile`; this mixin checks the options, runs the
compile events and the overflow handoff, and records the result in the target's ledger
only once the compile succeeded.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from contextchef._errors import UsageError
from contextchef.exposure._policy import unmatched_message
from contextchef.history._messages import Message, ReasoningPart
from contextchef.providers import CacheAuditFinding, ModelRules, get_adapter
from contextchef.session._compile import CompileInput, compile_request
from contextchef.session._ledger import Ledger, pending_answered
from contextchef.session._library import READ_MEMORIES
from contextchef.session._memory import MemoryStore, render_memories
from contextchef.session._request import CompiledRequest, check_options
from contextchef.session._state import SessionState
from contextchef.session._strategies import Strategy, resolve
from contextchef.session._volatile import CompileEvent, VolatileState

if TYPE_CHECKING:
    from contextchef.deferred._view import SessionView
    from contextchef.session._toolset import SessionTools

__all__ = ["CompileMixin"]

logger = logging.getLogger("contextchef")


class CompileMixin:
    """`ContextChef.compile`."""

    _state: SessionState
    _volatile: VolatileState
    _memory: MemoryStore | None
    _tools: SessionTools
    _unmatched: str
    _warned: set[str]
    _checked: tuple[object, ...]

    if TYPE_CHECKING:  # provided by the other mixins of ContextChef

        @property
        def view(self) -> SessionView: ...

        def _handoff_if_due(self) -> None: ...

    def _check_patterns(self) -> None:
        """Apply `unmatched_patterns` to ``defer`` and ``pin`` (at compile; once per view)."""
        key = (self.view, self._state.defer, self._state.pin)
        if self._checked and self._checked[0] is key[0] and self._checked[1:] == key[1:]:
            return  # the same tools and patterns: the same answer (warned once already)
        known = self._tools.known_names() if self._state.defer or self._state.pin else set()
        for field, patterns in (("defer", self._state.defer), ("pin", self._state.pin)):
            problem = unmatched_message(field, patterns, known)
            if not problem:
                continue
            if self._unmatched == "raise":
                raise UsageError(f"{problem}; pass unmatched_patterns='warn' to only warn")
            if problem not in self._warned:
                self._warned.add(problem)
                warnings.warn(problem, UserWarning, stacklevel=3)
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
    ) -> CompiledRequest:
        """Compile the session into a request payload for `target`, append-only.

        The target's ledger replays what earlier compiles sent, unchanged, and appends
        the new turn; volatile state that changed is stated at the end (see
        `contextchef.session._ledger` and `contextchef.session._volatile`). Compile as
        you send: once per model call, after appending the tool results.

        Args:
            target: One of `contextchef.TARGETS`.
            model: Model name written into the payload; it also selects the model's
                rules (`ModelRules`: prefix check, system messages, prefill).
            max_tokens: Output cap in tokens; None sends the provider's default, except
                where the API requires one (`Profile.default_max_tokens`: Anthropic 4,096).
            strategy: ``auto`` (the provider's own deferral where the model has it,
                else ``client``: `contextchef.session._strategies.resolve`), ``client``
                (direct tools, namespaces, loaders, then ``tool_search`` and
                ``defer_execute``), ``flat`` (every tool resident; the no-disclosure
                baseline), ``anthropic-native`` / ``anthropic-native-regex`` (deferred
                tools with ``defer_loading: true`` and Anthropic's server search),
                ``anthropic-native-client`` (our ``tool_search`` answering with
                ``tool_reference`` blocks), ``anthropic-inline`` (found tools revealed
                by ``tool_addition``) or ``openai-native`` (Responses namespaces and
                hosted ``tool_search``). On models with mid-conversation tool changes
                the native strategies keep the ``tools`` first sent (once a request
                was answered: before that, nothing is bound and the next compile sends
                the current view's) and state reveals and withdrawals as
                ``tool_addition`` / ``tool_removal``. The gate follows
                the last compile: after ``flat`` or a native strategy, deferred tools may
                be called by name (``require_search`` still applies: the provider's
                search results and our additions count as loading).
                `CompiledRequest.strategy` says which one was used.
            prefill: Start of the assistant's answer, sent as a trailing assistant turn;
                the history must end with a user turn, the text must not end with
                whitespace, and the model must accept prefill.
            extra: Request fields passed through unchanged (``thinking`` with
                ``block_binding``, ``diagnostics``, ``output_config``,
                ``context_management``...); fields compile writes are refused.
            betas: ``anthropic-beta`` values to send (`CompiledRequest.headers`); those
                the `extra` fields need are added.
            diagnostics: Anthropic: ask for cache diagnostics against the last response
                ingested for this target (``diagnostics.previous_message_id``).

        ``compile:start`` handlers run first, ``compile:done`` handlers get the result.

        Returns:
            A `CompiledRequest`: ``client.messages.create(**req.payload,
            extra_headers=req.headers)``.

        Raises:
            UnknownTargetError: Unknown target.
            UsageError: Unknown strategy or one the target or model cannot serve (a
                native one past the target's limit of deferred tools), bad options, a prefill
                (or a history ending with the model's turn) the model rejects, an empty
                conversation, a ``defer`` / ``pin`` pattern that matches no tool (unless
                the session was made with ``unmatched_patterns="warn"``).
            CorruptHistoryError: A message's recorded provider data cannot be rendered.
        """
        adapter = get_adapter(target)
        extra = {} if extra is None else extra
        check_options(model, max_tokens, extra, betas)  # before anything runs or changes
        self._check_patterns()
        declared = len(self.view.flat)  # what a native strategy could declare
        chosen = resolve(strategy, adapter.profile, adapter.model_rules(model), declared=declared)
        self._volatile.emit(CompileEvent(name="compile:start", target=target))
        before = self._state.copy()
        try:  # a compile that fails leaves the session as it was, handoff included
            self._handoff_if_due()
            ledger = self._state.ledgers.get(target) or Ledger()
            if ledger.pending is None and len(ledger.marks) == 1:
                _warn_unrecorded_thinking(adapter.model_rules(model), self._state.history, target)
            if ledger.undo is not None and not pending_answered(ledger, self._state.history):
                ledger = ledger.undo  # the edit was never answered: decide it again
            result, step = compile_request(
                CompileInput(
                    adapter=adapter,
                    strategy=chosen,
                    view=self.view,
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
                )
            )
        except BaseException:
            self._state = before
            raise
        undo = ledger.copy() if result.edits else None
        step.apply(ledger)
        ledger.undo = undo  # until answered, an edit can still be taken back
        self._state.ledgers[target] = ledger
        for edit in result.edits:
            logger.warning("contextchef: %s: %s", target, edit.detail)
        if self._volatile.cache_audit and result.edits:
            found = tuple(
                CacheAuditFinding(
                    block=f"{e.kind} edit", position=e.wire_index, breakpoint=-1, detail=e.detail
                )
                for e in result.edits
            )
            result = dataclasses.replace(result, audit=found)
        self._state.compiled = target
        self._state.strategy = chosen.name
        self._state.target = target if chosen.native is not None else None
        self._state.model = model if chosen.native is not None else None
        self._volatile.emit(CompileEvent(name="compile:done", target=target, request=result))
        return result

    def _memory_tool(self, strategy: Strategy) -> str | None:
        """Wire name of ``read_memories`` when the payload declares it, else None."""
        if self._memory is None:
            return None
        shown = any(t.name == READ_MEMORIES for t in strategy.tools(self.view))
        return READ_MEMORIES if shown else None


def _warn_unrecorded_thinking(rules: ModelRules, history: Sequence[Message], target: str) -> None:
    """Log once per fresh ledger when thinking meets the prefix check without a record.

    Only the target's own reasoning counts: another provider's is never sent to it.
    """
    if not rules.prefix_check:
        return
    if any(isinstance(p, ReasoningPart) and p.provider == target for m in history for p in m.parts):
        logger.warning(
            "contextchef: compiling a conversation that holds thinking blocks with no record "
            "of what was sent to this target before (a history set by hand, or this session "
            "compiled for another provider until now); if earlier requests to it carried "
            "state updates, announcements or memories, model %r will refuse that thinking: "
            "resume from the session's snapshot instead",
            rules.model,
        )
