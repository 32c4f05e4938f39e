"""Replay hints: the wire shape a parsed part keeps in ``provider_data`` (providers layer).

A part parsed from a provider's history keeps, in ``provider_data`` tagged with the wire
format it came from (``{"provider": "anthropic" | "openai" | "responses" | "gemini"}``),
what the IR does not model: ``extra`` (wire keys the IR has no field for, re-emitted
after the keys built from the IR) and ``keys`` (the wire key order, when it differs from
the adapter's). Values always come from the IR fields, so an edited part (a cleared
result, new arguments) is sent as edited; hints only restore the shape.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from contextchef._json import thaw
from contextchef.history._messages import ProviderData

__all__ = ["apply_hints", "data_url", "hints", "split_data_url"]

_NO_HINTS: Mapping[str, Any] = {}


def hints(data: ProviderData | None, fmt: str) -> Mapping[str, Any]:
    """`data` when it was recorded from wire format `fmt`, else an empty mapping."""
    if data is not None and data.get("provider") == fmt:
        return data
    return _NO_HINTS


def apply_hints(
    built: dict[str, Any], hint: Mapping[str, Any], *, optional: Collection[str] = ()
) -> dict[str, Any]:
    """`built` with the recorded ``extra`` keys added and the recorded key order restored.

    Args:
        built: The block or message as the adapter builds it from the IR.
        hint: The ``provider_data`` hints for this wire format (see `hints`).
        optional: Keys of `built` holding a default value (e.g. ``content: None``) that
            are dropped when the recorded block did not have them.

    Returns:
        `built` itself when `hint` is empty (most parts: built by hand, nothing
        recorded), else a new dict; `built` is not modified.
    """
    if not hint:
        return built
    out = dict(built)
    extra = hint.get("extra")
    if isinstance(extra, Mapping):  # anything else is not a recorded hint: ignored
        for key, value in extra.items():
            out.setdefault(str(key), thaw(value))
    keys = hint.get("keys")
    if not keys or not isinstance(keys, Sequence) or not all(isinstance(k, str) for k in keys):
        return out
    head = {k: out[k] for k in keys if k in out}
    tail = {k: v for k, v in out.items() if k not in head and k not in optional}
    return head | tail


def data_url(media_type: str, data: str) -> str:
    """A ``data:`` URL for base64 `data` (https://www.rfc-editor.org/rfc/rfc2397)."""
    return f"data:{media_type};base64,{data}"


def split_data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a base64 ``data:`` URL, or None for any other URL."""
    head, sep, data = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        return None
    return head[len("data:") : -len(";base64")], data
