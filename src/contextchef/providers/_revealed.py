"""What the provider has revealed of the deferred tools: the gate's side of a reveal.

Under a provider-native strategy a deferred tool is callable by name only once a request
revealed it (research note provider-native-disclosure.md §1.1, §1.4, §2.1, rule 28);
`revealed_by` is that set, which the session's gate context reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextchef.history._messages import Message
from contextchef.providers._base import Adapter
from contextchef.providers._tool_changes import ToolState

__all__ = ["revealed_by"]


def revealed_by(
    adapter: Adapter, messages: Sequence[Message], state: ToolState | None
) -> frozenset[str]:
    """The deferred tools the provider has revealed: callable by name on a native strategy.

    What `messages` reveal (`Adapter.revealed_tools`: ``tool_reference`` blocks of server
    and client search results, Responses ``tool_search_output`` / ``additional_tools``
    items) and what the requests sent revealed, per `state` (the ledger's newest mark):
    references, tool additions by reference and by definition. A deferred tool is "only
    loaded when returned via tool_reference from tool search" or surfaced by a
    ``tool_addition`` (research note provider-native-disclosure.md §1.1, §1.4; Responses
    §2.1: loaded by a ``tool_search_output``); one loaded otherwise (a toolkit or skill
    load, `ContextChef.reveal_tools`) counts once a request revealed it.
    """
    names = adapter.revealed_tools(messages)
    if state is None:
        return names
    return names | state.revealed | state.added | frozenset(state.defined)
