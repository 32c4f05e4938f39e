"""Tool entries that differ from those sent in wording only (a library upgrade's texts).

A session restored by another release of contextchef renders its ``tools`` again, and
the library's own texts may have changed since they were sent: ``tool_search``'s and
``defer_execute``'s descriptions, the memory tools', how a description is cut. The tools
the host registered are the same (a restore refuses other ones). Sending the new texts
would change the prefix before every message: on Anthropic that misses the prompt cache
once, and on models with the prefix check (``tools`` are part of the checked prefix,
research/anthropic-preserved-thinking.md R6) the conversation's earlier thinking is no
longer sent. A resume replays the rendered tool definitions as sent (R24; "freeze
``system`` and ``tools``", R13), and what was sent is never re-rendered (DESIGN.md,
append-only): the session sends the entries it sent instead, for as long as the strategy
renders the same new ones (`contextchef.session._compile`).

`wording_only` is the test: the same entries with the same keys and values, but for
``description`` texts. Anything else (a name, a schema keyword, an entry added or
removed) is a change of what the model can call, left to the edit rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["wording_only"]


def wording_only(sent: Sequence[Any], now: Sequence[Any]) -> bool:
    """Whether tool entries `now` differ from `sent` in ``description`` texts alone.

    Both are one target's rendered tool entries (JSON lists). True when they are not
    equal and every difference is a string under a ``description`` key (at any depth:
    a tool's or a parameter's; a parameter *named* ``description`` holds a schema, which
    is compared as any other value). Key order is not compared: the entries sent are
    what is sent again, and neither is the order of entries that each name one tool (by
    ``name``, else ``type``): a tool declared mid-conversation goes after those sent
    (`providers._tool_order`), where the strategy's own order may put it before them.
    """
    return list(sent) != list(now) and _alike(sent, _aligned(sent, now), None)  # equal: in C


def _tag(entry: Any) -> object:
    if not isinstance(entry, Mapping):
        return None
    name = entry.get("name")
    return name if isinstance(name, str) else entry.get("type")


def _aligned(sent: Sequence[Any], now: Sequence[Any]) -> Sequence[Any]:
    """`now` in the order of `sent`'s entries, when both name the same tools once each."""
    tags = [_tag(e) for e in sent]
    found = {_tag(e): e for e in now}
    if None in found or len(found) != len(now) or len(set(tags)) != len(tags):
        return now
    return [found[t] for t in tags] if found.keys() == set(tags) else now


def _alike(a: Any, b: Any, key: object) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_alike(a[k], b[k], k) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_alike(x, y, None) for x, y in zip(a, b, strict=True))
    if key == "description" and isinstance(a, str) and isinstance(b, str):
        return True
    return type(a) is type(b) and a == b
