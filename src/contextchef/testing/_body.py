"""Reading request bodies and headers without trusting them, for the rule modules.

Every helper tolerates a malformed body: a value of the wrong type reads as empty, so a
rule either reports it or skips it, and never raises.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Any

__all__ = [
    "NO_HEADERS",
    "as_list",
    "betas",
    "blocks",
    "canonical",
    "dicts",
    "gemini_function_parts",
    "hashable",
    "server_result",
    "without_cache_control",
]

NO_HEADERS: Mapping[str, str] = MappingProxyType({})
"""The default of a rule's keyword-only ``headers`` parameter: no headers at all."""


def as_list(value: object) -> list[Any]:
    """`value` when it is a list, else an empty list."""
    return value if isinstance(value, list) else []


def dicts(value: object) -> list[tuple[int, dict[str, Any]]]:
    """The (index, item) pairs of a list that are objects; nothing for a non-list."""
    return [(i, item) for i, item in enumerate(as_list(value)) if isinstance(item, dict)]


def blocks(message: Mapping[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """A message's content blocks; string content reads as one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return [(0, {"type": "text", "text": content})]
    return dicts(content)


def betas(headers: Mapping[str, str]) -> frozenset[str]:
    """The values of the ``anthropic-beta`` header (comma-separated, as the SDK joins them)."""
    value = headers.get("anthropic-beta", "")
    return frozenset(part.strip() for part in value.split(",") if part.strip())


def without_cache_control(value: Any) -> Any:
    """A copy of a JSON value with every ``cache_control`` key removed, at any depth.

    Adding, moving or removing a cache breakpoint is not an edit of the conversation
    (the preserved-thinking prefix-check page, rule R7), so comparisons of prompts go
    through this first.
    """
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(item) for item in value]
    return value


def canonical(value: Any) -> str:
    """One text per JSON value: sorted keys, no whitespace (key order is not an edit, R8)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def by_value(value: Any) -> str:
    """`canonical`, each number written once whatever its form.

    ``1e+20``, ``1e20``, ``100000000000000000000`` and ``1.0e20`` are one number, and so
    are ``-0.0``, ``0.0`` and ``0``: JSON has one number type, and a client re-serializing
    what it was sent may write any of them (JavaScript's ``JSON.stringify`` writes ``1e20``
    as ``100000000000000000000`` and ``-0`` as ``0``; Python's ``json`` writes ``1e+20``),
    and a store that keeps JSON as a value gives back decimals (PostgreSQL ``jsonb``). So a
    check "by value" (R8: "JSON formatting and key order don't matter; the values do")
    compares numbers as numbers.
    """
    text = canonical(value)
    whole: list[bool] = []

    def number(token: str) -> float | int:
        parsed = float(token)
        if not parsed.is_integer():
            return parsed
        whole.append(True)
        return int(Decimal(token))  # the number the text names: 1e+23 is 10**23

    if "." not in text and "e" not in text and "E" not in text:
        return text  # no float token
    again = json.loads(text, parse_float=number)
    return canonical(again) if whole else text


def hashable(value: object) -> object:
    """`value`, or its repr when it cannot be a set member (a list or dict used as an id)."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def server_result(block: object) -> bool:
    """A server tool's result block (``web_search_tool_result``...), not a ``tool_result``."""
    kind = block.get("type") if isinstance(block, Mapping) else None
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"


def gemini_function_parts(body: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(``contents[i].parts[j].functionCall`` or ``functionResponse``, its value) per part.

    The value is read under its camelCase or snake_case key (the SDK sends either); a part
    without one yields nothing. The value may be of any type: the rule judges it.
    """
    for i, content in dicts(body.get("contents")):
        for j, part in dicts(content.get("parts")):
            for camel, snake in (
                ("functionCall", "function_call"),
                ("functionResponse", "function_response"),
            ):
                if camel in part or snake in part:
                    yield f"contents[{i}].parts[{j}].{camel}", part.get(camel, part.get(snake))
