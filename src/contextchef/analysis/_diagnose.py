"""Why a prefix broke: where two requests for one target first differ, and the cause.

The provider's prompt cache reads a request in order (system, tools, then the
conversation; spec 002) and hits up to the first byte that differs from a request it
has seen. `prefix_break` finds that byte between two requests and says which segment
and which conversation entry it is in; for two compiles of one session it also names
the session event that caused it, from what the later compile reported
(`CompiledRequest.edits`, a strategy switch). `payload_break` does the same for two
saved payloads (``contextchef diff``), where only the bytes can speak.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contextchef._errors import UsageError, check_str, shown, shown_keys
from contextchef._json import canonical_dumps
from contextchef.providers import (
    WIRES,
    ResponseNotice,
    get_adapter,
    response_notices,
    target_of,
    wire_reader,
)
from contextchef.providers._tool_order import unseen_append
from contextchef.session._request import CompiledRequest

__all__ = ["PrefixBreak", "conversation_key", "guess_target", "payload_break", "prefix_break"]

Segment = Literal["system", "tools", "messages"]
_ORDER: tuple[Segment, ...] = ("system", "tools", "messages")


@dataclass(frozen=True, kw_only=True)
class PrefixBreak:
    """Where a request stops extending the one before it.

    Attributes:
        segment: The first segment that differs (``system``, ``tools`` or ``messages``).
        byte: The offset of the first differing byte (UTF-8) in that segment's canonical
            JSON: ``system`` / ``tools`` as in `CompiledRequest.segments`; ``messages``:
            the payload's conversation list as sent (``messages`` / ``input`` /
            ``contents``, breakpoint markers left out; on Chat Completions it starts
            with the system message).
        shared_bytes: Bytes of canonical JSON the two requests share before it, all
            segments counted in order: about what the prompt cache can still read.
        entry: For ``messages``: the index, in that conversation list, of the first
            entry that differs (or that the later request lacks); None otherwise.
        cause: The session event behind it, or a description of what changed.
        provider: What the provider said about the later request, when its response was
            passed (Anthropic's ``diagnostics.cache_miss_reason`` and dropped-thinking
            reports, as `ResponseNotice` values); ``()`` otherwise.
    """

    segment: Segment
    byte: int
    shared_bytes: int
    entry: int | None
    cause: str
    provider: tuple[ResponseNotice, ...] = ()

    @property
    def message(self) -> str:
        """One line for logs."""
        where = f"entry {self.entry} of the conversation" if self.entry is not None else ""
        at = f"{self.segment}{' (' + where + ')' if where else ''}, byte {self.byte:,}"
        line = f"the prefix breaks in {at}: {self.shared_bytes:,} bytes still shared; {self.cause}"
        if self.provider:
            line += "; the provider reported: " + "; ".join(n.detail for n in self.provider)
        return line


def _common(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _plain(value: Any) -> Any:
    """`value` without ``cache_control`` markers (the cache key is the content)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _entries(conversation: Any) -> list[str]:
    """Canonical JSON of each conversation entry, breakpoint markers left out.

    Anthropic's moving breakpoint (``cache_control`` on the last block) is not content:
    an entry that only lost it is the same entry.
    """
    if not isinstance(conversation, list):
        return []
    return [canonical_dumps(_plain(e)) for e in conversation]


def _break(
    segments: Sequence[tuple[Segment, str, str]], before: list[str], after: list[str]
) -> tuple[Segment, int, int, int | None] | None:
    shared = 0
    for name, old, new in segments:
        if name == "messages":
            k = 0
            while k < len(before) and k < len(after) and before[k] == after[k]:
                k += 1
            if k == len(before):
                return None  # the conversation only grew
            a = ("[" + ",".join(before) + "]").encode()
            b = ("[" + ",".join(after) + "]").encode()
            at = _common(a, b)
            return name, at, shared + at, k
        a, b = old.encode(), new.encode()
        if a != b:
            at = _common(a, b)
            return name, at, shared + at, None
        shared += len(a)
    return None


def _compared(
    target: str,
    old: Mapping[str, str],
    new: Mapping[str, str],
    before: Mapping[str, Any],
    after: Mapping[str, Any],
) -> list[tuple[Segment, str, str]]:
    """The segments of two requests (payloads `before`, `after`) as the prompt cache compares them.

    ``tools`` that only gained, at the end, entries the provider leaves out of the prompt
    (Anthropic's ``defer_loading`` declarations: `providers._tool_order.unseen_append`)
    count as unchanged: the cache still reads everything before (a runtime tool declared
    mid-conversation on the Anthropic native strategies).
    """
    at_start = get_adapter(target).profile.tools_at_start
    grew = old["tools"] != new["tools"] and unseen_append(
        _plain(before.get("tools")), _plain(after.get("tools")), at_start
    )
    return [(s, old[s], old[s] if grew and s == "tools" else new[s]) for s in _ORDER]


_WHOLE = ("model",)
"""Request parameters whose change leaves no prefix cached (the cache is per model)."""
_MESSAGES = ("tool_choice", "thinking")
"""Parameters whose change invalidates the cached conversation (Anthropic prompt caching:
"what invalidates the cache"), not the system prompt or tools."""


def _parameter_break(
    before: Mapping[str, Any], after: Mapping[str, Any], sizes: Sequence[int]
) -> PrefixBreak | None:
    """A break caused by a request parameter (`sizes`: system and tools bytes), or None."""
    for key in _WHOLE:
        if before.get(key) != after.get(key):
            cause = (
                f"the {key} changed ({shown(before.get(key), 60)} -> {shown(after.get(key), 60)}): "
            )
            cause += "the prompt cache is kept per model, so nothing is shared"
            return PrefixBreak(segment="system", byte=0, shared_bytes=0, entry=None, cause=cause)
    for key in _MESSAGES:
        if before.get(key) != after.get(key):
            cause = f"{key} changed: the cached conversation no longer applies"
            return PrefixBreak(
                segment="messages", byte=0, shared_bytes=sum(sizes), entry=0, cause=cause
            )
    return None


_EDIT_KINDS: dict[Segment, tuple[str, ...]] = {
    "system": ("system",),
    "tools": ("tools",),
    "messages": ("history", "model"),
}
"""The session edits that change each segment (the one named when several were made)."""


def _what(segment: Segment, entry: int | None) -> str:
    if segment == "messages":
        return f"conversation entry {entry} differs from what was sent (or is gone)"
    return f"the {segment} changed"


def _model(request: CompiledRequest) -> str | None:
    return request.model_rules.model if request.model_rules is not None else None


def prefix_break(
    before: CompiledRequest,
    after: CompiledRequest,
    *,
    response: object | None = None,
    notices: Sequence[ResponseNotice] = (),
) -> PrefixBreak | None:
    """Where `after` stops extending `before`, and why; None when it extends it.

    "Extends" means the same ``system`` and ``tools`` and every conversation entry of
    `before` unchanged at the start of `after` (a request that only appends keeps the
    whole earlier request cached). ``tools`` that only gained entries at the end which
    the provider leaves out of the prompt (Anthropic ``defer_loading`` declarations:
    "Deferred tools are not included in the system-prompt prefix", agents-and-tools/
    tool-use/tool-use-with-prompt-caching) count as the same, as the session counts
    them (no edit); anything else in ``tools`` (an entry moved, changed, gone, or added
    where the model sees it) is a break.

    Args:
        before: The earlier request.
        after: The later request, same target.
        response: The provider's response to `after` (SDK object or JSON dict), if you
            have it: what it reports (Anthropic ``diagnostics.cache_miss_reason``, asked
            for with ``compile(diagnostics=True)``; ``input_transformations`` such as
            dropped thinking) is joined into the result's `PrefixBreak.provider`.
        notices: The same, already read (e.g. the last of `ContextChef.notices` after
            `ContextChef.ingest`).

    When the bytes extend `before` but the provider reports a cache miss (an expired
    entry, a previous request it never cached), the result is a break at the end of
    `before` whose cause says so; dropped thinking alone never makes a break.

    Raises:
        UsageError: The requests are for different targets, or are not `CompiledRequest`.
        CorruptHistoryError: `response` is not a provider response.
    """
    found = _request_break(before, after)
    told = (*notices, *(response_notices(response) if response is not None else ()))
    return _joined(found, told, len(_cache_bytes(before)))


def _cache_bytes(request: CompiledRequest) -> bytes:
    """The request in the cache's order (system, tools, conversation without its "]")."""
    entries = _entries(request.payload.get(conversation_key(request.target)))
    text = request.segments["system"] + request.segments["tools"] + "[" + ",".join(entries)
    return text.encode()


_MISS_SEGMENT: dict[str, Segment] = {"system_changed": "system", "tools_changed": "tools"}


def _joined(
    found: PrefixBreak | None, told: Sequence[ResponseNotice], whole: int
) -> PrefixBreak | None:
    """`found` with the provider's notices; a break at the end if only the provider saw one."""
    if not told:
        return found
    if found is not None:
        return dataclasses.replace(found, provider=tuple(told))
    misses = [n for n in told if n.kind == "cache_miss"]
    if not misses:
        return None
    reason = misses[0].reason
    cause = (
        f"the request extends the previous one byte for byte, yet the provider reported a "
        f"cache miss ({reason}): the cached entry expired or was evicted, the previous "
        "request was never cached, or a parameter outside the payload's text changed"
    )
    return PrefixBreak(
        segment=_MISS_SEGMENT.get(reason, "messages"),
        byte=0,
        shared_bytes=whole,
        entry=None,
        cause=cause,
        provider=tuple(told),
    )


def _request_break(before: CompiledRequest, after: CompiledRequest) -> PrefixBreak | None:
    for which, request in (("before", before), ("after", after)):
        if not isinstance(request, CompiledRequest):
            raise UsageError(f"{which} must be a CompiledRequest, got {shown(request, 60)}")
    if before.target != after.target:
        raise UsageError(
            f"the requests are for different targets ({before.target!r}, {after.target!r}); "
            "a prefix is shared only within one target"
        )
    key = conversation_key(after.target)
    found = _break(
        _compared(after.target, before.segments, after.segments, before.payload, after.payload),
        _entries(before.payload.get(key)),
        _entries(after.payload.get(key)),
    )
    sizes = [len(before.segments[s].encode()) for s in ("system", "tools")]
    parameter = _parameter_break(before.payload, after.payload, sizes)
    if found is None or (parameter is not None and parameter.shared_bytes <= found[2]):
        return parameter
    segment, byte, shared, entry = found
    if after.edits:
        kinds = _EDIT_KINDS[segment]
        edit = next((e for e in after.edits if e.kind in kinds), after.edits[0])
        cause = f"the session reported a {edit.kind} edit: {edit.detail}"
    elif before.strategy != after.strategy:
        cause = f"the strategy switched from {before.strategy!r} to {after.strategy!r}"
    elif _model(before) != _model(after):
        cause = f"the model switched from {_model(before)!r} to {_model(after)!r}"
    else:
        cause = _what(segment, entry) + " (not an edit the session made)"
    return PrefixBreak(segment=segment, byte=byte, shared_bytes=shared, entry=entry, cause=cause)


def conversation_key(target: str) -> str:
    """The request key of `target`'s conversation (``messages``, ``input``, ``contents``).

    Raises:
        UnknownTargetError: `target` is not a target.
    """
    return wire_reader(get_adapter(target).profile.wire).conversation


def guess_target(payload: Mapping[str, Any]) -> str:
    """The target a saved payload was compiled for, from its keys.

    Raises:
        UsageError: The payload is not one of the four request shapes.
    """
    for reader in WIRES:  # `WireReader.detect_request`, in the readers' order
        if reader.detect_request(payload):
            return target_of(reader.wire)
    expected = ", ".join(f"{r.conversation!r} ({r.label})" for r in WIRES)
    raise UsageError(
        f"not a request payload: expected one of {expected}; keys: {shown_keys(payload, 8)}"
    )


def _check_shape(which: str, payload: Mapping[str, Any], target: str, key: str) -> None:
    """Refuse a payload whose conversation or tools are not lists of objects.

    Checked before the two payloads' targets are compared, so a junk entry is named
    (its field, index and value) instead of making the payloads look like two targets'.
    """
    fields = [(key, payload.get(key))]
    if "tools" in payload:
        fields.append(("tools", payload["tools"]))
    for field, value in fields:
        if not isinstance(value, list):
            raise UsageError(
                f"{which}: {field!r} must be a list of objects in a request payload for "
                f"{target}, got {type(value).__name__}"
            )
        what = "a tool definition" if field == "tools" else "a message"
        apis = " or ".join(r.label for r in WIRES if r.conversation == field) or target
        for index, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise UsageError(
                    f"{which}: {field}[{index}] must be an object ({what}) in a request "
                    f"payload for {apis} (this one read as {target}'s), got "
                    f"{type(item).__name__}: {shown(item, 40)}"
                )
    system = payload.get("system")  # only Anthropic's payloads have this key
    if system is not None and not isinstance(system, (str, list)):
        raise UsageError(
            f"{which}: 'system' must be text or a list of blocks in a request payload for "
            f"{target}, got {type(system).__name__}"
        )


def payload_break(
    before: Mapping[str, Any], after: Mapping[str, Any], *, target: str | None = None
) -> PrefixBreak | None:
    """`prefix_break` for two saved payloads (the SDK call's keyword arguments).

    ``tools`` are compared as `prefix_break` compares them (an unseen append extends).

    Raises:
        UsageError: A payload of no known shape (its conversation or ``tools`` not a list
            of objects, named), or payloads for different targets.
        UnknownTargetError: `target` is not a target.
    """
    for which, payload in (("before", before), ("after", after)):
        if not isinstance(payload, Mapping):
            raise UsageError(
                f"{which}: a request payload is a mapping, got {type(payload).__name__}"
            )
    if target is not None:
        check_str("target", target)
    guessed = [target or guess_target(p) for p in (before, after)]
    for which, payload, name in zip(("before", "after"), (before, after), guessed, strict=True):
        _check_shape(which, payload, name, conversation_key(name))  # junk named before targets
    if guessed[0] != guessed[1]:
        raise UsageError(f"the payloads are for different targets: {sorted(set(guessed))}")
    name = guessed[0]
    adapter = get_adapter(name)
    key = conversation_key(name)
    try:
        old, new = adapter.segments(before), adapter.segments(after)
        found = _break(
            _compared(name, old, new, before, after),
            _entries(before.get(key)),
            _entries(after.get(key)),
        )
    except (TypeError, ValueError, AttributeError) as exc:  # not JSON (NaN), odd shapes
        raise UsageError(
            f"the payloads are not {name} request payloads this can read ({exc}); pass the "
            "keyword arguments of the SDK call, as JSON"
        ) from exc
    sizes = [len(old[s].encode()) for s in ("system", "tools")]
    parameter = _parameter_break(before, after, sizes)
    if found is None or (parameter is not None and parameter.shared_bytes <= found[2]):
        return parameter
    segment, byte, shared, entry = found
    return PrefixBreak(
        segment=segment, byte=byte, shared_bytes=shared, entry=entry, cause=_what(segment, entry)
    )
