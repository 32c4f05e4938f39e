"""Tool-call arguments as the model wrote them, read as a JSON object (or why not).

One parser for every reader of a call's arguments: `ToolCall.parsed_arguments`, the
normalizer, the gate and the transcript readers. Arguments that JSON cannot carry are
held as a marker text (`unreadable_arguments`) that the parser reads back as its reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from contextchef._errors import json_reason
from contextchef._json import JsonValue, json_problem

__all__ = ["json_kind", "parse_json_object", "unreadable_arguments"]


def json_kind(value: object) -> str:
    """What JSON calls `value`'s type (``array``, ``string``, ``number``, ...)."""
    kinds = {bool: "a boolean", str: "a string", list: "an array", type(None): "null"}
    return kinds.get(type(value), "a number" if isinstance(value, int | float) else "a value")


_UNREADABLE = "<arguments that are not JSON: they "


def unreadable_arguments(problem: str) -> str:
    """Text standing for call arguments JSON cannot carry.

    `parse_json_object` reports `problem` for it (a lower-case fragment, e.g. ``"are
    nested more than 100 levels deep"``).
    """
    return f"{_UNREADABLE}{problem}>"


def _reject_constant(token: str) -> float:
    raise ValueError(f"{token} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
"""``json.loads(text, parse_constant=...)`` makes a decoder per call; this one is made once
(its ``decode`` is what ``json.loads`` calls, after refusing a leading BOM as here)."""


def parse_json_object(raw: object) -> dict[str, JsonValue] | str:
    """Tool-call arguments (JSON text or a mapping) as a dict, or why they are not one.

    The one argument parser: `ToolCall.parsed_arguments`, the normalizer and the gate all
    use it. Whitespace-only text means ``{}``. NaN, Infinity and numbers too large for a
    float are refused: providers reject them, and a call holding one would break every
    later request once stored.

    Returns:
        The arguments, or a lower-case sentence fragment saying what is wrong.
    """
    value = raw
    if isinstance(raw, str) and raw.startswith(_UNREADABLE) and raw.endswith(">"):
        return f"the arguments {raw[len(_UNREADABLE) : -1]}"
    if isinstance(raw, str):
        try:
            text = raw.strip() or "{}"
            if text.startswith("\ufeff"):  # as json.loads: "Unexpected UTF-8 BOM"
                raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
            value = _DECODER.decode(text)
        except json.JSONDecodeError as exc:
            return f"the arguments are not valid JSON ({exc.msg})"
        except (ValueError, RecursionError) as exc:
            return f"the arguments are not valid JSON ({json_reason(exc)})"
    if not isinstance(value, Mapping):
        return f"the arguments must be a JSON object, got {json_kind(value)}"
    problem = json_problem(value)
    if problem:
        return f"the arguments {problem}"
    return dict(value)
