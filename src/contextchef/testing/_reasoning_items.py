"""Responses: a ``reasoning`` input item needs the item of its turn that follows it.

OpenAI's Responses API refuses an ``input`` whose ``reasoning`` item has no following
output item of the same model turn (a ``message``, ``function_call`` or other item the
model produced after reasoning), with ``invalid_request_error`` on ``param: "input"``:
"Item 'rs_…' of type 'reasoning' was provided without its required following item."
(recorded 400s quoted in continuedev/continue#8933 and #10428, vercel/ai#7099 and #8031,
mastra-ai/mastra#14048, openai/openai-node#1567). A reply cut at ``max_output_tokens``
while the model was still reasoning (``status: "incomplete"``) holds only a reasoning
item: replayed as it came, before the next user message, it is such an item.

The turn of a reasoning item is the run of model items after it up to the next item the
client sends (a ``user`` / ``system`` / ``developer`` message, a tool's ``*_output``, a
``compaction`` or ``item_reference`` item) or the end of ``input``. In `RESPONSES_RULES`
(`contextchef.testing._rules`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import dicts
from contextchef.testing._records import RecordedRequest, provider_worded

__all__ = ["responses_reasoning_followed"]

_CLIENT_ITEMS = frozenset({"compaction", "item_reference"})
_CLIENT_ROLES = frozenset({"user", "system", "developer"})


def _ends_turn(item: Mapping[str, Any]) -> bool:
    """Whether `item` is the client's (it ends the model turn before it)."""
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") in _CLIENT_ROLES
    return isinstance(kind, str) and (kind in _CLIENT_ITEMS or kind.endswith("_output"))


@provider_worded
def responses_reasoning_followed(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """Each ``reasoning`` item in ``input`` is followed, within its turn, by a model item.

    Worded as the API words it (the item's id names it), the first such item only, as
    the API reports one. A reasoning item followed by another reasoning item and then a
    model item is accepted: the fake refuses only what is sure to fail.
    """
    items = dicts(body.get("input"))
    for k, (_, item) in enumerate(items):
        if item.get("type") != "reasoning":
            continue
        turn = [a for _, a in items[k + 1 :]]
        ends = next((n for n, a in enumerate(turn) if _ends_turn(a)), len(turn))
        if all(a.get("type") == "reasoning" for a in turn[:ends]):
            yield (
                f"Item {item.get('id')!r} of type 'reasoning' was provided without its "
                "required following item."
            )
            return
