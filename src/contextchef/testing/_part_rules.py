"""Request rules on the fields of single parts (names, inline data), one per provider doc.

* `anthropic_base64_valid`: an ``image`` / ``document`` block with a ``base64`` source
  carries standard base64 in ``source.data`` (https://docs.anthropic.com/en/api/messages,
  ``source.data``: base64-encoded bytes), in messages and inside ``tool_result`` content;
* `anthropic_property_keys_valid`: the top-level ``input_schema.properties`` keys of every
  custom tool in ``tools`` (deferred ones included) match ``^[a-zA-Z0-9_.-]{1,64}$``; the
  API refuses the whole request otherwise, worded as here (public reports:
  anthropics/claude-code#79418, ComposioHQ/composio#3067; nested keys are not checked);
* `gemini_function_names_present`: every ``functionCall`` and ``functionResponse`` has a
  non-empty ``name`` (https://ai.google.dev/api/caching#FunctionCall: ``name``
  "Required"; the same for ``FunctionResponse``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextchef.testing._body import blocks, dicts, gemini_function_parts
from contextchef.testing._records import RecordedRequest

__all__ = [
    "anthropic_base64_valid",
    "anthropic_property_keys_valid",
    "gemini_function_names_present",
]

_PROPERTY_KEY = re.compile(r"[a-zA-Z0-9_.-]{1,64}")


def _bad_base64(source: object) -> str | None:
    """What is wrong with a ``base64`` source's data, or None (not one, or valid)."""
    if not isinstance(source, Mapping) or source.get("type") != "base64":
        return None
    data = source.get("data")
    if not isinstance(data, str) or not data:
        return f"source.data must be non-empty base64, got {data!r:.40}"
    try:
        base64.b64decode(data, validate=True)
    except ValueError as exc:
        return f"source.data is not valid base64 ({exc})"
    return None


def anthropic_base64_valid(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """``base64`` sources of image and document blocks hold valid, non-empty base64."""
    for i, message in dicts(body.get("messages")):
        for j, block in blocks(message):
            inner = dicts(block.get("content")) if block.get("type") == "tool_result" else []
            for at, item in [(f"content[{j}]", block)] + [
                (f"content[{j}].content[{k}]", b) for k, b in inner
            ]:
                problem = _bad_base64(item.get("source"))
                if problem is not None:
                    yield f"messages[{i}].{at}: {problem}"


def anthropic_property_keys_valid(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """Custom tools' top-level ``input_schema.properties`` keys match the API's pattern."""
    for j, tool in dicts(body.get("tools")):
        if tool.get("type", "custom") not in (None, "custom"):
            continue  # a server tool: no input_schema
        schema = tool.get("input_schema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        bad = [k for k in properties or () if not _PROPERTY_KEY.fullmatch(k)]
        if isinstance(properties, dict) and bad:
            yield (
                f"tools.{j}.custom.input_schema.properties: Property keys should match "
                f"pattern '^[a-zA-Z0-9_.-]{{1,64}}$' (got {bad[0]!r:.80})"
            )


def gemini_function_names_present(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """Every ``functionCall`` / ``functionResponse`` part has a non-empty ``name``."""
    for at, value in gemini_function_parts(body):
        if isinstance(value, dict):
            name = value.get("name")
            if not isinstance(name, str) or not name:
                yield f"{at}.name: required, got {name!r}"
