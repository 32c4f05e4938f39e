"""FakeAnthropic's preserved-thinking rules, driven through the official ``anthropic`` SDK.

Long sessions on ``claude-opus-5-5``: every turn is echoed exactly as the SDK returned it,
then one earlier part is changed and the fake must answer the API's 400 (exact text and
path) or let it through, as the research notes (R1-R30) say the API does. Also the model
table, ``drop_block`` and ``input_transformations``, system-message placement, prefill and
cache diagnostics.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import pytest

from contextchef.testing import (
    ANTHROPIC_RULES,
    CLEAR_AT_BETA,
    INLINE_TOOLS_BETA,
    NO_HEADERS,
    OUTPUT_CONFIG_BETA,
    THINKING_BETA,
    FakeAnthropic,
    RecordedRequest,
    anthropic_thinking_prefix,
    claude_model,
    httpx_for,
    parse_claude_name,
    provider_worded,
    raw,
    text,
    tool_calls,
)

HX = httpx_for(anthropic)
OPUS = "claude-opus-5-5"
SYSTEM = "You are a careful coding agent."
_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS: list[dict[str, Any]] = [
    {"name": "read_file", "description": "Read a file.", "input_schema": _SCHEMA},
    {"name": "grep", "description": "Search files.", "input_schema": _SCHEMA},
]
DROP = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}


def bound(path: str, changed: str, *, beta: bool = False) -> str:
    """The API's 400 for a block bound to a different conversation (R4)."""
    text = (
        f"{path}: Invalid `signature` in `thinking` block. The block is bound to a different "
        "conversation. Remove the block, or set "
        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
    )
    if not beta:
        text += (
            " That setting requires the `thinking-binding-controls-2026-08-01` value in the "
            "`anthropic-beta` header."
        )
    return f"{text} {changed}"


SYSTEM_CHANGED = "The `system` prompt differs from the one the block was created with."
TOOLS_CHANGED = "The `tools` list differs from the one the block was created with."
GAP = "A thinking block before it was removed from between others, or put back."


def differs(k: int) -> str:
    return f"messages.{k} differs from the conversation the block was created in."


@dataclass
class Session:
    """One fake and one SDK client; sends requests built from a message list."""

    fake: FakeAnthropic
    model: str = OPUS
    messages: list[dict[str, Any]] = field(default_factory=list)
    clients: list[anthropic.Anthropic] = field(default_factory=list)

    def client(self) -> anthropic.Anthropic:
        made = anthropic.Anthropic(
            api_key="x", max_retries=0, http_client=self.fake.http_client(HX)
        )
        self.clients.append(made)
        return made

    def send(
        self,
        messages: Sequence[Mapping[str, Any]] | None = None,
        *,
        betas: Sequence[str] = (),
        **overrides: Any,
    ) -> Any:
        """One request (the session's messages unless given); the SDK's message object."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": 1024,
            "system": SYSTEM,
            "tools": TOOLS,
            "messages": list(self.messages if messages is None else messages),
        }
        kwargs.update(overrides)
        client = self.clients[0] if self.clients else self.client()
        if betas:
            return client.beta.messages.create(betas=list(betas), **kwargs)
        return client.messages.create(**kwargs)

    def refused(self, messages: Sequence[Mapping[str, Any]] | None = None, **kw: Any) -> str:
        """Send, expect the SDK's BadRequestError, return the error body's message."""
        with pytest.raises(anthropic.BadRequestError) as caught:
            self.send(messages, **kw)
        body = caught.value.body
        assert isinstance(body, dict) and body["error"]["type"] == "invalid_request_error"
        message: str = body["error"]["message"]
        return message

    def turn(self, **kw: Any) -> Any:
        """Send, echo the reply exactly, answer its tool calls; the reply."""
        reply = self.send(**kw)
        content = [block.to_dict() for block in reply.content]
        self.messages.append({"role": "assistant", "content": content})
        results = [
            {"type": "tool_result", "tool_use_id": b["id"], "content": f"{b['input']}: ok"}
            for b in content
            if b["type"] == "tool_use"
        ]
        if results:
            self.messages.append({"role": "user", "content": results})
        return reply


@pytest.fixture
def session() -> Iterator[Session]:
    """Three tool-calling turns on Opus 5.5, each with signed empty thinking (R10)."""
    fake = FakeAnthropic().script(
        tool_calls(("read_file", {"path": "a.py"}), ("grep", {"path": "b"}), reasoning=""),
        tool_calls(("read_file", {"path": "c.py"}), reasoning=""),
        tool_calls(("grep", {"path": "d"}), reasoning=""),
        *[text("Done.", reasoning="") for _ in range(4)],
    )
    made = Session(fake, messages=[{"role": "user", "content": "Fix the bug."}])
    for _ in range(3):
        made.turn()
    # user, assistant(th1, use, use), user, assistant(th2, use), user, assistant(th3, use), user
    assert [m["role"] for m in made.messages] == ["user", *["assistant", "user"] * 3]
    assert fake.violations == ()
    yield made
    for client in made.clients:
        client.close()


def edited(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(messages)


# -- the model table -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("claude-opus-5-5", ("opus", (5, 5))),
        ("claude-opus-5-5-20261001", ("opus", (5, 5))),
        ("anthropic.claude-opus-5-5-v1:0", ("opus", (5, 5))),
        ("us.anthropic.claude-sonnet-5-5-20261001-v1:0", ("sonnet", (5, 5))),
        ("claude-opus-5-5@20261001", ("opus", (5, 5))),
        ("claude-opus-4-20250514", ("opus", (4,))),
        ("claude-opus-4-1-20250805", ("opus", (4, 1))),
        ("claude-3-5-sonnet-20241022", ("sonnet", (3, 5))),
        ("claude-3-opus-latest", ("opus", (3,))),
        ("anthropic/claude-fable-5.2", ("fable", (5, 2))),
        ("CLAUDE-MYTHOS-5-1", ("mythos", (5, 1))),
        ("m", None),
        ("gpt-x", None),
        ("claude-2.1", None),
    ],
)
def test_model_names_parse(name: str, parsed: tuple[str, tuple[int, ...]] | None) -> None:
    assert parse_claude_name(name) == parsed


def test_model_table() -> None:
    def flags(name: str) -> tuple[bool, bool, bool] | None:
        model = claude_model(name)
        return (
            None
            if model is None
            else (
                model.prefix_check,
                model.system_messages,
                model.rejects_prefill,
            )
        )

    for name in ("fable-5-2", "mythos-5-2", "fable-5-1", "mythos-5-1", "opus-5-5"):
        assert flags(f"claude-{name}") == (True, name != "fable-5-2" and name != "mythos-5-2", True)
    assert flags("claude-sonnet-5-5") == (True, True, True)
    assert flags("claude-haiku-5-5") == (True, False, True)
    assert flags("claude-opus-5") == (False, True, True)
    assert flags("claude-opus-4-8") == (False, True, False)
    assert flags("claude-sonnet-5") == (False, False, False)
    assert flags("claude-fable-5") == (False, True, False)
    assert flags("claude-3-5-sonnet-20241022") == (False, False, False)
    assert flags("claude-opus-4-6") == (False, False, True)
    assert flags("claude-opus-9") is None  # parsed, but not a model the table knows
    assert flags("model") is None
    opus = claude_model("claude-opus-5-5-20261001")
    assert opus is not None and opus.label == "Opus 5.5"


# -- the prefix check: echoing passes, edits fail -------------------------------------------


def test_echoing_every_turn_exactly_passes(session: Session) -> None:
    reply = session.send(betas=[THINKING_BETA])
    assert reply.input_transformations == []
    thinking = [b for m in session.messages if m["role"] == "assistant" for b in m["content"]]
    signatures = [b["signature"] for b in thinking if b["type"] == "thinking"]
    assert [s.split(".")[0] for s in signatures] == ["sig_0001", "sig_0002", "sig_0003"]
    assert {b["thinking"] for b in thinking if b["type"] == "thinking"} == {""}
    assert session.fake.violations == ()


def test_editing_an_earlier_tool_result_fails_at_the_next_thinking_block(
    session: Session,
) -> None:
    messages = edited(session.messages)
    messages[2]["content"][0]["content"] = "changed"
    assert session.refused(messages) == (
        "messages.3.content.0: Invalid `signature` in `thinking` block. The block is bound to "
        "a different conversation. Remove the block, or set "
        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block". That setting '
        "requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` "
        "header. messages.2 differs from the conversation the block was created in."
    )
    (violation,) = session.fake.violations
    assert (violation.rule, violation.status) == ("anthropic_thinking_prefix", 400)
    assert session.fake.pending == 4  # a refused request uses no turn


def test_with_the_beta_the_error_does_not_ask_for_it(session: Session) -> None:
    messages = edited(session.messages)
    messages[0]["content"] = "Fix the bug!"
    message = session.refused(messages, betas=[THINKING_BETA])
    assert message == bound("messages.1.content.0", differs(0), beta=True)


def test_changing_the_system_prompt_fails(session: Session) -> None:
    message = session.refused(system=SYSTEM + " Be brief.")
    assert message == bound("messages.1.content.0", SYSTEM_CHANGED)


def test_editing_a_tool_fails(session: Session) -> None:
    tools = [TOOLS[0], {**TOOLS[1], "description": "Search files fast."}]
    assert session.refused(tools=tools) == bound("messages.1.content.0", TOOLS_CHANGED)
    plus = [*TOOLS, {"name": "ls", "description": "List.", "input_schema": _SCHEMA}]
    assert session.refused(tools=plus) == bound("messages.1.content.0", TOOLS_CHANGED)


def test_tools_are_a_set_and_a_deferred_tool_may_be_added(session: Session) -> None:
    deferred = {"name": "ls", "description": "List.", "input_schema": _SCHEMA}
    session.send(tools=[*reversed(TOOLS), {**deferred, "defer_loading": True}])
    assert session.fake.violations == ()


def test_reordering_blocks_of_an_earlier_turn_fails(session: Session) -> None:
    messages = edited(session.messages)
    content = messages[1]["content"]
    content[1], content[2] = content[2], content[1]  # the two parallel tool_use blocks
    assert session.refused(messages) == bound("messages.3.content.0", differs(1))


def test_a_gap_in_the_thinking_fails_every_later_block(session: Session) -> None:
    messages = edited(session.messages)
    del messages[3]["content"][0]  # the middle turn's thinking
    assert session.refused(messages) == bound("messages.5.content.0", GAP)


def test_adding_a_text_block_to_an_earlier_user_turn_fails(session: Session) -> None:
    messages = edited(session.messages)
    messages[2]["content"].append({"type": "text", "text": "Today is Monday."})
    assert session.refused(messages) == bound("messages.3.content.0", differs(2))


def test_a_changed_tool_use_input_fails(session: Session) -> None:
    messages = edited(session.messages)
    messages[3]["content"][1]["input"] = {"path": "other.py"}
    assert session.refused(messages) == bound("messages.5.content.0", differs(3))


@pytest.mark.parametrize(
    "removed",
    [[1], [1, 3], [5], [3, 5], [1, 3, 5]],
    ids=["oldest", "oldest-two", "newest", "newest-two", "all"],
)
def test_removing_a_leading_or_trailing_run_or_all_thinking_passes(
    session: Session, removed: list[int]
) -> None:
    messages = edited(session.messages)
    for i in removed:
        assert messages[i]["content"][0]["type"] == "thinking"
        del messages[i]["content"][0]
    reply = session.send(messages, betas=[THINKING_BETA])
    assert reply.input_transformations == []
    assert session.fake.violations == ()


def test_putting_back_a_removed_block_fails_the_blocks_made_without_it(
    session: Session,
) -> None:
    without = edited(session.messages)
    oldest = without[1]["content"].pop(0)  # strip the oldest thinking: allowed
    session.messages = without
    session.turn()  # sig_0004 is made after a conversation without sig_0001
    session.messages.append({"role": "user", "content": "And now?"})
    back = edited(session.messages)
    back[1]["content"].insert(0, oldest)
    assert session.refused(back) == bound("messages.7.content.0", GAP)
    assert session.send(without + back[len(without) :])  # as sent before: fine


def test_cache_control_markers_may_move(session: Session) -> None:
    first = edited(session.messages)
    first[2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    tools = [{**TOOLS[0], "cache_control": {"type": "ephemeral"}}, TOOLS[1]]
    session.send(first, tools=tools)
    moved = edited(session.messages)
    moved[4]["content"][0]["cache_control"] = {"type": "ephemeral"}
    session.send(moved)
    assert session.fake.violations == ()


def test_key_order_and_whitespace_are_not_edits(session: Session) -> None:
    """The same values with every object's keys reversed, pretty-printed."""

    def reverse(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: reverse(v) for k, v in reversed(list(value.items()))}
        if isinstance(value, list):
            return [reverse(v) for v in value]
        return value

    body = {"model": OPUS, "max_tokens": 64, "system": SYSTEM, "tools": TOOLS}
    body["messages"] = session.messages
    with session.fake.http_client(HX) as client:
        sent = json.dumps(reverse(body), indent=4).encode()
        response = client.post("https://fake.test/v1/messages", content=sent)
    assert response.status_code == 200
    assert session.fake.violations == ()


def test_a_signature_the_fake_never_made_is_a_tampered_block(session: Session) -> None:
    messages = edited(session.messages)
    messages[3]["content"][0]["signature"] = "sig_9999"
    assert session.refused(messages) == (
        "messages.3.content.0: Invalid `signature` in `thinking` block."
    )
    messages = edited(session.messages)
    messages[1]["content"][0]["thinking"] = "I made this up."
    refused = session.refused(messages, betas=[THINKING_BETA], thinking=DROP)
    assert refused == "messages.1.content.0: Invalid `signature` in `thinking` block."


def test_a_redacted_block_is_bound_by_its_data() -> None:
    redacted = {"type": "redacted_thinking", "data": "enc_0001"}
    reply = {
        "id": "msg_r1",
        "type": "message",
        "role": "assistant",
        "model": OPUS,
        "content": [redacted, {"type": "text", "text": "Hi."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    fake = FakeAnthropic().script(raw(reply), text("ok"))
    session = Session(fake, messages=[{"role": "user", "content": "Hello."}])
    session.turn()
    session.messages.append({"role": "user", "content": "Again."})
    changed = edited(session.messages)
    changed[0]["content"] = "Hello!"
    assert session.refused(changed).startswith(
        "messages.1.content.0: Invalid `data` in `redacted_thinking` block. The block is bound "
        "to a different conversation."
    )
    session.send()
    assert [r.status for r in fake.requests] == [200, 400, 200]
    session.clients[0].close()


# -- drop_block and input_transformations (R2, R5, R28) --------------------------------------


def test_drop_block_drops_the_failing_block_and_every_later_one(session: Session) -> None:
    messages = edited(session.messages)
    messages[2]["content"][0]["content"] = "changed"
    reply = session.send(messages, betas=[THINKING_BETA], thinking=DROP)
    assert [t.to_dict() for t in reply.input_transformations] == [
        {"type": "thinking_dropped", "path": path, "reason": "prefix_binding_mismatch"}
        for path in ("messages.3.content.0", "messages.5.content.0")
    ]
    assert session.fake.violations == ()


def test_explicit_error_behaviour_is_the_default(session: Session) -> None:
    error = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "error"}}
    refused = session.refused(betas=[THINKING_BETA], thinking=error, system="Other.")
    assert refused == bound("messages.1.content.0", SYSTEM_CHANGED, beta=True)


def test_block_binding_needs_its_beta_header(session: Session) -> None:
    refused = session.refused(betas=["some-other-beta-2026-01-01"], thinking=DROP)
    assert refused == "thinking.block_binding: Extra inputs are not permitted"
    assert [v.rule for v in session.fake.violations] == ["anthropic_block_binding"]


def test_block_binding_is_accepted_on_models_without_the_check() -> None:
    fake = FakeAnthropic().script(text("a"), text("b"))
    session = Session(fake, model="claude-opus-5", messages=[{"role": "user", "content": "hi"}])
    session.send(betas=[THINKING_BETA], thinking=DROP)
    fake_m = Session(fake, model="m", messages=session.messages)
    fake_m.clients = session.clients
    fake_m.send(betas=[THINKING_BETA], thinking=DROP)
    assert fake.violations == ()
    session.clients[0].close()


def test_sonnet_between_tools_refuses_block_binding() -> None:
    fake = FakeAnthropic().script(text("ok"))
    session = Session(fake, model="claude-sonnet-5-5", messages=[{"role": "user", "content": "hi"}])
    thinking = {"type": "between_tools", "block_binding": {"prefix_mismatch_behavior": "error"}}
    refused = session.refused(betas=[THINKING_BETA], thinking=thinking)
    assert refused == "thinking.block_binding: Extra inputs are not permitted"
    session.send(betas=[THINKING_BETA], thinking={"type": "between_tools"})
    session.clients[0].close()


def test_without_the_rule_failing_blocks_are_reported_as_allowed() -> None:
    """An account the check is not enforced on (R3): the block reaches the model."""
    rules = tuple(r for r in ANTHROPIC_RULES if r is not anthropic_thinking_prefix)
    fake = FakeAnthropic(rules=rules).script(
        text("one", reasoning=""), text("two", reasoning=""), text("three")
    )
    session = Session(fake, messages=[{"role": "user", "content": "a"}])
    session.turn()
    session.messages.append({"role": "user", "content": "b"})
    session.turn()
    session.messages.append({"role": "user", "content": "c"})
    reply = session.send(betas=[THINKING_BETA], system="Changed.")
    assert [(t.type, t.path) for t in reply.input_transformations] == [
        ("thinking_mismatch_allowed", "messages.1.content.0"),
        ("thinking_mismatch_allowed", "messages.3.content.0"),
    ]
    session.clients[0].close()


def test_an_unknown_model_skips_the_prefix_check() -> None:
    fake = FakeAnthropic().script(text("one", reasoning=""), text("two"))
    session = Session(fake, model="m", messages=[{"role": "user", "content": "a"}])
    session.turn()
    session.messages.append({"role": "user", "content": "b"})
    session.send(system="Another prompt.", tools=TOOLS[:1])
    tampered = edited(session.messages)
    tampered[1]["content"][0]["signature"] = "forged"
    fake.script(text("three"))
    session.send(tampered)
    assert fake.violations == ()
    session.clients[0].close()


def test_other_spellings_of_the_model_run_the_check() -> None:
    fake = FakeAnthropic().script(text("one", reasoning=""))
    session = Session(fake, model="anthropic.claude-opus-5-5-v1:0")
    session.messages = [{"role": "user", "content": "a"}]
    session.turn()
    session.messages.append({"role": "user", "content": "b"})
    session.model = "claude-opus-5-5@20261001"
    assert session.refused(system="x") == bound("messages.1.content.0", SYSTEM_CHANGED)
    session.clients[0].close()


# -- rules with headers, provider wording -----------------------------------------------------


def test_a_rule_may_ask_for_the_headers() -> None:
    seen: list[str] = []

    def no_betas(
        body: Mapping[str, Any],
        earlier: Sequence[RecordedRequest],
        *,
        headers: Mapping[str, str] = NO_HEADERS,
    ) -> Iterator[str]:
        seen.append(headers.get("anthropic-beta", ""))
        if "x-api-key" in headers:
            yield "credentials leaked to a rule"
        if headers.get("anthropic-beta"):
            yield "no betas, please"

    fake = FakeAnthropic(rules=(*ANTHROPIC_RULES, provider_worded(no_betas))).script(text("ok"))
    session = Session(fake, model="m", messages=[{"role": "user", "content": "hi"}])
    session.send()
    assert session.refused(betas=["b-1", "b-2"]) == "no betas, please"
    assert seen == ["", "b-1,b-2"]
    assert fake.requests[1].headers["anthropic-beta"] == "b-1,b-2"
    assert list(no_betas({}, [])) == []  # still a plain two-argument Check
    session.clients[0].close()


def test_a_worded_refusal_lists_other_broken_rules_after_it() -> None:
    fake = FakeAnthropic()
    session = Session(
        fake, messages=[{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]
    )
    session.messages.append({"role": "assistant", "content": "prefill"})
    message = session.refused()
    assert message.startswith(
        "This model does not support assistant message prefill. The conversation must end "
        "with a user message. (FakeAnthropic also found: rule anthropic_roles_alternate broken:"
    )
    assert [v.rule for v in fake.violations] == [
        "anthropic_roles_alternate",
        "anthropic_no_prefill",
    ]
    session.clients[0].close()


# -- system messages (R14, R15, R19) ----------------------------------------------------------


def _system(content: Any = "Mode: review.", **extra: Any) -> dict[str, Any]:
    return {"role": "system", "content": content, **extra}


U: dict[str, Any] = {"role": "user", "content": "Go on."}
A: dict[str, Any] = {"role": "assistant", "content": "Sure."}
EFFORT = _system([], output_config={"effort": "low"})


@pytest.mark.parametrize(
    "messages",
    [
        [U, _system()],
        [U, _system(), A, U],
        [U, _system(), _system("Also: be brief.")],
        [U, _system([{"type": "text", "text": "Mode: plan."}]), A, U, _system()],
    ],
    ids=["last", "before-assistant", "consecutive", "blocks"],
)
def test_system_messages_where_they_may_sit(messages: list[dict[str, Any]]) -> None:
    fake = FakeAnthropic().script(text("ok"))
    Session(fake, messages=messages).send(tools=[])
    assert fake.violations == ()


def test_a_system_message_after_a_tool_result_only_user_message(session: Session) -> None:
    session.send([*session.messages, _system("Tests now pass.")])
    assert session.fake.violations == ()


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([_system(), U], "messages.0: role 'system' must follow a 'user' message"),
        ([U, A, _system()], "messages.2: role 'system' must follow a 'user' message"),
        (
            [U, _system(), U],
            "messages.1: role 'system' must precede an 'assistant' message or end the array",
        ),
        (
            [U, _system(), _system(), U],
            "messages.2: role 'system' must precede an 'assistant' message or end the array",
        ),
    ],
    ids=["first", "after-assistant", "before-user", "group-before-user"],
)
def test_misplaced_system_messages_are_refused(
    messages: list[dict[str, Any]], expected: str
) -> None:
    fake = FakeAnthropic().script(text("never"))
    assert Session(fake, messages=messages).refused(tools=[]).startswith(expected)
    # (a system message between two user messages also breaks the alternation)
    assert "anthropic_system_message_placement" in [v.rule for v in fake.violations]
    unknown = FakeAnthropic(rules=()).script(text("unchecked"))
    Session(unknown, model="m", messages=messages).send(tools=[])
    placement = [r for r in ANTHROPIC_RULES if r.__name__.startswith("anthropic_system")]
    assert [list(rule({"model": "m", "messages": messages}, [])) for rule in placement] == [
        [],
        [],
    ]


def test_a_system_message_between_tool_use_and_tool_result_is_refused(session: Session) -> None:
    messages = [*session.messages[:-1], _system(), session.messages[-1]]
    assert session.refused(messages).startswith("messages.6: role 'system' must follow")


def test_effort_only_system_messages_may_sit_anywhere() -> None:
    fake = FakeAnthropic().script(text("ok"))
    messages = [EFFORT, U, A, EFFORT, U]
    Session(fake, messages=messages).send(tools=[], betas=[OUTPUT_CONFIG_BETA])
    assert fake.violations == ()
    refused = Session(fake, messages=messages).refused(tools=[])
    assert refused.startswith("messages.0.output_config: Extra inputs are not permitted")


@pytest.mark.parametrize("model", ["claude-sonnet-5", "claude-haiku-5-5", "claude-3-5-haiku"])
def test_models_without_system_messages_refuse_them(model: str) -> None:
    fake = FakeAnthropic().script(text("never"))
    refused = Session(fake, model=model, messages=[U, _system()]).refused(tools=[])
    label = claude_model(model).label  # type: ignore[union-attr]
    assert refused == (
        f"messages.1: role 'system' is not supported by Claude {label}; put system "
        "instructions in the top-level `system` parameter"
    )


def test_clear_at_needs_its_beta_and_text_only() -> None:
    fake = FakeAnthropic().script(text("ok"), text("ok"))
    scoped = _system("Reminder.", clear_at="next_user_message")
    session = Session(fake, messages=[U, scoped])
    assert session.refused(tools=[]) == "messages.1.clear_at: Extra inputs are not permitted"
    session.send(tools=[], betas=[CLEAR_AT_BETA])
    # cleared once a user message follows, and left in place; but never right before one
    session.send([U, scoped, A, U], tools=[], betas=[CLEAR_AT_BETA])
    assert session.refused([U, scoped, U], tools=[], betas=[CLEAR_AT_BETA]).startswith(
        "messages.1: role 'system' must precede"
    )
    marked = _system(
        [{"type": "text", "text": "R.", "cache_control": {"type": "ephemeral"}}],
        clear_at="next_user_message",
    )
    assert session.refused([U, marked], tools=[], betas=[CLEAR_AT_BETA]) == (
        "messages.1.content.0.cache_control: not allowed with clear_at 'next_user_message'"
    )
    tool_change = _system(
        [{"type": "tool_addition", "tool": {"type": "tool_reference", "name": "grep"}}],
        clear_at="next_user_message",
    )
    refused = session.refused([U, tool_change], betas=[CLEAR_AT_BETA, INLINE_TOOLS_BETA])
    assert refused == (
        "messages.1.content.0: a system message with clear_at 'next_user_message' holds "
        "text blocks only"
    )
    session.clients[0].close()


def test_tool_changes_need_a_beta_and_declared_tools() -> None:
    def change(name: str, kind: str = "tool_addition") -> dict[str, Any]:
        block = {"type": kind, "tool": {"type": "tool_reference", "name": name}}
        return _system([{"type": "text", "text": "Tools changed."}, block])

    fake = FakeAnthropic().script(text("ok"), text("ok"))
    session = Session(fake, messages=[U, change("grep")])
    assert session.refused() == (
        "messages.1.content.1: `tool_addition` blocks require the `inline-tools-2026-09-15` "
        "(or `mid-conversation-tool-changes-2026-07-01`) value in the `anthropic-beta` header"
    )
    session.send(betas=[INLINE_TOOLS_BETA])
    session.send([U, change("read_file", "tool_removal")], betas=[INLINE_TOOLS_BETA])
    refused = session.refused([U, change("ls")], betas=[INLINE_TOOLS_BETA])
    assert refused.startswith("messages.1.content.1.tool: tool_reference names 'ls'")
    assert "(tool_reference_unresolved)" in refused
    session.clients[0].close()


# -- prefill (R18) --------------------------------------------------------------------------


PREFILL = (
    "This model does not support assistant message prefill. The conversation must end "
    "with a user message."
)


@pytest.mark.parametrize(
    "model", [OPUS, "claude-haiku-5-5-20261001", "claude-fable-5-2", "claude-opus-4-6"]
)
def test_prefill_is_refused_where_the_model_refuses_it(model: str) -> None:
    fake = FakeAnthropic().script(text("ok"))
    session = Session(fake, model=model, messages=[U, {"role": "assistant", "content": "{"}])
    assert session.refused(tools=[]) == PREFILL
    assert [v.rule for v in fake.violations] == ["anthropic_no_prefill"]


@pytest.mark.parametrize("model", ["m", "claude-opus-4-8", "claude-3-5-sonnet-20241022"])
def test_prefill_passes_elsewhere(model: str) -> None:
    fake = FakeAnthropic().script(text("ok"))
    Session(fake, model=model, messages=[U, {"role": "assistant", "content": "{"}]).send()
    assert fake.violations == ()


def test_a_paused_turn_may_be_continued() -> None:
    paused = {
        "role": "assistant",
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        ],
    }
    fake = FakeAnthropic().script(text("ok"), text("ok"))
    Session(fake, messages=[U, paused]).send(tools=[])
    Session(fake, messages=[U, paused, _system("Stay on topic.")]).send(tools=[])
    assert fake.violations == ()


# -- cache diagnostics (R29) ------------------------------------------------------------------


def test_diagnostics_report_the_first_divergence(session: Session) -> None:
    session.fake.script(*[text("ok") for _ in range(6)])
    previous = session.fake.requests[-1].reply["id"]
    first = session.send(diagnostics={"previous_message_id": None})
    assert first.diagnostics is None
    same = session.send(diagnostics={"previous_message_id": previous})
    assert same.diagnostics is None

    def reason(**kw: Any) -> dict[str, Any]:
        reply = session.send(diagnostics={"previous_message_id": previous}, **kw)
        dumped: dict[str, Any] = reply.diagnostics.to_dict()
        return dumped

    tools = list(reversed(TOOLS))
    assert reason(tools=tools) == {
        "cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 0}
    }
    edited_history = edited(session.messages)
    edited_history[0]["content"] = "Fix the other bug."
    with pytest.raises(anthropic.BadRequestError):  # the prefix check comes first
        reason(messages=edited_history)
    assert reason(thinking={"type": "adaptive"}) == {"cache_miss_reason": {"type": "unavailable"}}
    missing = session.send(diagnostics={"previous_message_id": "msg_nope"})
    assert missing.diagnostics.to_dict() == {
        "cache_miss_reason": {"type": "previous_message_not_found"}
    }


def test_diagnostics_on_system_messages_and_model() -> None:
    fake = FakeAnthropic().script(*[text("ok") for _ in range(6)])
    session = Session(fake, model="m", messages=[{"role": "user", "content": "a"}])
    first = session.send(diagnostics={"previous_message_id": None})
    ask = {"previous_message_id": first.id}

    def kind(**kw: Any) -> str:
        reply = session.send(diagnostics=ask, **kw)
        return str(reply.diagnostics.cache_miss_reason.type)

    assert kind(system="Changed.") == "system_changed"
    assert kind(model="claude-opus-5") == "model_changed"
    assert kind(messages=[{"role": "user", "content": "b"}]) == "messages_changed"
    longer = [*session.messages, {"role": "assistant", "content": "ok"}, U]
    assert session.send(messages=longer, diagnostics=ask).diagnostics is None
    assert fake.requests[0].reply["diagnostics"] is None
    session.send()
    assert "diagnostics" not in fake.requests[-1].reply  # not asked: not answered
    session.clients[0].close()


# -- more shapes ------------------------------------------------------------------------------


def test_a_deferred_tool_counts_once_a_tool_reference_names_it() -> None:
    """Deferred tools stay out of the prefix until referenced (R7), then they are in it."""
    ls = {"name": "ls", "description": "List.", "input_schema": _SCHEMA, "defer_loading": True}
    load = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "ls"}}
    fake = FakeAnthropic().script(*[text("ok", reasoning="") for _ in range(4)])
    session = Session(fake, messages=[U])
    tools = [*TOOLS, ls]
    session.turn(tools=tools)
    session.messages.append({"role": "user", "content": "Load ls."})
    session.messages.append(_system([{"type": "text", "text": "ls added."}, load]))
    changed = [*TOOLS, {**ls, "description": "List a folder."}]
    session.turn(tools=changed, betas=[INLINE_TOOLS_BETA])  # not referenced before sig_0001
    session.messages.append({"role": "user", "content": "Go on."})
    again = [*TOOLS, {**ls, "description": "List files."}]
    refused = session.refused(tools=again, betas=[INLINE_TOOLS_BETA])
    assert refused == bound("messages.4.content.0", TOOLS_CHANGED)
    session.send(tools=changed, betas=[INLINE_TOOLS_BETA])
    session.clients[0].close()


def test_an_inline_tool_definition_can_be_referenced_later() -> None:
    definition = {"name": "ls", "description": "List.", "input_schema": _SCHEMA}
    add = {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": definition}}
    remove = {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "ls"}}
    messages = [U, _system([add]), A, U, _system([remove])]
    fake = FakeAnthropic().script(text("ok"))
    session = Session(fake, messages=messages)
    old_beta = "mid-conversation-tool-changes-2026-07-01"
    assert session.refused(betas=[old_beta]).startswith(
        "messages.1.content.0.tool: a `tool_definition` goes in a `tool_addition` block, with "
        "the `inline-tools-2026-09-15` value in the `anthropic-beta` header ("
    )  # ...and so the removal names an unknown tool
    session.send(betas=[INLINE_TOOLS_BETA])
    session.clients[0].close()


def test_a_thinking_block_after_other_blocks_keeps_its_position() -> None:
    """A reply [text, thinking, text]: the blocks before the thinking are part of its prefix."""
    reply = {
        "id": "msg_x1",
        "type": "message",
        "role": "assistant",
        "model": OPUS,
        "content": [
            {"type": "text", "text": "Let me think."},
            {"type": "thinking", "thinking": "", "signature": "sig_x1"},
            {"type": "text", "text": "Done."},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    fake = FakeAnthropic().script(raw(reply), text("ok"))
    session = Session(fake, messages=[U])
    session.turn()
    session.messages.append({"role": "user", "content": "Thanks."})
    changed = edited(session.messages)
    changed[1]["content"][0]["text"] = "Let me think!"
    assert session.refused(changed) == bound("messages.1.content.1", differs(1))
    moved = edited(session.messages)
    moved[1]["content"] = [moved[1]["content"][1], moved[1]["content"][0], moved[1]["content"][2]]
    assert session.refused(moved) == bound("messages.1.content.0", differs(1))
    session.send()
    session.clients[0].close()


def test_the_async_client_gets_the_same_checks() -> None:
    import asyncio

    fake = FakeAnthropic().script(text("one", reasoning=""), text("two"))

    async def go() -> tuple[Any, str]:
        client = anthropic.AsyncAnthropic(
            api_key="x", max_retries=0, http_client=fake.async_http_client(HX)
        )
        async with client:
            kwargs: dict[str, Any] = {"model": OPUS, "max_tokens": 64, "system": SYSTEM}
            first = await client.messages.create(**{**kwargs, "messages": [U]})
            echoed = {"role": "assistant", "content": [b.to_dict() for b in first.content]}
            kwargs["messages"] = [U, echoed, {"role": "user", "content": "More."}]
            with pytest.raises(anthropic.BadRequestError) as caught:
                await client.messages.create(**{**kwargs, "system": "x"})
            reply = await client.beta.messages.create(betas=[THINKING_BETA], **kwargs)
            return reply, str(caught.value.body["error"]["message"])  # type: ignore[index]

    reply, refused = asyncio.run(go())
    assert reply.input_transformations == []
    assert refused == bound("messages.1.content.0", SYSTEM_CHANGED)
