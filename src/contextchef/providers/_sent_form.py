"""The snapshot form of `SentRequest`: a ledger's ``sent`` (written and checked here).

`Ledger.to_dict` writes it (`sent_form`) and `Ledger.from_dict` reads it back (`read_sent`),
so a restored session chains to, resumes, continues and diagnoses the cache of the request
the live session sent (`contextchef.session._ledger`).

Its fields: ``kept``, ``answer``, ``continuation`` and ``resumed`` (always, when the form is
written), then the `OPTIONAL` ones only when set: ``model`` (the model the request was
compiled for: a reply is matched to it, `providers._targets.reply_target`), ``cache`` (the
last cache report of its target, ``[tokens, model]``: what that request left in the prompt
cache, its read + written tokens or null when it reported no usage, and the model it was
compiled for: what `compared` diagnoses the next report against), ``reported`` (the last
reported input tokens), ``rebased`` (the last response returned a provider compaction, which
explains the next miss) and the opening fields ``prefill``, ``continued``, ``joined`` and
``reopened``. The ones set on most turns lead, so a delta of two snapshots
(`contextchef.stores.snapshot_delta`) changes them key by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextchef._errors import UsageError
from contextchef._json import is_unicode, thaw
from contextchef.providers._usage import MAX_TOKENS, SentRequest

__all__ = ["OPENING", "OPTIONAL", "read_sent", "sent_form"]

OPENING = ("prefill", "continued", "joined", "reopened")
"""`SentRequest`'s fields on the turn its reply continues, in its form when set."""
OPTIONAL = ("model", "cache", "reported", "rebased", *OPENING)
"""The optional fields of its form, in the order written."""
_REQUIRED = ("kept", "answer", "continuation", "resumed")


def sent_form(sent: SentRequest) -> dict[str, Any]:
    """What a restored session needs to chain to `sent`, resume, continue or diagnose it.

    Plain JSON, a ledger's ``{"sent": form}`` (`read_sent`): `kept` (sorted), `answer`,
    `continuation`, `resumed`, and the `OPTIONAL` fields when set; ``{}`` when the provider
    keeps nothing of it and none of those is set.
    """
    opens = {k: getattr(sent, k) for k in OPTIONAL if getattr(sent, k)}
    if "cache" in opens:
        opens["cache"] = list(opens["cache"])
    if sent.kept is None and sent.continuation is None and not sent.resumed and not opens:
        return {}
    kept = None if sent.kept is None else sorted(sent.kept)
    answer = [thaw(entry) for entry in sent.answer]  # plain data, not read-only records
    form = {"kept": kept, "answer": answer, "continuation": sent.continuation}
    return {"sent": {**form, "resumed": sent.resumed, **opens}}


def read_sent(form: Mapping[str, Any] | None, where: str = "") -> SentRequest:
    """From `sent_form`'s ``sent`` (None: a request nothing was kept of).

    A snapshot written before ``model`` and ``cache`` restores without them: a reply then
    matches no model, and the first report after the restore is diagnosed against none.

    Raises:
        UsageError: `form` is not what `sent_form` writes (`where` names the ledger).
    """
    if form is None:
        return SentRequest()
    kept, answer = form.get("kept"), form.get("answer")
    continuation, resumed = form.get("continuation"), form.get("resumed")
    opens = {k: form[k] for k in OPTIONAL if k in form}
    if (
        set(form) - set(OPTIONAL) != set(_REQUIRED)
        or not (kept is None or (isinstance(kept, list) and all(_text(k) for k in kept)))
        or not (isinstance(answer, list) and all(isinstance(a, Mapping) for a in answer))
        or not (continuation is None or _text(continuation))
        or not isinstance(resumed, bool)
        or not all(_valid(k, v) for k, v in opens.items())
    ):
        raise UsageError(
            f"snapshot ledger {where!r} field 'sent' must be an object of 'kept' (a list "
            "of text, or null), 'answer' (a list of objects), 'continuation' (text or "
            "null), 'resumed' (true or false) and optionally 'model' and 'prefill' (text), "
            "'cache' ([tokens or null, model]), 'rebased', 'continued', 'joined' and "
            f"'reopened' (true or false) and 'reported' (an integer from 1 to {MAX_TOKENS}); "
            "nothing was restored"
        )
    if "cache" in opens:
        opens["cache"] = tuple(opens["cache"])
    return SentRequest(
        kept=None if kept is None else frozenset(kept),
        answer=tuple(thaw(a) for a in answer),  # a copy: the snapshot stays the caller's
        continuation=continuation,
        resumed=resumed,
        **opens,
    )


def _text(value: object) -> bool:
    return isinstance(value, str) and is_unicode(value)


def _tokens(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_TOKENS


def _valid(key: str, value: object) -> bool:
    """Whether `value` is an `OPTIONAL` field's as `sent_form` writes it (set, of its type)."""
    if key in ("prefill", "model"):
        return _text(value)
    if key == "reported":
        return _tokens(value) and value != 0
    if key == "cache":
        return (
            isinstance(value, list)
            and len(value) == 2
            and (value[0] is None or _tokens(value[0]))
            and _text(value[1])
        )
    return isinstance(value, bool)
