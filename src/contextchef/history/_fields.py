"""Checks of one part field's kind, shared by the part constructors (messages layer).

A field of the wrong kind is refused where the part is made, naming ``Part.field`` and
what would be valid, so a wrong value never reaches a provider: google-genai's request
types reject media data that is not base64 in the host's loop, Anthropic answers 400 for
it (``source.data``: base64, https://docs.anthropic.com/en/api/messages), and every wire
requires a tool call's function name (Gemini ``FunctionCall.name``: "Required",
https://ai.google.dev/api/caching#FunctionCall; Anthropic ``tool_use.name``; OpenAI
``function.name``), as `ToolSpec` does for a registered tool.
"""

from __future__ import annotations

import base64

from contextchef._errors import UsageError, shown
from contextchef._json import is_unicode

__all__ = ["require_base64", "require_bool", "require_name", "require_str"]


def require_str(field_name: str, value: object) -> None:
    """Refuse a `value` that is not a `str` of valid Unicode (`UsageError`)."""
    if not isinstance(value, str):
        raise UsageError(f"{field_name} must be a string, got {type(value).__name__}")
    if not is_unicode(value):
        raise UsageError(
            f"{field_name} holds text that is not valid Unicode (a lone surrogate), which "
            "cannot be sent as UTF-8"
        )


def require_name(field_name: str, value: object) -> None:
    """Refuse a `value` that is not a non-empty string (a wire name: `UsageError`)."""
    require_str(field_name, value)
    if not value:
        raise UsageError(f"{field_name} must be a non-empty name, got ''")


def require_bool(field_name: str, value: object) -> None:
    """Refuse a `value` that is not exactly True or False (`UsageError`).

    ``"no"`` or ``0`` would otherwise be read by truth value: ``"no"`` as an error.
    """
    if type(value) is not bool:
        raise UsageError(f"{field_name} must be a bool (true or false), got {shown(value, 80)}")


def require_base64(field_name: str, value: object) -> None:
    """Refuse a `value` that is not non-empty standard base64 text (`UsageError`).

    Standard alphabet, padded, no whitespace or other characters (``b64decode`` with
    ``validate=True``, as ``binascii.a2b_base64(strict_mode=True)`` on Python 3.11+).
    """
    require_str(field_name, value)
    try:
        decoded = base64.b64decode(value, validate=True)  # type: ignore[arg-type]
    except ValueError as exc:  # binascii.Error, or text that is not ASCII
        raise UsageError(
            f"{field_name} must be base64 (A-Z, a-z, 0-9, +, /, '=' padding; no whitespace): {exc}"
        ) from None
    if not decoded:
        raise UsageError(f"{field_name} must hold the media's bytes as base64, got ''")
