"""`FakeAnthropic`: the Anthropic Messages fake (see `contextchef.testing._fake`).

Its rules are `ANTHROPIC_RULES`; its context management and compaction are a
`ContextViews` it holds (`contextchef.testing._context`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contextchef.testing import _replies, _search
from contextchef.testing._binding import (
    THINKING_BETA,
    anthropic_thinking_prefix,
    input_transformations,
    judge_thinking,
    sign_thinking,
)
from contextchef.testing._body import betas
from contextchef.testing._context import ContextViews, ModelView
from contextchef.testing._diagnostics import cache_diagnostics
from contextchef.testing._fake import RECORDED_HEADERS, FakeProvider
from contextchef.testing._records import Check, RecordedRequest
from contextchef.testing._replies import Ids
from contextchef.testing._reveals import anthropic_unrevealed
from contextchef.testing._rules import ANTHROPIC_RULES
from contextchef.testing._script import Turn
from contextchef.testing._signing import FAKE_SIGNING_KEY

__all__ = ["FakeAnthropic"]


class FakeAnthropic(FakeProvider):
    """Anthropic Messages (``anthropic.Anthropic(http_client=...)``), `ANTHROPIC_RULES`.

    Context management and compaction (`contextchef.testing._context`): what the model
    sees starts at the newest ``compaction`` block, ``context_management.edits`` are
    applied to it and reported in ``context_management.applied_edits``, threshold
    compaction prepends a ``compaction`` block, and an on-demand ``compaction`` request
    (or ``pause_after_compaction``) is answered with the block alone, using no scripted
    turn. `model_views` keeps what the model saw of each answered request.

    Besides the rules, a reply gets the fields the request asks for:
    ``input_transformations`` (with the ``thinking-binding-controls-2026-08-01`` beta: the
    thinking blocks dropped under ``drop_block``, else ``[]``; when
    `anthropic_thinking_prefix` is left out of the rules, the blocks that failed the check
    as ``thinking_mismatch_allowed``), and ``diagnostics`` (when the request carries
    ``diagnostics``; see `contextchef.testing._diagnostics`). Scripted `raw` replies are
    sent as given.
    """

    wire = "anthropic"
    endpoint = "/v1/messages"
    default_rules = ANTHROPIC_RULES
    _suffix = "/v1/messages"

    def __init__(
        self,
        *,
        rules: Iterable[Check] | None = None,
        record_headers: Iterable[str] = RECORDED_HEADERS,
        ids: Ids | None = None,
        signing_key: bytes = FAKE_SIGNING_KEY,
    ) -> None:
        super().__init__(
            rules=rules, record_headers=record_headers, ids=ids, signing_key=signing_key
        )
        self._context = ContextViews(self._ids, self._lock)

    @property
    def model_views(self) -> tuple[ModelView, ...]:
        """What the model saw of each request answered from the script or by compaction."""
        return self._context.views

    def _unscripted(self, path: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._context.unscripted(body)

    def _reply(self, turn: Turn, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
        if self.refuse_unrevealed:  # before any id is taken: a refused turn stays queued
            anthropic_unrevealed(turn, body)
        searched = _search.anthropic_search_blocks(turn.searches, body, self._ids)
        return _replies.anthropic_reply(turn, model, self._ids, searched)

    def _extend(
        self,
        reply: dict[str, Any],
        body: Mapping[str, Any],
        earlier: tuple[RecordedRequest, ...],
        headers: Mapping[str, str],
    ) -> dict[str, Any]:
        if THINKING_BETA in betas(headers):
            verdict = judge_thinking(body, earlier)
            enforced = anthropic_thinking_prefix in self._rules
            reply["input_transformations"] = input_transformations(verdict, enforced=enforced)
        if "diagnostics" in body:
            reply["diagnostics"] = cache_diagnostics(body, earlier, headers)
        return sign_thinking(self._context.managed(reply, body), body)

    def _error(self, status: int, message: str) -> dict[str, Any]:
        return _replies.anthropic_error(status, message)
