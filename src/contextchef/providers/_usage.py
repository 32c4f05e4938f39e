"""What a response says about the prompt cache (`CacheReport`), and how a model's cache bills.

Each wire's reader (``providers/<wire>/_parse.py``) reads its own usage fields into one
`CacheReport` (`ReadResponse.cache`); `ContextChef.ingest` adds what the session knows
(the target, the edits of the compile that produced the request, the previous report)
and keeps one per ingested response (`ContextChef.cache_reports`). Every figure is in
**tokens**, as the provider counted them.

`CacheAuditFinding` is what ``ContextChef(cache_audit=True)`` finds before a request is
sent. `CacheRules` is the per-model billing and lifetime of the cache (`Adapter.cache_rules`),
read by the cost models of the analysis layer (``contextchef plan`` and ``replay``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from contextchef.history._messages import Message
from contextchef.history._turns import continue_turn, join_turn

__all__ = [
    "MAX_TOKENS",
    "NOT_A_MISS",
    "CacheAuditFinding",
    "CacheReport",
    "CacheRules",
    "Chain",
    "SentRequest",
    "cache_report",
    "compared",
    "tokens_at",
]


logger = logging.getLogger("contextchef")

NOT_A_MISS = frozenset(
    {"", "previous_message_not_found", "comparison_response_not_found", "unavailable"}
)
"""`CacheReport.reason` values that diagnose nothing: no reason, or the provider could not
compare (Anthropic ``previous_message_not_found`` / ``unavailable``, OpenAI
``comparison_response_not_found`` / ``unavailable``)."""


@dataclass(frozen=True, kw_only=True)
class CacheReport:
    """The prompt cache's outcome for one request, from its response (all figures in tokens).

    Read from each provider's usage: Anthropic ``usage.cache_read_input_tokens``,
    ``cache_creation_input_tokens`` and ``cache_creation.ephemeral_5m/1h_input_tokens``,
    ``diagnostics.cache_miss_reason``
    (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
    .../cache-diagnostics); OpenAI Responses ``usage.input_tokens_details.cached_tokens``,
    ``cache_write_tokens`` and ``cache_write_tokens_details.ttl_30m/12h_tokens``,
    ``prompt_cache_diagnostics``; Chat Completions
    ``usage.prompt_tokens_details.cached_tokens`` / ``cache_write_tokens``; DeepSeek
    ``usage.prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``
    (https://api-docs.deepseek.com/guides/kv_cache); Gemini
    ``usageMetadata.cachedContentTokenCount`` (https://ai.google.dev/gemini-api/docs/caching).

    Every reader builds it through `cache_report`, which keeps the figures consistent
    whatever a usage object holds: a figure that is not a whole number from 0 to
    `MAX_TOKENS` (a bool, float, NaN, string, negative or larger number) reads as absent
    (0, `tokens_at`), and figures that disagree are clamped, never refused: `read` <=
    `input_tokens`, `written` <= `input_tokens` - `read`, the `written_by_ttl` counts sum
    to at most `written`, and `missed` <= `input_tokens` (the provider's estimate of the
    tokens past where the prefix diverged may overlap `read`).

    Attributes:
        input_tokens: Every input token of the request (cache reads and writes included).
        read: Input tokens read from the cache.
        written: Input tokens written to the cache (0 where the provider reports none:
            Gemini, DeepSeek, OpenAI before write reporting).
        written_by_ttl: `written` per cache lifetime (``5m`` / ``1h`` on Anthropic,
            ``30m`` / ``12h`` on OpenAI), where the provider breaks it down; else empty.
        missed: Tokens that should have come from the cache and did not: the
            provider's own estimate (Anthropic ``cache_missed_input_tokens``, OpenAI
            ``cache_missed_tokens``), else what the previous request of the same target
            left in the cache (its reads and writes) that this one did not read; None when
            nothing says (the first request, no usage).
        reason: The provider's reason for a miss (``messages_changed``, ``tools_changed``,
            ``input_changed``, ``context_compacted``...) or its diagnosis when it gave no
            reason (``previous_message_not_found``, ``comparison_response_not_found``,
            ``unavailable``); ``""`` when it said nothing or reported a hit.
        explanation: The session's own account (`compared`): the edits of the compile
            that produced the request (which one, which history message, which wire entry
            and byte), a model switch, or a turn gap longer than the cache lives; ``""``
            when the request only appended to what was sent.
        target: The target the request was compiled for (``""`` when unknown).
        model: The model the request was compiled for (``""`` when unknown).
        response_id: The response's id, or None.
        usage: False when the response carried no usage figures (every count is then 0).
    """

    input_tokens: int = 0
    read: int = 0
    written: int = 0
    written_by_ttl: Mapping[str, int] = field(default_factory=dict)
    missed: int | None = None
    reason: str = ""
    explanation: str = ""
    target: str = ""
    model: str = ""
    response_id: str | None = None
    usage: bool = True

    @property
    def miss(self) -> bool:
        """Tokens were `missed`, or the provider gave a miss reason (not a diagnosis)."""
        return bool(self.missed) or self.reason not in NOT_A_MISS

    @property
    def unexplained(self) -> str:
        """A sentence for a `miss` with no edit reported behind it (for logs), else ``""``."""
        if not self.miss or self.explanation:
            return ""
        why = f"the provider says {self.reason}" if self.reason else "the provider gave no reason"
        return (
            f"the prompt cache missed {self.missed or 0:,} input tokens of a request to "
            f"{self.target or 'the provider'} with no edit reported by the session ({why}): "
            "the cache expired, the request reached another cache, or the payload was changed "
            "after compile"
        )

    @property
    def uncached(self) -> int:
        """Input tokens neither read from nor written to the cache (billed at the base rate)."""
        return max(0, self.input_tokens - self.read - self.written)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`written_by_ttl` as a plain dict)."""
        return {
            "input_tokens": self.input_tokens,
            "read": self.read,
            "written": self.written,
            "written_by_ttl": dict(self.written_by_ttl),
            "missed": self.missed,
            "reason": self.reason,
            "explanation": self.explanation,
            "target": self.target,
            "model": self.model,
            "response_id": self.response_id,
            "usage": self.usage,
        }


@dataclass(frozen=True, kw_only=True)
class CacheRules:
    """How a model's provider bills and keeps its prompt cache (`Adapter.cache_rules`).

    Multipliers apply to the model's base input price per token.

    Attributes:
        read: A cache read.
        write: A cache write, per lifetime (TTL name -> multiplier).
        ttl: The lifetime a write gets unless the request asks for another.
        ttl_seconds: Seconds per lifetime name; a lifetime not named here does not
            expire by a known clock (the cost models then never expire it).
        min_tokens: The shortest prompt the provider caches at all, in tokens.
        source: Where these figures come from (printed by ``plan`` and ``replay``).
    """

    read: float = 0.1
    write: Mapping[str, float] = field(default_factory=lambda: {"default": 1.0})
    ttl: str = "default"
    ttl_seconds: Mapping[str, int] = field(default_factory=dict)
    min_tokens: int = 0
    source: str = ""


class EditLike(Protocol):
    """An edit of something already sent, as the session reports it (`LedgerEdit`)."""

    @property
    def kind(self) -> str: ...
    @property
    def wire_index(self) -> int: ...
    @property
    def detail(self) -> str: ...


class Reply(Protocol):
    """What `SentRequest.answered_by` reads of a response (`ReadResponse`)."""

    @property
    def output(self) -> tuple[Any, ...]: ...
    @property
    def continuation(self) -> str | None: ...
    @property
    def cache(self) -> CacheReport: ...


@dataclass(frozen=True, kw_only=True)
class SentRequest:
    """What the session knows of the request a response answers (read by `compared`).

    Attributes:
        model: The model it was compiled for (``""``: unknown).
        edits: The ledger's edits of that compile (`LedgerEdit`).
        turn_gap: The host's expected seconds between requests (``compile(turn_gap=)``),
            or None.
        rules: The model's cache rules (`Adapter.cache_rules`): its cache lifetimes.
        kept: The request fields the provider does not carry over when it keeps the
            request and its answer to chain to (`Adapter.keeps_state`); None: not kept.
        answer: The output entries of the response ingested after it
            (`ReadResponse.output`), the partial answer it resumed first.
        continuation: That response's token to resume its decoding
            (`ReadResponse.continuation`), or None.
        resumed: The request resumes the answer of the one before it (sent with its
            `continuation`): its response joins that answer.
        rebased: The response before it to its target returned a provider compaction
            (once it is answered: its own response did; `opening` carries it over, and a
            snapshot keeps it): a compaction request reads the conversation anew
            (``/responses/compact``, an on-demand ``compaction``), and the request after
            it starts at that entry (`providers._compacted.native_base`), where the prompt
            cache restarts. `compared` explains a miss of the response that compacts and
            of the one after it by it, and does not log it.
        prefill: The text of its trailing assistant message (``compile(prefill=)``;
            ``""``: none): its response continues it (`join`).
        continued: It ended with the history's last message, the model's turn, which its
            response continues (`join`); never on an on-demand compaction request.
        joined: Its response was read (`answered_by`) and continued its `prefill` or
            `continued` turn, so the next request sends that turn joined with the reply.
        reopened: The request before it was `joined`: this one sends, in place of that
            request's last entry (the prefill, or the turn it continued), the whole
            answer. Nothing was bound to that entry, but a cache diagnosis compares the
            two requests and may call it ``messages_changed`` (the prompt-cache breakpoint
            of a prefilled request sits before it); `compared` names it.
        reported: The input tokens the provider reported for the last answered request
            to this target that reported any (`CacheReport.input_tokens`; 0: none yet):
            what the budget starts from (`ContextUsage.used`). Carried from request to
            request (`opening`), so a restored session decides its compactions on the
            live session's figure.
        cache: The last `CacheReport` of its target, as `compared` reads it: what that
            request left in the prompt cache (its read + written tokens; None: it reported
            no usage) and the model it was compiled for; None: no report yet. Carried like
            `reported` (`opening`), so a restored session diagnoses its first reply as the
            live session would.
    """

    model: str = ""
    edits: Sequence[EditLike] = ()
    turn_gap: float | None = None
    rules: CacheRules = field(default_factory=CacheRules)
    kept: frozenset[str] | None = None
    answer: tuple[Any, ...] = ()
    continuation: str | None = None
    resumed: bool = False
    rebased: bool = False
    prefill: str = ""
    continued: bool = False
    joined: bool = False
    reopened: bool = False
    reported: int = 0
    cache: tuple[int | None, str] | None = None

    def opening(self, prefill: str, continued: bool, last: SentRequest) -> SentRequest:
        """This request, ending on `prefill` or on the model's turn (`continued`), after `last`.

        It keeps `last`'s `reported` until its own response reports a count, its `cache`
        and `rebased`.
        """
        return replace(
            self,
            prefill=prefill,
            continued=continued,
            reopened=last.joined,
            reported=last.reported,
            cache=last.cache,
            rebased=last.rebased,
        )

    def resuming(self, last: SentRequest) -> SentRequest:
        """This request, sent to resume `last`'s answer (kept, with its token)."""
        return replace(
            self, answer=last.answer, continuation=last.continuation, resumed=True, continued=False
        )  # the cut answer it resumes is the turn its reply joins (`join`), not the history's

    def answered_by(self, reply: Reply, *, compacted: bool = False) -> SentRequest:
        """This request once its response is read (`reply`; `compacted`: it holds a compaction).

        `Reply.output` is its answer (after the answer it resumed), `Reply.continuation`
        that response's token, `Reply.cache` its usage (its `CacheReport.input_tokens`
        become `reported`; 0: not reported, the last count stays; its reads and writes,
        with this request's model, the `cache` the next request is diagnosed against).
        """
        output, continuation, cache = reply.output, reply.continuation, reply.cache
        left = cache.read + cache.written if cache.usage else None
        answer = (*self.answer, *output) if self.resumed else output
        joined = bool(self.prefill or self.continued)  # once: another reply joins nothing
        return replace(
            self,
            answer=answer,
            continuation=continuation,
            resumed=False,
            prefill="",
            continued=False,
            joined=joined,
            reported=cache.input_tokens or self.reported,
            cache=(left, self.model),
            rebased=compacted,
        )

    def join(
        self, history: tuple[Message, ...], turn: tuple[Message, ...], refused: bool = False
    ) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
        """`history` and the reply `turn` to this request, joined to what the reply continues.

        The answer it resumes (`resumed`, `history.join_turn`), or the model's turn it
        ended on (`prefill`, `continued`: `history.continue_turn`): the stored turn holds
        the whole answer, not only what the provider returned. A reply that is a refusal
        (`refused`: `ReadResponse.refused`) continues nothing and is stored as it came.
        """
        history, turn = join_turn(history, turn, self.resumed)
        return continue_turn(
            history, turn, prefill=self.prefill, continued=self.continued, refused=refused
        )


@dataclass(frozen=True, kw_only=True)
class Chain:
    """What a provider that keeps state holds for the next request to chain to.

    Attributes:
        held: Leading `messages` entries it holds: the last request's.
        answer: That request's answer, as the provider returned it
            (`ReadResponse.output`); held too, when the entries after `held` are still
            exactly these (the host did not edit or extend the answer).
        scoped: Fields of the last request the provider does not carry over
            (`Adapter.keeps_state`): a request without one of them cannot chain.
        stored: The provider keeps the last request (`scoped` is meaningful); False: a
            request resuming its answer sends its input again.
        token: The answer stopped at the decode cap and nothing follows it: this request
            resumes it with this token (Interactions ``continuation_token``) instead of
            sending a new turn.
    """

    held: int
    answer: tuple[Any, ...] = ()
    scoped: frozenset[str] = frozenset()
    stored: bool = True
    token: str | None = None

    @classmethod
    def after(
        cls, sent: SentRequest, held: int, entries: Sequence[Any], *, added: bool
    ) -> Chain | None:
        """What a request over `entries` can build on after the answered `sent`, or None.

        `held` entries lead `entries` and were `sent`'s. An answer cut at the decode cap
        (`SentRequest.continuation`) is resumed when the entries after `held` start with
        it unchanged and the host `added` no message after it (a result the normalizer
        makes up for a call in it is not sent); once the host added to it or edited it,
        nothing is chained (resuming would drop what was added, and chaining a new turn
        to a cut interaction is not documented).
        """
        if sent.kept is None and sent.continuation is None:
            return None
        answer = list(entries[held : held + len(sent.answer)])
        exact = not added and answer == list(sent.answer)
        if sent.continuation is not None and not exact:
            return None
        token = sent.continuation if exact else None
        scoped, stored = sent.kept or frozenset(), sent.kept is not None
        return cls(held=held, answer=sent.answer, scoped=scoped, stored=stored, token=token)


@dataclass(frozen=True, kw_only=True)
class CacheAuditFinding:
    """Something in a request that makes the cached prefix differ from the last request.

    Either a volatile block at or before the last prompt-cache breakpoint, or (with
    `detail` set) an edit of something already sent, which restarts the cache there.
    """

    block: str
    """What changed, e.g. ``announcements``, ``dynamic_state`` or ``history edit``."""
    position: int
    """Where: its index among the cacheable blocks (tools, system, message blocks), or
    the first wire entry sent differently (an edit)."""
    breakpoint: int
    """Index of the last block carrying ``cache_control`` (-1 for an edit)."""
    detail: str = ""
    """For an edit: what happened (see `LedgerEdit.detail`)."""

    @property
    def message(self) -> str:
        """A log line saying what is wrong and the fix."""
        if self.detail:
            return f"cache audit: {self.block}: {self.detail}; the prompt cache restarts there"
        return (
            f"cache audit: volatile block ({self.block}) at position {self.position} is at or "
            f"before the last cache_control breakpoint (position {self.breakpoint}); it changes "
            "the cached prefix on every update: move the breakpoint earlier"
        )

    @classmethod
    def of_edits(cls, edits: Sequence[EditLike]) -> tuple[CacheAuditFinding, ...]:
        """One finding per edit of something already sent (`LedgerEdit`)."""
        return tuple(
            cls(block=f"{e.kind} edit", position=e.wire_index, breakpoint=-1, detail=e.detail)
            for e in edits
        )


MAX_TOKENS = 2**53 - 1
"""The largest count a usage figure is read as (the largest integer JSON numbers carry
exactly); a larger one is read as absent."""


def tokens_at(data: Any, *path: str) -> int:
    """The token count at `path` in nested mappings, else 0.

    Only a whole number from 0 to `MAX_TOKENS` is a count: anything else (absent, null, a
    bool, a float, NaN, a string, a negative or larger number) reads as 0, absent.
    """
    for key in path:
        data = data.get(key) if isinstance(data, Mapping) else None
    if isinstance(data, bool) or not isinstance(data, int) or not 0 <= data <= MAX_TOKENS:
        return 0
    return data


def _diagnosis(data: Mapping[str, Any]) -> tuple[str, int | None]:
    """``(reason, missed tokens)`` of Anthropic's ``diagnostics`` or OpenAI's diagnostics."""
    anthropic = data.get("diagnostics")
    found = anthropic.get("cache_miss_reason") if isinstance(anthropic, Mapping) else None
    if isinstance(found, Mapping) and isinstance(found.get("type"), str):
        given = "cache_missed_input_tokens" in found
        return found["type"], tokens_at(found, "cache_missed_input_tokens") if given else None
    openai = data.get("prompt_cache_diagnostics")
    if isinstance(openai, Mapping) and isinstance(openai.get("type"), str):
        if openai["type"] == "cache_hit":
            return "", 0
        if openai["type"] == "cache_miss":
            return str(openai.get("reason") or "cache_miss"), tokens_at(
                openai, "cache_missed_tokens"
            )
        return openai["type"], None
    return "", None


def cache_report(
    data: Mapping[str, Any],
    usage: object,
    *,
    input_tokens: int,
    read: int,
    written: int = 0,
    by_ttl: Mapping[str, int] | None = None,
) -> CacheReport:
    """A wire reader's figures as a `CacheReport`, with the diagnosis `data` carries.

    Args:
        data: The response dict (its ``diagnostics`` / ``prompt_cache_diagnostics``,
            its id).
        usage: The response's usage object (None or not a mapping: no usage reported).
        input_tokens: Every input token, reads and writes included.
        read: Tokens read from the cache.
        written: Tokens written to the cache.
        by_ttl: `written` per lifetime; entries of 0 tokens are left out.

    The figures are clamped as `CacheReport` says (`input_tokens` to `MAX_TOKENS`, then
    `read`, `written`, `by_ttl` and the provider's missed estimate to what it leaves).
    """
    reason, missed = _diagnosis(data)
    raw_id = data.get("id", data.get("responseId", data.get("response_id")))
    input_tokens = min(input_tokens, MAX_TOKENS)
    read = min(read, input_tokens)
    written = min(written, input_tokens - read)
    return CacheReport(
        input_tokens=input_tokens,
        read=read,
        written=written,
        written_by_ttl=_within(by_ttl or {}, written),
        missed=None if missed is None else min(missed, input_tokens),
        reason=reason,
        response_id=raw_id if isinstance(raw_id, str) else None,
        usage=isinstance(usage, Mapping),
    )


def _within(by_ttl: Mapping[str, int], written: int) -> dict[str, int]:
    """`by_ttl` in name order, each count cut to what `written` leaves, zeros left out."""
    out: dict[str, int] = {}
    for name, count in sorted(by_ttl.items()):
        kept = min(count, written - sum(out.values()))
        if kept > 0:
            out[name] = kept
    return out


def compared(report: CacheReport, target: str, sent: SentRequest | None = None) -> CacheReport:
    """`report` completed with the session's knowledge: `target`, `model`, explanation, `missed`.

    The explanation joins what the session knows makes the request miss the cache: the
    ledger's edits of its compile; a model other than the previous request's (every
    provider keeps a cache per model); an expected turn gap longer than the longest
    lifetime the model's cache offers (`CacheRules.ttl_seconds`), so the cache expires in
    between. A miss none of these explains (`CacheReport.unexplained`) is logged as a
    warning on the ``contextchef`` logger.

    Args:
        report: What the response said (`ReadResponse.cache`).
        target: The target the request was compiled for.
        sent: What the session knows of the request (None: nothing), its `SentRequest.cache`
            the previous report of `target` (in snapshots, so a restored session diagnoses
            as the live one). Where the provider estimated no missed tokens, `missed` is
            what that request left in the cache (its reads and writes, at most this
            request's input) minus what this one read, when above 0: a request that
            extends the previous one reads at least that much while the cache lives.
    """
    sent = sent or SentRequest()
    left, before = sent.cache or (None, "")
    missed = report.missed
    if missed is None and left is not None and report.usage:
        missed = max(0, min(left, report.input_tokens) - report.read)
    causes = [f"{e.kind} edit from wire entry {e.wire_index}: {e.detail}" for e in sent.edits]
    if before and sent.model and before != sent.model:
        causes.append(
            f"the model changed from {before!r} to {sent.model!r}, and the provider "
            "keeps a separate prompt cache per model"
        )
    causes += _expiry(sent)
    if sent.reopened:
        causes.append(
            "the request before it ended on the model's turn (a prefill, or the history's "
            "last message), which this one sends joined with the reply that continued it"
        )
    if sent.rebased:
        causes.append(
            "the provider compacted the conversation (in this response, or the one before: "
            "the request after a compaction starts at its entry, where the prompt cache "
            "restarts)"
        )
    report = replace(
        report, target=target, model=sent.model, explanation="; ".join(causes), missed=missed
    )
    if report.unexplained:
        logger.warning("contextchef: %s", report.unexplained)
    return report


def _expiry(sent: SentRequest) -> list[str]:
    """The cache expiring between requests, when the host expects turns that far apart."""
    lifetimes = sent.rules.ttl_seconds
    if sent.turn_gap is None or not lifetimes:
        return []
    name, longest = max(lifetimes.items(), key=lambda item: item[1])
    if sent.turn_gap <= longest:
        return []
    return [
        f"the host expects {sent.turn_gap:,.0f} s between requests (turn_gap), longer than "
        f"the longest prompt-cache lifetime of {sent.model or 'the model'} ({name}, "
        f"{longest:,} s): the cache expires in between"
    ]
