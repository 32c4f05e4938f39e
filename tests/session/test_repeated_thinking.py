"""A thinking block repeated byte for byte later in a conversation is reported as that.

On a prefix-check model a block is bound to the request it was produced after
(`contextchef.session._binding`); the same block sent again later (a copied message: no
model does this) follows another prefix and is stripped, rightly. The edit used to say
"already-sent model changed (history message 0)", naming a cause that did not happen; it
now names the repeated block and the wire entries it is in. Multi-turn through the
Anthropic SDK against the fake, which enforces the prefix check.
"""

from __future__ import annotations

from functools import partial

from test_ingest import send as sdk_send

from contextchef import ContextChef, ReasoningPart, user
from contextchef.testing import FakeAnthropic, text

OPUS = "claude-opus-5-5"  # prefix check


def test_a_repeated_thinking_block_is_named_as_the_cause() -> None:
    fake = FakeAnthropic().script(*[text(f"t{i}", reasoning="r") for i in range(3)])
    send = partial(sdk_send, "anthropic", fake)
    chef = ContextChef()
    chef.set_history([user("Q")])
    for i in range(2):
        chef.ingest(send(chef.compile("anthropic", model=OPUS).payload))
        chef.append(user(f"next {i}"))
    first = chef.history[1]
    [thinking] = [p for p in first.parts if isinstance(p, ReasoningPart)]
    signature = str((thinking.provider_data or {})["block"]["signature"])
    chef.append(first)  # the host copies the first answer, thinking and all
    chef.append(user("again"))
    request = chef.compile("anthropic", model=OPUS)
    [edit] = request.edits
    assert edit.kind == "model"
    assert edit.detail.startswith(
        "wire entry 5 repeats, byte for byte, the thinking block of wire entry 1 (the same "
        f"signature, ending {signature[-12:]!r}); a thinking block is bound to the request "
        "it was produced after, so the repeat is sent without its thinking"
    )
    assert "already-sent model changed" not in edit.detail
    sent = request.payload["messages"]
    assert [b["type"] for b in sent[5]["content"]] == ["text"]  # the repeat: no thinking
    chef.ingest(send(request.payload))
    assert fake.violations == ()
