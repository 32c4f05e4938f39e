"""`canonical_dumps` as the public entry point: junk is a `UsageError`, never a crash.

The library's own serializer (`contextchef._json.canonical_dumps`) is called on values it
has already checked and lets `ValueError` through to the few callers that catch it; the
public function checks the value first with the one JSON check (`json_problem`).
"""

from __future__ import annotations

from contextchef._errors import check_json
from contextchef._json import JsonValue
from contextchef._json import canonical_dumps as _dumps

__all__ = ["canonical_dumps"]

MAX_DUMPS_DEPTH = 500
"""Deepest nesting `canonical_dumps` writes (Python's JSON encoder recurses per level)."""


def canonical_dumps(value: JsonValue) -> str:
    """Serialize a JSON value compactly and deterministically (UTF-8 text, no NaN).

    Keys are written in the order the value holds them (build payloads in a fixed order,
    or pass them through `canonical_value` first).

    Raises:
        UsageError: The value is not JSON data: NaN or an infinity, an integer past a
            double's range (about 1.8e308), text holding a lone surrogate, a non-string
            key, another type, or nesting deeper than `MAX_DUMPS_DEPTH` levels.
    """
    check_json("the value", value, max_depth=MAX_DUMPS_DEPTH)
    return _dumps(value)
