"""An independent check of Anthropic's preserved-thinking prefix rule over recorded requests.

Written apart from `contextchef.testing`'s fake, from the rule as the docs state it
(https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks):
a ``thinking`` / ``redacted_thinking`` block sent back must come with the same ``system``,
the same set of non-deferred ``tools`` and the same messages before it (compared by
value; ``cache_control`` is not part of the prefix) as the request whose reply produced
it, at the same position within its assistant turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["prefix_problems"]

_THINKING = ("thinking", "redacted_thinking")


def _clean(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _tools(body: Mapping[str, Any]) -> list[Any]:
    kept = [_clean(t) for t in body.get("tools") or () if not t.get("defer_loading")]
    return sorted(kept, key=repr)


def _key(block: Mapping[str, Any]) -> str:
    return str(block.get("signature") or block.get("data"))


def prefix_problems(
    exchanges: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
    models: frozenset[str] | None = None,
) -> list[str]:
    """Every prefix-rule breach in a conversation's (request body, reply body) pairs.

    `models`: check only requests for these models (the ones running the check); every
    reply still counts as where its blocks were produced. None: every request.
    """
    made: dict[str, tuple[Mapping[str, Any], list[Any], int]] = {}
    problems: list[str] = []
    for n, (body, reply) in enumerate(exchanges):
        messages = body.get("messages") or []
        if models is not None and body.get("model") not in models:
            messages = []
        for i, message in enumerate(messages):
            content = message.get("content")
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            for j, block in enumerate(content):
                if block.get("type") not in _THINKING:
                    continue
                where = f"request {n} messages[{i}].content[{j}]"
                if _key(block) not in made:
                    problems.append(f"{where}: a thinking block no reply produced")
                    continue
                source, produced, k = made[_key(block)]
                if _clean(body.get("system")) != _clean(source.get("system")):
                    problems.append(f"{where}: system differs")
                if _tools(body) != _tools(source):
                    problems.append(f"{where}: tools differ")
                if _clean(messages[:i]) != _clean(source.get("messages")):
                    problems.append(f"{where}: earlier messages differ")
                if j != k or _clean(content[:j]) != _clean(produced[:k]):
                    problems.append(f"{where}: blocks before it in its turn differ")
        produced = list(reply.get("content") or [])
        for k, block in enumerate(produced):
            if isinstance(block, Mapping) and block.get("type") in _THINKING:
                made[_key(block)] = (body, produced, k)
    return problems
