"""Anthropic's turn rules, judged on turns as the API builds them from ``messages``.

The API merges consecutive ``user`` (or ``assistant``) messages into one turn: the
Anthropic SDK's ``message_create_params.py`` ``messages`` docstring ("Consecutive user or
assistant turns in your request will be combined into a single turn";
``provider-native-disclosure.md`` section 1.5: ``user, user, system`` is a valid tail). So
these rules first merge each run of adjacent same-role messages into one turn
(`anthropic_turns`), then check the merged conversation:

* `anthropic_roles_alternate`: roles are ``user`` / ``assistant`` (``system`` messages are
  `contextchef.testing._placement`'s concern and are not turns) and the first turn is the
  user's, unless it opens with a ``compaction`` block (anthropic-preserved-thinking.md R22:
  "block first (own assistant message or first content block of first message)"). A
  ``system`` message between two same-role messages keeps them apart, so ``user, system,
  user`` is still refused here as well as by the placement rule;
* `anthropic_tool_use_answered`: every ``tool_use`` of an assistant turn is answered by a
  ``tool_result`` in the next (user) turn;
* `anthropic_tool_result_has_call`: every ``tool_result`` answers a ``tool_use`` of the
  previous (assistant) turn;
* `anthropic_tool_results_first`: in a user turn, ``tool_result`` blocks come before any
  other block; a result sent in a second user message after a text one is not first in
  the merged turn, and is refused.

Messages name the original ``messages[i].content[j]`` locations.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextchef.testing._body import blocks, dicts, hashable
from contextchef.testing._records import RecordedRequest

__all__ = [
    "Turn",
    "anthropic_roles_alternate",
    "anthropic_tool_result_has_call",
    "anthropic_tool_results_first",
    "anthropic_tool_use_answered",
    "anthropic_turns",
]

_Body = Mapping[str, Any]
_Earlier = Sequence[RecordedRequest]


@dataclass(frozen=True)
class Turn:
    """A run of adjacent same-role messages, merged as the API merges them."""

    role: object
    """The messages' role (``user`` or ``assistant``; anything else is reported)."""
    at: tuple[int, ...]
    """Indexes in ``messages`` of the merged messages, in order."""
    blocks: tuple[tuple[str, dict[str, Any]], ...]
    """(location ``messages[i].content[j]``, block) of every block, in order."""

    def of_type(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """The (location, block) pairs of the blocks of type `kind`."""
        return [(where, b) for where, b in self.blocks if b.get("type") == kind]

    @property
    def where(self) -> str:
        """``messages[i]``, or ``messages[i..k]`` for a merged turn."""
        first, last = self.at[0], self.at[-1]
        return f"messages[{first}]" if first == last else f"messages[{first}..{last}]"


def anthropic_turns(body: _Body) -> list[Turn]:
    """The conversation's turns: adjacent same-role non-system messages merged."""
    turns: list[Turn] = []
    for i, message in dicts(body.get("messages")):
        role = message.get("role")
        if role == "system":
            continue
        found = tuple((f"messages[{i}].content[{j}]", b) for j, b in blocks(message))
        if turns and turns[-1].role == role and turns[-1].at[-1] == i - 1:  # adjacent
            last = turns[-1]
            turns[-1] = Turn(role, (*last.at, i), (*last.blocks, *found))
        else:
            turns.append(Turn(role, (i,), found))
    return turns


def _use_ids(turn: Turn) -> list[object]:
    if turn.role != "assistant":
        return []
    return [hashable(b.get("id")) for _, b in turn.of_type("tool_use")]


def anthropic_roles_alternate(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Merged turns alternate user/assistant, starting with user (module doc)."""
    turns = anthropic_turns(body)
    opening = turns[0].blocks[:1] if turns and turns[0].role == "assistant" else ()
    expected = "assistant" if opening and opening[0][1].get("type") == "compaction" else "user"
    for turn in turns:
        if turn.role not in ("user", "assistant"):
            yield f"{turn.where}: role {turn.role!r} is not 'user', 'assistant' or 'system'"
            return
        if turn.role != expected:
            yield (
                f"{turn.where}: role {turn.role!r} where {expected!r} was expected; turns "
                "must alternate user/assistant, starting with user (adjacent messages of "
                "one role are merged into one turn; a system message between keeps them "
                "apart)"
            )
            return
        expected = "assistant" if turn.role == "user" else "user"


def anthropic_tool_use_answered(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Every ``tool_use`` is answered by a ``tool_result`` in the next (user) turn."""
    turns = anthropic_turns(body)
    for k, turn in enumerate(turns):
        ids = _use_ids(turn)
        if not ids:
            continue
        following = turns[k + 1] if k + 1 < len(turns) else None
        answered = set()
        if following is not None and following.role == "user":
            answered = {hashable(b.get("tool_use_id")) for _, b in following.of_type("tool_result")}
        missing = [x for x in ids if x not in answered]
        if missing:
            where = "no next message" if following is None else following.where
            yield (
                f"{turn.where}: tool_use ids {missing} have no tool_result block in the next "
                f"user turn ({where}); each tool_use must be answered right after it"
            )


def anthropic_tool_result_has_call(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """Every ``tool_result`` answers a ``tool_use`` of the previous (assistant) turn."""
    turns = anthropic_turns(body)
    for k, turn in enumerate(turns):
        if turn.role != "user":
            continue
        calls = set(_use_ids(turns[k - 1])) if k > 0 else set()
        for where, block in turn.of_type("tool_result"):
            if hashable(block.get("tool_use_id")) not in calls:
                yield (
                    f"{where}: tool_result for {block.get('tool_use_id')!r} has no matching "
                    "tool_use in the previous assistant turn"
                )


def anthropic_tool_results_first(body: _Body, earlier: _Earlier) -> Iterator[str]:
    """In a (merged) user turn, ``tool_result`` blocks come before any other block."""
    for turn in anthropic_turns(body):
        if turn.role != "user":
            continue
        other = False
        for where, block in turn.blocks:
            if block.get("type") != "tool_result":
                other = True
            elif other:
                yield (
                    f"{where}: tool_result after another block; tool_result blocks must come "
                    "first in a user turn (adjacent user messages are merged into one turn)"
                )
                break
