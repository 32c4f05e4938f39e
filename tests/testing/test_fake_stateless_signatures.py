"""Fakes verify the thinking signatures they issue statelessly (`contextchef.testing._signing`).

A fresh `FakeAnthropic` (another process, a worker fleet) accepts what another fake issued
and checks the preserved-thinking prefix from what the signature carries, giving the same
verdict as the fake that issued it; an edited thinking text or a made-up signature is still
refused. The end-to-end test runs a `ContextChef` session against fake A in one process,
snapshots it to SQLite, and resumes it in a new process against a new fake B.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anthropic
import pytest

from contextchef.testing import FakeAnthropic, httpx_for, text, tool_calls
from contextchef.testing._body import canonical
from contextchef.testing._signing import FAKE_SIGNING_KEY, opened, seal

HX = httpx_for(anthropic)
OPUS = "claude-opus-5-5"
SYSTEM = "You are a careful coding agent."
_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS: list[dict[str, Any]] = [
    {"name": "read_file", "description": "Read a file.", "input_schema": _SCHEMA},
    {"name": "grep", "description": "Search files.", "input_schema": _SCHEMA},
]


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
    import json, sys
    import anthropic
    from contextchef import ContextChef, SessionSync, SnapshotKeys, SQLiteSessionStore, user
    from contextchef.testing import FakeAnthropic, httpx_for, text, tool_calls

    db, phase, tamper = sys.argv[1], sys.argv[2], sys.argv[3] == "tamper"
    store = SQLiteSessionStore(db, keys=SnapshotKeys({"k1": b"x" * 32}))
    fake = FakeAnthropic()  # a new fake in each process: it never saw the other's requests
    client = anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )

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

    def turn(chef, i):
        chef.append(user(f"question {phase}{i}"))
        while True:
            request = chef.compile("anthropic", model="claude-opus-5-5")
            payload = request.mutable_payload() if tamper else request.payload
            if tamper:
                for message in payload["messages"]:
                    for block in message["content"] if message["role"] == "assistant" else ():
                        if block.get("type") == "thinking":
                            block["thinking"] = "edited " + block["thinking"]
            try:
                reply = client.messages.create(**payload)
            except anthropic.BadRequestError as exc:
                return str(exc.body["error"]["message"])
            if not chef.run_tools(chef.ingest(reply)):
                return None

    sync = SessionSync(store, "conv-1", checkpoint_every=16)
    refused = []
    for i in range(2):
        fake.script(
            tool_calls(("grep", {"pattern": f"T{i}"}), reasoning=f"think {phase}{i}"),
            text(f"answer {i}", reasoning=f"done {phase}{i}"),
        )
        refused.append(sync.run_turn(make_chef, lambda chef, i=i: turn(chef, i)))
        if refused[-1]:
            break
    print(json.dumps({
        "violations": [[v.rule, v.message] for v in fake.violations],
        "requests": len(fake.requests),
        "thinking_sent": sum(
            1 for r in fake.requests for m in r.body["messages"]
            if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"
        ),
    }))
    """
)


def _phase(script: Path, db: Path, phase: str, mode: str = "plain") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(script), str(db), phase, mode],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_session_resumed_in_a_new_process_goes_on_against_a_new_fake(tmp_path: Path) -> None:
    """Fake A in process 1, snapshot, restore in process 2 against fake B: 0 violations."""
    script = tmp_path / "resume.py"
    script.write_text(_SCRIPT)
    db = tmp_path / "sessions.db"
    first = _phase(script, db, "A")
    assert first["violations"] == [] and first["requests"] == 4
    second = _phase(script, db, "B")
    assert second["violations"] == [] and second["requests"] == 4
    # process 2 sent process 1's signed thinking blocks back, and B accepted them
    assert second["thinking_sent"] > first["thinking_sent"]


def test_an_edited_thinking_text_is_refused_by_the_new_fake(tmp_path: Path) -> None:
    script = tmp_path / "resume.py"
    script.write_text(_SCRIPT)
    db = tmp_path / "sessions.db"
    assert _phase(script, db, "A")["violations"] == []
    second = _phase(script, db, "B", "tamper")
    rules = {rule for rule, _ in second["violations"]}
    assert rules == {"anthropic_thinking_prefix"}
    (message,) = {m for _, m in second["violations"]}
    assert "Invalid `signature` in `thinking` block." in message
