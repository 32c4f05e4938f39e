"""`fake_for`: the fake of each wire format, for any compile target."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from contextchef import TARGETS, UnknownTargetError
from contextchef.providers import get_adapter
from contextchef.testing._fake import (
    RECORDED_HEADERS,
    FakeGemini,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
)
from contextchef.testing._fake_anthropic import FakeAnthropic
from contextchef.testing._interactions import FakeGeminiInteractions
from contextchef.testing._media_rules import chat_text_content
from contextchef.testing._records import Check
from contextchef.testing._replies import Ids

__all__ = ["fake_for"]

_BY_WIRE: Mapping[str, type[FakeProvider]] = {
    FakeAnthropic.wire: FakeAnthropic,
    FakeGemini.wire: FakeGemini,
    FakeGeminiInteractions.wire: FakeGeminiInteractions,
    FakeOpenAIChat.wire: FakeOpenAIChat,
    FakeResponses.wire: FakeResponses,
}
"""The fake of each wire format (`Profile.wire`): every target on a wire gets its fake."""


def fake_for(
    target: str,
    *,
    rules: Iterable[Check] | None = None,
    record_headers: Iterable[str] = RECORDED_HEADERS,
    ids: Ids | None = None,
) -> FakeProvider:
    """A new fake for the API a compile target speaks (``deepseek`` -> Chat Completions).

    Args:
        target: One of `contextchef.TARGETS`.
        rules: As for `FakeProvider`.
        record_headers: As for `FakeProvider`.
        ids: As for `FakeProvider`: share one `Ids` among the fakes of a session that
            switches providers, so no two replies carry the same response id.

    Raises:
        UnknownTargetError: `target` is not a compile target.
    """
    profile = get_adapter(target).profile if target in TARGETS else None
    make = _BY_WIRE.get(profile.wire) if profile is not None else None
    if profile is None or make is None:
        raise UnknownTargetError(f"unknown target {target!r}; valid targets: {', '.join(TARGETS)}")
    if rules is None and not profile.media:  # message content is text: no media parts
        rules = (*make.default_rules, chat_text_content)
    return make(rules=rules, record_headers=record_headers, ids=ids)
