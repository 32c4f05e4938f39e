"""SDK objects (pydantic models of the official SDKs) read as their JSON dicts.

`sdk_json` is ``model_dump(mode="json", ...)`` that never depends on the serializer's
depth limit. Pydantic stops at 255 nested levels ("Maximum serialization depth
exceeded"; google-genai's Interactions models say "Circular reference detected (id
repeated)"), so a tool call whose arguments the model nested that deep, parsed by the SDK
into a plain dict, made the whole response unreadable: the call named nowhere, its
turn lost, the model never told. When the whole dump fails, the model is read field by
field: each field that dumps is taken as the SDK writes it, a field that does not is
walked (its models read the same way, its lists and dicts item by item), and a plain
value holding no model (a ``tool_use`` ``input``, a Gemini ``functionCall.args``) is
handed over as the SDK parsed it, so the JSON-value checks downstream (the gate:
"nested more than 100 levels deep") judge it as they judge the same reply read as a
dict.

NaN and infinities the SDK parsed are kept (pydantic writes them as ``null`` in JSON
mode, which would turn ``{"x": NaN}`` into ``{"x": null}`` and let it run).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["is_model", "sdk_json"]


def is_model(value: object) -> bool:
    """Is `value` a pydantic model (it has ``model_dump`` and its class ``model_fields``)?"""
    return callable(getattr(value, "model_dump", None)) and isinstance(
        getattr(type(value), "model_fields", None), Mapping
    )


def sdk_json(model: Any, **flags: Any) -> Any:
    """``model.model_dump(mode="json", **flags)``, read field by field where it fails.

    Args:
        model: An object with ``model_dump`` (an SDK response, block or call).
        **flags: ``model_dump`` keywords other than ``mode`` (``exclude_unset``,
            ``exclude_none``, ``by_alias``, ``warnings``).

    Returns:
        The JSON form (a dict for a model), NaN / infinities kept as floats; values the
        serializer could not nest are the SDK's own plain objects (not copied).

    Raises:
        Exception: The dump's own error, when `model` is no pydantic model or a field
            that fails holds nothing to walk (the caller turns it into its own error).
    """
    try:
        data = model.model_dump(mode="json", **flags)
        if isinstance(data, (dict, list)):
            _keep_non_finite(data, model.model_dump(mode="python", **flags))
        return data
    except Exception:
        if not is_model(model):
            raise
    return _by_field(model, flags)


def _by_field(model: Any, flags: dict[str, Any]) -> dict[str, Any]:
    """`model`'s JSON dict, one field at a time (see the module docstring)."""
    fields: Mapping[str, Any] = type(model).model_fields
    extra = getattr(model, "model_extra", None) or {}
    out: dict[str, Any] = {}
    for name in (*fields, *(k for k in extra if k not in fields)):
        try:
            out.update(_part(model, name, flags))
            continue
        except Exception as exc:
            failed = exc
        value = extra[name] if name in extra else getattr(model, name)
        if flags.get("exclude_unset") and name not in model.model_fields_set:
            continue
        if flags.get("exclude_none") and value is None:
            continue
        field = fields.get(name)
        alias = getattr(field, "alias", None) if flags.get("by_alias") else None
        try:
            out[alias or name] = _walked(value, flags)
        except _Leaf:  # nothing to walk: the field's own error says why
            raise failed from None
    return out


def _part(model: Any, name: str, flags: dict[str, Any]) -> dict[str, Any]:
    """The JSON dict of one field of `model` (``{}`` when the flags leave it out)."""
    data = model.model_dump(mode="json", include={name}, **flags)
    _keep_non_finite(data, model.model_dump(mode="python", include={name}, **flags))
    return data if isinstance(data, dict) else {}


def _walked(value: Any, flags: dict[str, Any]) -> Any:
    """A field value the dump failed on: models read by field, plain data as it is."""
    if is_model(value):
        return sdk_json(value, **flags)
    if isinstance(value, (list, tuple, dict)) and _holds_model(value):
        if isinstance(value, dict):
            return {k: _walked(v, flags) for k, v in value.items()}
        return [_walked(v, flags) for v in value]
    if isinstance(value, (list, tuple, dict, str, int, float)) or value is None:
        return list(value) if isinstance(value, tuple) else value
    raise _Leaf


class _Leaf(Exception):
    """A value the dump failed on that holds no model or plain container to walk."""


def _holds_model(value: Any) -> bool:
    """Does a list / dict hold a model at any depth (walked without recursion)?"""
    stack = [value]
    while stack:
        item = stack.pop()
        if is_model(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False


def _keep_non_finite(data: Any, python: Any) -> None:
    """Put back in `data` (a JSON-mode dump) the NaN / Infinity its dump turned into null.

    `python` is the same object dumped in Python mode (same shape).
    """
    try:
        pairs = _pairs(data, python)
    except RecursionError:  # nested deeper than the history accepts anyway
        return
    for holder, key, value in pairs:
        holder[key] = value


def _pairs(data: Any, python: Any) -> list[tuple[Any, Any, float]]:
    """(container, key, non-finite float) for each null of `data` that `python` holds as one."""
    found: list[tuple[Any, Any, float]] = []
    if isinstance(data, dict) and isinstance(python, dict):
        keys: Iterable[Any] = python.keys()
    elif isinstance(data, list) and isinstance(python, (list, tuple)) and len(data) == len(python):
        keys = range(len(data))
    else:
        return found
    for key in keys:
        value = python[key]
        if isinstance(value, float) and not math.isfinite(value):
            if (data[key] if isinstance(data, list) else data.get(key)) is None:
                found.append((data, key, value))
        elif isinstance(value, (dict, list, tuple)) and (isinstance(data, list) or key in data):
            found.extend(_pairs(data[key], value))
    return found
