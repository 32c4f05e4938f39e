"""`CompiledRequest`: what one compile returns, and the prefix fingerprint (session layer)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from contextchef._errors import UsageError, check_flag, check_int, check_str, json_reason, shown
from contextchef._json import canonical_dumps, canonical_value, is_unicode, sdk_object_hint
from contextchef._records import plain
from contextchef.history._normalize import Change
from contextchef.providers import CacheAuditFinding, ModelRules, _targets

__all__ = [
    "CompiledRequest",
    "EditKind",
    "LedgerEdit",
    "Segments",
    "check_options",
    "prefix_fingerprint",
]

EditKind = Literal["history", "system", "tools", "model"]


@dataclass(frozen=True, kw_only=True)
class LedgerEdit:
    """A change to something already sent: explicit, reported, never a side effect.

    Attributes:
        kind: ``history`` (an earlier message changed or went away), ``system`` or
            ``tools`` (the prefix before every message changed), or ``model`` (the
            model refuses what was sent, e.g. system entries or prompt-cache breakpoints,
            or thinking is bound to another prefix; `detail` says which).
        history_index: The first history message concerned (0 for ``system`` and
            ``tools``).
        wire_index: The first wire entry sent differently from before (entries before
            it are replayed unchanged).
        thinking_stripped: History messages whose thinking is no longer sent because
            the edit invalidated it (models with the prefix check), from here on.
        detail: One sentence for logs.
    """

    kind: EditKind
    history_index: int
    wire_index: int
    thinking_stripped: int = 0
    detail: str = ""


class Segments(Mapping[str, str]):
    """``system``, ``tools`` and ``messages`` canonical JSON; ``messages`` made on first use.

    Serializing the conversation costs as much as the SDK's own ``json.dumps``, so it is
    done only when someone reads it (and each recorded entry only once per ledger).
    """

    def __init__(self, *, system: str, tools: str, messages: Callable[[], str]) -> None:
        self._known = {"system": system, "tools": tools}
        self._make = messages

    def __getitem__(self, key: str) -> str:
        if key == "messages" and key not in self._known:
            self._known["messages"] = self._make()
        return self._known[key]

    def __iter__(self) -> Iterator[str]:
        return iter(("system", "tools", "messages"))

    def __len__(self) -> int:
        return 3


@dataclass(frozen=True, kw_only=True)
class CompiledRequest:
    """One compiled request.

    Attributes:
        target: The adapter used.
        payload: Keyword arguments for the SDK call. The dict and its lists are new;
            the message entries in it (``messages``, ``input``, ``contents``) are the
            session's record of what was sent, replayed as they are at every later
            compile (so a compile costs only the new turn), and are read-only at every
            depth: an edit raises `ReadOnlyPayloadError` (also a ``TypeError``). They
            are ``dict`` / ``list`` subclasses that serialize like plain JSON; edit the
            copy that `mutable_payload` (or ``copy.deepcopy``) returns. An edit of the
            ``tools`` entries is undone at the next compile (they are checked against a
            private copy).
        segments: Canonical JSON text of the ``system``, ``tools`` and ``messages``
            segments, for cache-stability checks. ``messages`` is the recorded
            conversation (without the per-request ``cache_control`` mark and prefill):
            the previous compile's text, minus its closing ``]``, is a prefix of it
            unless `edits` says otherwise.
        changes: What the history normalizer repaired in the messages appended by this
            compile (synthesized results, dropped orphans, moved results, merged
            roles...); ``()`` when they were already valid. The stored history itself is
            unchanged.
        edits: Changes to what was already sent (the host replaced or cut the history,
            or the system prompt or a tool changed): each one restarts the prompt cache
            from where it is, and on models with the prefix check the thinking it
            invalidated is no longer sent. ``()`` on an append-only compile.
        headers: HTTP headers: ``anthropic-beta`` (the fields' and ``extra``'s betas) and
            ``extra``'s ``extra_headers``, merged: pass them as the SDK's ``extra_headers``.
        model_rules: The rules applied for the model (see `ModelRules`).
        appended: How many wire entries this compile added after the replayed ones.
        strategy: The disclosure strategy used (what ``auto`` chose, for instance).
        prefix_fingerprint: SHA-256 (hex) of the cached prefix: the system segment and
            every ``tools`` entry except those marked ``defer_loading: true`` (the
            provider strips deferred definitions before computing its cache key, so
            adding one never changes this value).
        audit: With ``ContextChef(cache_audit=True)``: volatile blocks (announcements,
            dynamic state...) found at or before the last prompt-cache breakpoint on
            targets with explicit breakpoints; also logged.
        dropped: Names of `extra` fields this request leaves out (also logged), because
            the provider would refuse them with the history as it is: Anthropic's
            ``thinking`` when the final tool turn lost its thinking blocks (the API's
            own advice; ``compile(missing_thinking="raise")`` raises instead).
        resumes: It resumes the last reply, cut at the decode cap; its reply joins it.
    """

    target: str
    payload: dict[str, Any]
    segments: Mapping[str, str]
    changes: tuple[Change, ...] = ()
    edits: tuple[LedgerEdit, ...] = ()
    prefix_fingerprint: str = ""
    audit: tuple[CacheAuditFinding, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    model_rules: ModelRules | None = None
    appended: int = 0
    strategy: str = ""
    dropped: tuple[str, ...] = ()
    resumes: bool = False

    def to_json(self) -> str:
        """The whole payload as canonical JSON."""
        return canonical_dumps(self.payload)

    def mutable_payload(self) -> dict[str, Any]:
        """A copy of `payload` whose dicts and lists are all new, plain and mutable.

        Editing it changes neither this request nor any later one: the session keeps
        building on what it compiled, so an edited copy that is sent is missing from the
        next request (on prefix-check models the thinking the edited request produced is
        then refused; make lasting changes through the session instead). Other values
        (text, numbers, objects passed in ``extra``) are immutable or the caller's, and
        are shared. Costs one pass over the payload's dicts and lists (a few times
        ``json.dumps`` of it: pay it only when a payload must be edited).
        """
        copied: dict[str, Any] = plain(self.payload)
        return copied


def prefix_fingerprint(system_segment: str, tools: object) -> str:
    """SHA-256 (hex) of the system segment and the non-deferred ``tools`` entries."""
    kept = [
        t
        for t in (tools if isinstance(tools, list) else [])
        if not (isinstance(t, Mapping) and t.get("defer_loading") is True)
    ]
    text = canonical_dumps({"system": system_segment, "tools": kept})
    return hashlib.sha256(text.encode()).hexdigest()


_BETA = re.compile(r"[\x21-\x2b\x2d-\x7e]+")  # printable ASCII but space and comma
"""A beta name: one token of the comma-separated ``anthropic-beta`` header."""


def check_options(
    model: object, max_tokens: object, extra: object, betas: object, *flags: object
) -> None:
    """Reject request options the provider would refuse, before anything runs.

    Raises:
        UsageError: `model` is not a non-empty string, `max_tokens` not an int from 1 to
            2**31 - 1 (Gemini's ``maxOutputTokens`` is an int32; no API takes more),
            `extra` not a mapping of plain JSON (or naming a field compile writes),
            `betas` not a list of beta names (printable ASCII without whitespace or
            commas: each is one item of the ``anthropic-beta`` header), or `flags`
            (``diagnostics``, ``missing_thinking``) not a bool and ``drop``/``raise``.
    """
    diagnostics, missing = flags
    check_flag("diagnostics", diagnostics)
    if not (isinstance(missing, str) and missing in ("drop", "raise")):
        raise UsageError(f"missing_thinking must be 'drop' or 'raise', got {shown(missing, 40)}")
    check_str("model", model, empty=False)
    if max_tokens is not None:
        check_int("max_tokens", max_tokens, minimum=1, maximum=2**31 - 1)
    if not isinstance(extra, Mapping):
        raise UsageError(f"extra must be a mapping of request fields, got {type(extra).__name__}")
    for key, value in extra.items():
        if not isinstance(key, str) or not key or not is_unicode(key):
            raise UsageError(
                f"extra field names must be non-empty Unicode text, got {shown(key, 60)}"
            )
        if key in _targets.WRITTEN_FIELDS or key.endswith("max_tokens"):
            raise UsageError(
                f"extra field {shown(key, 60)} is written by compile itself; pass model, "
                "max_tokens, tools and history through the session"
            )
        try:
            if not is_unicode(canonical_dumps(canonical_value(value))):
                raise ValueError("it holds text that is not valid Unicode (a lone surrogate)")
        except (TypeError, ValueError, RecursionError) as exc:
            raise UsageError(
                f"extra field {shown(key)}: not JSON ({json_reason(exc)}); extra takes JSON "
                "values: objects with text keys, arrays, text, finite numbers, booleans and "
                f"null{sdk_object_hint(value)}"
            ) from exc
    if (
        isinstance(betas, str)
        or not isinstance(betas, Sequence)
        or not all(isinstance(b, str) and b for b in betas)
    ):
        raise UsageError("betas must be a list of non-empty strings")
    for beta in betas:
        # each goes into the comma-separated anthropic-beta header as one token
        if not _BETA.fullmatch(beta):
            raise UsageError(
                f"beta {shown(beta, 80)} is not a beta name: use printable ASCII without "
                "whitespace, control characters or commas (pass several betas as separate "
                "list items, e.g. ['a-2025-01-01', 'b-2025-02-02'])"
            )
