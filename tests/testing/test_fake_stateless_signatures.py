"""Fakes verify the thinking signatures they issue statelessly (`contextchef.testing._signing`).

A fresh `FakeAnthropic` (another process, a worker fleet) accepts what another fake issued
and checks the preserved-thinking prefix from what the signature carries, giving the same
verdict as the fake that issued it; an edited thinking text or a made-up signature is still
refused. The end-to-end test runs a `ContextChef` session against fake A in one process,
snapshots it to SQLite, and resumes it in a new process against a new fake B.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anthropic
import pytest
from test_fake_preserved_thinking import HX, OPUS, SYSTEM, TOOLS  # one conversation setup

from contextchef.testing import FakeAnthropic, text, tool_calls
from contextchef.testing._body import canonical
from contextchef.testing._interactions import interactions_reply, interactions_signatures_replayed
from contextchef.testing._replies import Ids
from contextchef.testing._signing import FAKE_SIGNING_KEY, opened, seal


def _send(fake: FakeAnthropic, messages: list[dict[str, Any]], **overrides: Any) -> Any:
    """One request through the SDK; the message, or the 400's error message."""
    kwargs: dict[str, Any] = {
        "model": OPUS,
        "max_tokens": 256,
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": messages,
    }
    kwargs.update(overrides)
    with anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX)) as c:
        try:
            return c.messages.create(**kwargs)
        except anthropic.BadRequestError as exc:
            assert isinstance(exc.body, dict)
            return str(exc.body["error"]["message"])


@pytest.fixture
def history() -> tuple[FakeAnthropic, list[dict[str, Any]]]:
    """Three tool-calling turns on Opus 5.5 with thinking, echoed exactly (fake A)."""
    fake = FakeAnthropic().script(
        tool_calls(("read_file", {"path": "a.py"}), reasoning="Read a.py first."),
        tool_calls(("grep", {"path": "b"}), reasoning="Then search."),
        tool_calls(("read_file", {"path": "c.py"}), reasoning="One more file."),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug."}]
    for _ in range(3):
        content = [b.to_dict() for b in _send(fake, messages).content]
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in content if b["type"] == "tool_use"]
        results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "ok"} for b in uses]
        messages.append({"role": "user", "content": results})
    assert fake.violations == ()
    return fake, messages


def _edit(messages: list[dict[str, Any]], how: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    out, overrides = copy.deepcopy(messages), {}
    if how == "system":
        overrides["system"] = "Another system prompt."
    elif how == "tools":
        overrides["tools"] = TOOLS[:1]
    elif how == "message":
        out[0]["content"] = "Fix the other bug."
    elif how == "gap":  # the middle thinking block removed between the others
        del out[3]["content"][0]
    elif how == "oldest":  # removing the oldest one is allowed (R11)
        del out[1]["content"][0]
    elif how == "text":
        out[3]["content"][0]["thinking"] = "I made this up."
    elif how == "made_up":
        out[3]["content"][0]["signature"] = seal("sig_0002", "{}")
    elif how == "foreign_key":
        block = out[3]["content"][0]
        block["signature"] = "sig_0002." + block["signature"].split(".", 1)[1][:-4] + "0000"
    return out, overrides


EDITS = ["none", "system", "tools", "message", "gap", "oldest", "text", "made_up", "foreign_key"]


@pytest.mark.parametrize("how", EDITS)
def test_a_new_fake_gives_the_issuing_fakes_verdict(
    history: tuple[FakeAnthropic, list[dict[str, Any]]], how: str
) -> None:
    """Fake A (which remembers its requests) and a fresh fake B agree on every edit."""
    issuer, messages = history
    messages, overrides = _edit(messages, how)
    verdicts = []
    for fake in (issuer, FakeAnthropic()):
        fake.script(text("ok"))
        reply = _send(fake, messages, **overrides)
        verdicts.append(reply if isinstance(reply, str) else "accepted")
    assert verdicts[1] == verdicts[0]
    if how in ("none", "oldest"):
        assert verdicts[1] == "accepted"
    elif how in ("text", "made_up", "foreign_key"):
        assert verdicts[1] == "messages.3.content.0: Invalid `signature` in `thinking` block."
    else:
        assert "bound to a different conversation" in verdicts[1]


def test_the_signature_seals_the_text(
    history: tuple[FakeAnthropic, list[dict[str, Any]]],
) -> None:
    block = history[1][1]["content"][0]
    sealed = canonical({"thinking": block["thinking"], "type": "thinking"})
    claims = opened(block["signature"], sealed)
    assert claims is not None and set(claims) == {"c", "h", "m", "r", "s", "t"}
    assert opened(block["signature"], sealed.replace("Read", "Edit")) is None
    assert len(FAKE_SIGNING_KEY) >= 32


_SCRIPT = textwrap.dedent(
    """
    import copy, json, sys
    import anthropic, openai
    from google import genai
    from google.genai import types
    from contextchef import ContextChef, SessionSync, SnapshotKeys, SQLiteSessionStore, user
    from contextchef.testing import Ids, fake_for, httpx_for, text, tool_calls

    db, target, phase, tamper = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "tamper"
    model = {"anthropic": "claude-opus-5-5", "responses": "gpt-5.5",
             "gemini-interactions": "gemini-4-argon"}[target]
    store = SQLiteSessionStore(db, keys=SnapshotKeys({"k1": b"x" * 32}))
    # a new fake in each process: it never saw the other's requests; ids of its own
    fake = type(fake_for(target))(ids=Ids(phase.lower()))
    http = fake.http_client(httpx_for(anthropic))
    if target == "anthropic":
        client = anthropic.Anthropic(api_key="t", max_retries=0, http_client=http)
        send, refusal = (lambda p: client.messages.create(**p)), anthropic.BadRequestError
    elif target == "responses":
        client = openai.OpenAI(api_key="t", max_retries=0, http_client=http)
        send, refusal = (lambda p: client.responses.create(**p)), openai.BadRequestError
    else:
        client = genai.Client(api_key="t", http_options=types.HttpOptions(httpx_client=http))
        send, refusal = (lambda p: client.interactions.create(**p)), Exception

    def grep(pattern: str) -> str:
        \"\"\"Search the code base.

        Args:
            pattern: A regex.
        \"\"\"
        return f"src/app.py:12: {pattern}"

    def make_chef():
        chef = ContextChef()
        chef.register_tools([grep])
        chef.set_system_prompt("You are a careful engineering agent.")
        return chef

    def edit(payload):
        for message in payload["messages"]:
            for block in message["content"] if message["role"] == "assistant" else ():
                if block.get("type") == "thinking":
                    block["thinking"] = "edited " + block["thinking"]
        return payload

    def turn(chef, i):
        chef.append(user(f"question {phase}{i}"))
        while True:
            request = chef.compile(target, model=model)
            payload = edit(request.mutable_payload()) if tamper else request.payload
            try:
                reply = send(payload)
            except refusal:
                return "refused"
            if not chef.run_tools(chef.ingest(reply)):
                return None

    sync = SessionSync(store, "conv-1", checkpoint_every=16)
    for i in range(2):
        fake.script(
            tool_calls(("grep", {"pattern": f"T{i}"}), reasoning=f"think {phase}{i}"),
            text(f"answer {i}", reasoning=f"done {phase}{i}"),
        )
        if sync.run_turn(make_chef, lambda chef, i=i: turn(chef, i)):
            break
    print(json.dumps({
        "violations": [[v.rule, v.message] for v in fake.violations],
        "requests": len(fake.requests),
        "sent": [json.dumps(r.body) for r in fake.requests],
        "replies": [json.dumps(r.reply) for r in fake.requests],
    }))
    """
)

TARGETS = ["anthropic", "responses", "gemini-interactions"]


def _phase(script: Path, db: Path, target: str, phase: str, mode: str = "plain") -> Any:
    done = subprocess.run(
        [sys.executable, str(script), str(db), target, phase, mode],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _tokens(reply: str) -> set[str]:
    """The sealed opaque tokens (``sig_0001.<claims>.<tag>``, maybe base64) in a reply."""
    found = set(re.findall(r"sig_[a-z]?\d{4}\.[A-Za-z0-9_-]*\.[0-9a-f]{32}", reply))
    for value in re.findall(r'"signature": "([A-Za-z0-9+/=]{40,})"', reply):
        found.add(base64.b64decode(value).decode())
    return found


@pytest.mark.parametrize("target", TARGETS)
def test_a_session_resumed_in_a_new_process_goes_on_against_a_new_fake(
    tmp_path: Path, target: str
) -> None:
    """Fake A in process 1, snapshot, restore in process 2 against fake B: 0 violations."""
    script = tmp_path / "resume.py"
    script.write_text(_SCRIPT)
    db = tmp_path / "sessions.db"
    first = _phase(script, db, target, "A")
    assert first["violations"] == [] and first["requests"] == 4
    second = _phase(script, db, target, "B")
    assert second["violations"] == [] and second["requests"] == 4
    # process 2 sent tokens fake A issued back to fake B (which accepted them)
    issued_by_a = set().union(*map(_tokens, first["replies"]))
    sent_to_b = "".join(second["sent"])
    if target != "responses":  # Responses reasoning items are not checked by the fake
        assert issued_by_a
        assert all(t in sent_to_b or _b64(t) in sent_to_b for t in issued_by_a)


def _b64(token: str) -> str:
    return base64.b64encode(token.encode()).decode()


def test_an_edited_thinking_text_is_refused_by_the_new_fake(tmp_path: Path) -> None:
    script = tmp_path / "resume.py"
    script.write_text(_SCRIPT)
    db = tmp_path / "sessions.db"
    assert _phase(script, db, "anthropic", "A")["violations"] == []
    second = _phase(script, db, "anthropic", "B", "tamper")
    rules = {rule for rule, _ in second["violations"]}
    assert rules == {"anthropic_thinking_prefix"}
    (message,) = {m for _, m in second["violations"]}
    assert message.endswith(": Invalid `signature` in `thinking` block.")


def test_interactions_thought_signatures_are_checked_statelessly() -> None:
    """A thought signature any fake issued passes a new fake; a made-up one does not."""

    reply = interactions_reply(tool_calls(("grep", {"path": "a"}), reasoning="Look."), "m", Ids())
    thought, call = reply["steps"]
    assert thought["type"] == "thought" and call["type"] == "function_call"
    result = {"type": "function_result", "call_id": call["id"], "result": "ok"}
    body = {"model": "m", "input": [{"type": "user_input", "content": "hi"}, thought, call, result]}
    assert list(interactions_signatures_replayed(body, ())) == []
    forged = {**thought, "signature": _b64(seal("sig_0001", "", {"calls": ["call_9"]}) + "x")}
    body["input"][1] = forged
    assert [m.split(":")[0] for m in interactions_signatures_replayed(body, ())] == ["input[1]"]
    body["input"][1] = {**thought, "signature": "bm90IHNlYWxlZA=="}  # b64 "not sealed"
    assert len(list(interactions_signatures_replayed(body, ()))) == 1


def test_ids_take_a_namespace_and_a_custom_key_is_another_account() -> None:
    from contextchef import UsageError
    from contextchef.testing import Ids

    assert Ids("b").take("msg_") == "msg_b0001"
    with pytest.raises(UsageError, match="namespace"):
        Ids("b.1")
    with pytest.raises(UsageError, match="signing_key"):
        FakeAnthropic(signing_key=b"")
    key = b"team key"
    issuer = FakeAnthropic(signing_key=key).script(
        tool_calls(("grep", {"path": "a"}), reasoning="Go.")
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug."}]
    content = [b.to_dict() for b in _send(issuer, messages).content]
    use = content[-1]
    messages += [
        {"role": "assistant", "content": content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "ok"}],
        },
    ]
    same = FakeAnthropic(signing_key=key).script(text("ok"))
    assert not isinstance(_send(same, messages), str) and same.violations == ()
    other = FakeAnthropic().script(text("ok"))  # the default key: another account
    assert (
        _send(other, messages) == "messages.1.content.0: Invalid `signature` in `thinking` block."
    )
