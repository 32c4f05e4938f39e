"""OpenAI's prompt cache as the fakes model it: breakpoint rules, reads, writes, diagnostics.

Sources: openai-python 3.60 types (``PromptCacheOptions`` and ``PromptCacheBreakpoint`` of
Responses and Chat Completions, ``ResponseUsage``, ``CompletionUsage``,
``Response.prompt_cache_diagnostics``) and the prompt-caching guide as summarized in the
research note provider-context-management §2.2.

**Rules** (`RESPONSES_CACHE_RULES`, `CHAT_CACHE_RULES`; refusals worded as OpenAI words
parameter errors, ``Invalid value: 'x'. Supported values are: ...``):

* ``prompt_cache_options`` and breakpoints are "supported for gpt-5.6 and later models": a
  recognised older GPT model is refused (unknown model names are let through);
* ``prompt_cache_options.mode`` is ``implicit`` or ``explicit``; ``ttl`` ``30m`` or ``12h``
  on Responses, ``30m`` only on Chat; ``comparison_response_id`` exists on Responses only;
  ``prewarm`` is a boolean;
* a ``prompt_cache_breakpoint`` sits on an input content part only (Responses
  ``input_text`` / ``input_image`` / ``input_file``, in message content or a
  ``function_call_output`` list; Chat ``text`` / ``image_url`` / ``input_audio``), with
  ``mode: explicit`` and an optional ``ttl`` of ``30m`` or ``12h``.

**Cache model** (`PromptCache`, per fake). A request is cut into units in the cache's
order (tools, instructions, then each input entry, an entry with a content list one unit
per part), each with a token estimate (`contextchef._tokens.estimate_tokens` of its
canonical JSON); the prefix up to a unit is named by a digest that starts with what every
cache hit needs alike (model, ``prompt_cache_key``, reasoning effort, text format and
verbosity, service tier). Markers are part of the bytes (the strict reading: whether the
API hashes them is not documented). On gpt-5.6 and later:

* the breakpoints are the explicit markers, plus, in ``implicit`` mode (the default), one
  implicit breakpoint at the end of the latest entry;
* a read is the longest prefix cached at one of the latest 80 breakpoints;
* ``explicit`` mode writes the latest four explicit breakpoints, ``implicit`` the implicit
  one and the latest three explicit; with ``explicit`` and no marker nothing is cached;
* a prefix under 1,024 tokens is never cached; what is written past the read is reported
  as ``cache_write_tokens`` (per TTL on Responses), billed at 1.25x by OpenAI.

Older and unknown models cache automatically: every request is cached at each unit and a
request reads the longest prefix cached, with no write count. Entries never expire (the
fakes have no clock); the TTL asked is only reported. Each outcome is kept
(`CacheOutcome`) and the reply's ``usage`` reports it.

**Diagnostics** (Responses, given ``prompt_cache_options.comparison_response_id``): the
reply's ``prompt_cache_diagnostics`` is ``comparison_response_not_found`` when this fake
never answered that id, ``unavailable`` for a model before gpt-5.6, else the first
divergence from the request that produced it: ``model_changed``,
``prompt_cache_key_changed``, ``tools_changed``, ``text_format_changed``,
``reasoning_effort_changed``, ``verbosity_changed``, ``service_tier_changed``,
``context_compacted`` (a ``compaction`` item it did not have), ``input_changed``
(instructions or input not continued), with ``cache_missed_tokens`` (this request's
tokens from the divergence on) and ``comparison_reusable_tokens``; ``cache_hit`` when
the earlier request is a prefix of this one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from contextchef._tokens import estimate_tokens
from contextchef.testing._body import canonical, dicts
from contextchef.testing._records import Check, RecordedRequest, provider_worded

__all__ = [
    "CHAT_CACHE_RULES",
    "RESPONSES_CACHE_RULES",
    "CacheOutcome",
    "PromptCache",
    "chat_prompt_cache",
    "responses_prompt_cache",
]

_GPT = re.compile(r"(?:^|[/:])gpt-(\d+)(?:\.(\d+))?(?![0-9])")
_RESPONSES_PARTS = frozenset({"input_text", "input_image", "input_file"})
_CHAT_PARTS = frozenset({"text", "image_url", "input_audio"})
_TTLS = ("30m", "12h")
CONSIDERED = 80
"""Breakpoints considered for a read: the latest 80 in the conversation."""
WRITTEN = 4
"""Explicit breakpoints written per request (3 beside an implicit one)."""
MINIMUM = 1024
"""Fewest tokens a cached prefix has."""


def _version(model: object) -> tuple[int, int] | None:
    found = _GPT.search(model.lower()) if isinstance(model, str) else None
    return None if found is None else (int(found.group(1)), int(found.group(2) or 0))


def _explicit_era(model: object) -> bool:
    version = _version(model)
    return version is not None and version >= (5, 6)


def _supported(values: Sequence[str]) -> str:
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def _invalid(param: str, value: object, allowed: Sequence[str]) -> str:
    return f"Invalid value: {value!r} for '{param}'. Supported values are: {_supported(allowed)}."


def _entries(
    body: Mapping[str, Any], *, chat: bool
) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    key = "messages" if chat else "input"
    return key, dicts(body.get(key))


def _content_key(entry: Mapping[str, Any]) -> str:
    return "output" if entry.get("type") == "function_call_output" else "content"


def _breakpoints(body: Mapping[str, Any], *, chat: bool) -> Iterator[tuple[str, Any, bool]]:
    """(param path, breakpoint value, on an allowed part) for every marker in `body`."""
    kinds = _CHAT_PARTS if chat else _RESPONSES_PARTS
    where, entries = _entries(body, chat=chat)
    for i, entry in entries:
        if "prompt_cache_breakpoint" in entry:
            yield f"{where}[{i}].prompt_cache_breakpoint", entry["prompt_cache_breakpoint"], False
        key = _content_key(entry)
        asking = entry.get("role") != "assistant"
        for j, part in dicts(entry.get(key)):
            if "prompt_cache_breakpoint" in part:
                allowed = asking and part.get("type") in kinds
                path = f"{where}[{i}].{key}[{j}].prompt_cache_breakpoint"
                yield path, part["prompt_cache_breakpoint"], allowed


def _options_problems(body: Mapping[str, Any], *, chat: bool) -> Iterator[str]:
    options = body.get("prompt_cache_options")
    if options is None:
        return
    if not isinstance(options, Mapping):
        yield "Invalid type for 'prompt_cache_options': expected an object."
        return
    for key in options:
        if key not in ("mode", "ttl", "prewarm", "comparison_response_id") or (
            chat and key in ("prewarm", "comparison_response_id")
        ):
            yield f"Unknown parameter: 'prompt_cache_options.{key}'."
    if "mode" in options and options["mode"] not in ("implicit", "explicit"):
        yield _invalid("prompt_cache_options.mode", options["mode"], ("implicit", "explicit"))
    ttls = _TTLS[:1] if chat else _TTLS
    if "ttl" in options and options["ttl"] not in ttls:
        yield _invalid("prompt_cache_options.ttl", options["ttl"], ttls)
    if "prewarm" in options and not isinstance(options["prewarm"], bool):
        yield "Invalid type for 'prompt_cache_options.prewarm': expected a boolean."


def _problems(body: Mapping[str, Any], *, chat: bool) -> Iterator[str]:
    marks = list(_breakpoints(body, chat=chat))
    version = _version(body.get("model"))
    if (marks or "prompt_cache_options" in body) and version is not None and version < (5, 6):
        name = "prompt_cache_options" if "prompt_cache_options" in body else marks[0][0]
        yield f"Unsupported parameter: '{name}' is not supported with this model."
        return
    yield from _options_problems(body, chat=chat)
    for path, mark, allowed in marks:
        if not allowed:
            yield f"Unknown parameter: '{path}'."
        elif not isinstance(mark, Mapping) or mark.get("mode") != "explicit":
            shown = mark.get("mode") if isinstance(mark, Mapping) else mark
            yield _invalid(f"{path}.mode", shown, ("explicit",))
        elif "ttl" in mark and mark["ttl"] not in _TTLS:
            yield _invalid(f"{path}.ttl", mark["ttl"], _TTLS)


@provider_worded
def responses_prompt_cache(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> Iterator[str]:
    """``prompt_cache_options`` and breakpoints as Responses takes them (see the module)."""
    yield from _problems(body, chat=False)


@provider_worded
def chat_prompt_cache(body: Mapping[str, Any], earlier: Sequence[RecordedRequest]) -> Iterator[str]:
    """``prompt_cache_options`` and breakpoints as Chat Completions takes them."""
    yield from _problems(body, chat=True)


RESPONSES_CACHE_RULES: tuple[Check, ...] = (responses_prompt_cache,)
CHAT_CACHE_RULES: tuple[Check, ...] = (chat_prompt_cache,)


# -- the cache ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CacheOutcome:
    """What the fake's prompt cache did for one answered request."""

    request_index: int
    """`RecordedRequest.index` of the request."""
    input_tokens: int
    """The request's input tokens (the fake's estimate)."""
    cached_tokens: int
    """Read from the cache."""
    written_tokens: int
    """Written to the cache past what was read (gpt-5.6+; 0 before)."""
    mode: str
    """``implicit`` / ``explicit`` (gpt-5.6+), or ``automatic`` (older models)."""
    breakpoints: int
    """Explicit markers in the request."""
    written: int
    """Breakpoints written (new cache entries) by this request: at most 4."""
    ttl_12h_tokens: int = 0
    """Of `written_tokens`, those written with the ``12h`` TTL."""


@dataclass(frozen=True)
class _Unit:
    digest: str
    end: int  # tokens up to and including this unit
    marked: bool
    ttl: str | None


def _seed(body: Mapping[str, Any]) -> str:
    reasoning, text = body.get("reasoning"), body.get("text")
    return canonical(
        [
            body.get("model"),
            body.get("prompt_cache_key"),
            reasoning.get("effort") if isinstance(reasoning, Mapping) else None,
            text.get("format") if isinstance(text, Mapping) else None,
            text.get("verbosity") if isinstance(text, Mapping) else None,
            body.get("service_tier"),
            body.get("response_format"),
            body.get("reasoning_effort"),
            body.get("verbosity"),
        ]
    )


def _texts(body: Mapping[str, Any], *, chat: bool) -> Iterator[tuple[str, Any]]:
    """(canonical text, breakpoint or None) per unit, in the cache's order."""
    if body.get("tools"):
        yield canonical(body.get("tools")), None
    if not chat and body.get("instructions") is not None:
        yield canonical(body.get("instructions")), None
    for _, entry in _entries(body, chat=chat)[1]:
        key = _content_key(entry)
        parts = entry.get(key)
        if not isinstance(parts, list) or not parts:
            yield canonical(entry), None
            continue
        head = canonical({k: v for k, v in entry.items() if k != key})
        for j, part in enumerate(parts):
            mark = part.get("prompt_cache_breakpoint") if isinstance(part, Mapping) else None
            yield (head if j == 0 else "") + canonical(part), mark


def units(body: Mapping[str, Any], *, chat: bool) -> list[_Unit]:
    """The request cut into cache units (see the module docstring)."""
    options = body.get("prompt_cache_options")
    default_ttl = options.get("ttl", "30m") if isinstance(options, Mapping) else "30m"
    running = hashlib.sha256(_seed(body).encode("utf-8"))
    out: list[_Unit] = []
    end = 0
    for text, mark in _texts(body, chat=chat):
        running.update(text.encode("utf-8"))
        end += estimate_tokens(text)
        ttl = mark.get("ttl", default_ttl) if isinstance(mark, Mapping) else None
        out.append(_Unit(running.copy().hexdigest(), end, mark is not None, ttl))
    return out


class PromptCache:
    """One fake's prompt cache (see the module docstring); not thread-safe on its own."""

    def __init__(self) -> None:
        self._cached: set[str] = set()
        self.outcomes: list[CacheOutcome] = []

    def serve(self, index: int, body: Mapping[str, Any], *, chat: bool) -> CacheOutcome:
        """Read and write the cache for the accepted request `body`; its outcome."""
        cut = units(body, chat=chat)
        total = cut[-1].end if cut else 0
        if not _explicit_era(body.get("model")):
            outcome = self._automatic(index, cut, total)
        else:
            outcome = self._breakpoints(index, body, cut, total)
        self.outcomes.append(outcome)
        return outcome

    def _automatic(self, index: int, cut: list[_Unit], total: int) -> CacheOutcome:
        hit = next((u for u in reversed(cut) if u.digest in self._cached), None)
        self._cached.update(u.digest for u in cut if u.end >= MINIMUM)
        cached = hit.end if hit is not None else 0
        return CacheOutcome(
            request_index=index,
            input_tokens=total,
            cached_tokens=cached,
            written_tokens=0,
            mode="automatic",
            breakpoints=0,
            written=0,
        )

    def _breakpoints(
        self, index: int, body: Mapping[str, Any], cut: list[_Unit], total: int
    ) -> CacheOutcome:
        options = body.get("prompt_cache_options")
        mode = options.get("mode", "implicit") if isinstance(options, Mapping) else "implicit"
        explicit = [k for k, u in enumerate(cut) if u.marked]
        points = list(explicit)
        writers = explicit[-WRITTEN:]
        if mode == "implicit" and cut:
            implicit = len(cut) - 1
            writers = sorted({*explicit[-(WRITTEN - 1) :], implicit})
            points = sorted({*points, implicit})
        hit = next(
            (k for k in reversed(points[-CONSIDERED:]) if cut[k].digest in self._cached), None
        )
        cached = cut[hit].end if hit is not None and cut[hit].end >= MINIMUM else 0
        new = [k for k in writers if cut[k].end >= MINIMUM and cut[k].digest not in self._cached]
        self._cached.update(cut[k].digest for k in new)
        written, long_lived, start = 0, 0, cached
        for k in new:
            span = max(cut[k].end - start, 0)
            written += span
            long_lived += span if cut[k].ttl == "12h" else 0
            start = max(start, cut[k].end)
        return CacheOutcome(
            request_index=index,
            input_tokens=total,
            cached_tokens=cached,
            written_tokens=written,
            mode=mode,
            breakpoints=len(explicit),
            written=len(new),
            ttl_12h_tokens=long_lived,
        )


def responses_usage(outcome: CacheOutcome) -> dict[str, Any]:
    """The Responses ``usage`` object reporting `outcome` (no output tokens counted)."""
    return {
        "input_tokens": outcome.input_tokens,
        "input_tokens_details": {
            "cached_tokens": outcome.cached_tokens,
            "cache_write_tokens": outcome.written_tokens,
            "cache_write_tokens_details": {
                "ttl_30m_tokens": outcome.written_tokens - outcome.ttl_12h_tokens,
                "ttl_12h_tokens": outcome.ttl_12h_tokens,
            },
        },
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": outcome.input_tokens,
    }


def chat_usage(outcome: CacheOutcome) -> dict[str, Any]:
    """The Chat Completions ``usage`` object reporting `outcome`."""
    return {
        "prompt_tokens": outcome.input_tokens,
        "completion_tokens": 0,
        "total_tokens": outcome.input_tokens,
        "prompt_tokens_details": {
            "cached_tokens": outcome.cached_tokens,
            "cache_write_tokens": outcome.written_tokens,
        },
    }


# -- diagnostics -------------------------------------------------------------------------

_FIELD_REASONS: tuple[tuple[str, Callable[[Mapping[str, Any]], Any]], ...] = (
    ("model_changed", lambda b: b.get("model")),
    ("prompt_cache_key_changed", lambda b: b.get("prompt_cache_key")),
    ("tools_changed", lambda b: b.get("tools")),
    ("text_format_changed", lambda b: _get(b, "text", "format")),
    ("reasoning_effort_changed", lambda b: _get(b, "reasoning", "effort")),
    ("verbosity_changed", lambda b: _get(b, "text", "verbosity")),
    ("service_tier_changed", lambda b: b.get("service_tier")),
)


def _get(body: Mapping[str, Any], outer: str, inner: str) -> Any:
    value = body.get(outer)
    return value.get(inner) if isinstance(value, Mapping) else None


def _compacted(body: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    def count(b: Mapping[str, Any]) -> int:
        return sum(1 for _, item in dicts(b.get("input")) if item.get("type") == "compaction")

    return count(body) > count(old)


def prompt_cache_diagnostics(
    body: Mapping[str, Any], earlier: Sequence[RecordedRequest]
) -> dict[str, Any] | None:
    """The reply's ``prompt_cache_diagnostics`` (see the module docstring); None: not asked."""
    options = body.get("prompt_cache_options")
    wanted = options.get("comparison_response_id") if isinstance(options, Mapping) else None
    if not isinstance(wanted, str):
        return None
    origin = next((r for r in earlier if r.status == 200 and r.reply.get("id") == wanted), None)
    if origin is None or not isinstance(origin.body, Mapping):
        return {"type": "comparison_response_not_found"}
    if not _explicit_era(body.get("model")):
        return {"type": "unavailable"}
    old: Mapping[str, Any] = origin.body
    now_units, old_units = units(body, chat=False), units(old, chat=False)
    reason = next(
        (name for name, read in _FIELD_REASONS if canonical(read(body)) != canonical(read(old))),
        None,
    )
    if reason is None and _compacted(body, old):
        reason = "context_compacted"
    common = 0
    if reason is None:
        same = [a.digest == b.digest for a, b in zip(now_units, old_units, strict=False)]
        common = same.index(False) if False in same else len(same)
        if common == len(old_units):
            return {"type": "cache_hit"}
        reason = "input_changed"
    reusable = old_units[common - 1].end if common else 0
    total = now_units[-1].end if now_units else 0
    return {
        "type": "cache_miss",
        "reason": reason,
        "cache_missed_tokens": total - reusable,
        "comparison_reusable_tokens": reusable,
    }


# -- what the fakes add to a reply -------------------------------------------------------


class OpenAICaching:
    """The prompt cache of `FakeResponses` and `FakeOpenAIChat` (a mixin)."""

    endpoint: ClassVar[str] = ""

    @property
    def cache_outcomes(self) -> tuple[CacheOutcome, ...]:
        """What the prompt cache did for each answered request, in order.

        Scripted ``raw`` replies are left out. Each says the tokens read and written and
        the breakpoints sent and written.
        """
        return tuple(self._prompt_cache().outcomes)

    def _prompt_cache(self) -> PromptCache:
        found = self.__dict__.get("_cache")
        if found is None:
            found = self.__dict__["_cache"] = PromptCache()
        assert isinstance(found, PromptCache)
        return found

    def _extend(
        self,
        reply: dict[str, Any],
        body: Mapping[str, Any],
        earlier: tuple[RecordedRequest, ...],
        headers: Mapping[str, str],
    ) -> dict[str, Any]:
        """`reply` with its ``usage`` (and Responses' cache fields) for `body`."""
        chat = self.endpoint.endswith("/chat/completions")
        outcome = self._prompt_cache().serve(len(earlier), body, chat=chat)
        if chat:
            reply["usage"] = chat_usage(outcome)
            return reply
        reply["usage"] = responses_usage(outcome)
        for key in ("prompt_cache_key", "prompt_cache_options"):
            if key in body:
                reply[key] = body[key]
        diagnosis = prompt_cache_diagnostics(body, earlier)
        if diagnosis is not None:
            reply["prompt_cache_diagnostics"] = diagnosis
        return reply
