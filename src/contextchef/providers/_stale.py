"""Whether messages sent name tools a new ``tools`` array no longer declares (`stale`).

When ``tools`` changes mid-conversation on a model without a prefix check, the messages
already sent are kept (a rebase) unless they refer to a tool the new array lacks: a
``tool_reference``, a tool change by reference (`dangling`), or what the adapter would
rewrite in them (`Adapter.fit_references`: a call replayed in a namespace that no longer
holds it). Then the whole conversation is sent again. Read by the session's compile
(`contextchef.session._compile`) only when ``tools`` changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextchef.history._messages import Message
from contextchef.providers._base import Adapter, ModelRules
from contextchef.providers._tool_changes import ToolState, tool_names

__all__ = ["dangling", "stale"]


def dangling(state: ToolState, tools: Sequence[Any]) -> bool:
    """Whether what was sent names by reference a tool `tools` no longer declares.

    A ``tool_reference`` (search results, custom search) or a tool change by reference
    must resolve on every later request (research note rule 3); a tool defined inline
    resolves a tool change by its definition. Whether a target's result references may
    name one is the adapter's to say (`stale` asks its `Adapter.fit_references`).
    """
    named = state.revealed | state.added | state.removed
    return bool(named) and not named <= set(tool_names(tools)) | set(state.defined)


def stale(
    adapter: Adapter,
    sent: Sequence[Message],
    state: ToolState,
    tools: list[Any],
    *,
    was: Sequence[Any],
    rules: ModelRules,
) -> bool:
    """Whether the messages `sent` name a tool (or namespace) `tools` no longer declares.

    Tool changes by reference and ``tool_reference`` blocks (`dangling`), and what the
    adapter would rewrite in them under `tools` but not under `was`, the tools they were
    sent with (`Adapter.fit_references`, under the model's `rules`; the tools tool
    changes defined not counted: a call sent before the change would name what nothing
    before it declares). What the adapter fits to the model whatever the tools is no
    reference: Gemini 3's placeholder signatures on the current turn's unsigned steps
    (``signed_foreign_call``) or media it does not take (``media_as_text``) come the same
    under either array. The model refuses those steps, not the tools change, and
    `Adapter.refused_at` names the first of them: the conversation is sent again from
    there, not from its start.
    """
    if dangling(state, tools):
        return True
    now = adapter.fit_references(sent, tools, rules=rules)[1]
    return bool(now) and not set(now) <= set(
        adapter.fit_references(sent, list(was), rules=rules)[1]
    )
