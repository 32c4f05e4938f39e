"""Random sessions through the provider fakes: never a rejection, always append-only.

Hypothesis draws a target and a sequence of host actions and model turns (signed thinking
or not, text or parallel calls, state and announcement changes on every channel, memory
writes, blocklist changes, a second compile of the same turn, a user message without an
answer, a snapshot restored mid-session); each session runs through the fake of its
target, which enforces the provider's rules (pairing, placement, prefill, and on
``claude-opus-5-5`` the preserved-thinking prefix check). Every request must be accepted,
pass the independent prefix checker, and extend the previous one without an edit.

Sessions: 1,000 under ``CONTEXTCHEF_FULL_TESTS=1``, 100 by default (tests/conftest.py).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from conftest import examples
from contextchef import ContextChef, InMemoryStore, tool_results, user
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeGeminiInteractions,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    Turn,
    httpx_for,
    text,
    tool_calls,
)
from prefix_check import prefix_problems

HX = httpx_for(anthropic)
EXAMPLES = examples(full=1_000, default=100)
TARGETS = {
    "anthropic": (FakeAnthropic, "https://api.anthropic.com/v1/messages", "claude-opus-5-5"),
    "openai": (FakeOpenAIChat, "https://api.openai.com/v1/chat/completions", "gpt-x"),
    "responses": (FakeResponses, "https://api.openai.com/v1/responses", "gpt-x"),
    "gemini": (FakeGemini, "", "gemini-x"),
    "gemini-interactions": (
        FakeGeminiInteractions,
        "https://generativelanguage.googleapis.com/v1/interactions",
        "gemini-4-argon",
    ),
}


class State(BaseModel):
    step: int


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file.
    """
    return f"contents of {path}"


def grep(pattern: str) -> str:
    """Search files.

    Args:
        pattern: What to find.
    """
    return f"no match for {pattern}"


class GeminiSender:
    """google-genai turns the SDK's arguments into the REST body: send through it."""

    def __init__(self) -> None:
        self.fake: FakeProvider | None = None
        self.client = genai.Client(
            api_key="x",
            http_options=genai_types.HttpOptions(
                httpx_client=HX.Client(transport=HX.MockTransport(self._route))
            ),
        )

    def _route(self, request: Any) -> Any:
        assert self.fake is not None
        return self.fake(request)

    def send(self, fake: FakeProvider, payload: dict[str, Any]) -> Any:
        self.fake = fake
        return self.client.models.generate_content(**payload)


@pytest.fixture(scope="module")
def gemini() -> Iterator[GeminiSender]:
    sender = GeminiSender()
    yield sender
    sender.client.close()


def send(target: str, fake: FakeProvider, request: Any, gemini: GeminiSender) -> Any:
    """One request to the fake, as the SDK would send it (its JSON reply back)."""
    if target == "gemini":
        return gemini.send(fake, request.payload)
    url = TARGETS[target][1]
    body = json.dumps(request.payload).encode()
    headers = {"content-type": "application/json", **request.headers}
    reply = fake(HX.Request("POST", url, content=body, headers=headers))
    return reply.json()


calls = st.lists(
    st.sampled_from(
        [
            ("read_file", {"path": "a.py"}),
            ("grep", {"pattern": "TODO"}),
            ("create_memory", {"key": "k", "value": "v"}),
            ("read_file", {}),  # invalid arguments: answered with an error
            ("nope", {}),  # unknown tool
        ]
    ),
    min_size=1,
    max_size=3,
)
turns = st.one_of(
    st.builds(lambda c, r: tool_calls(*c, reasoning=r), calls, st.sampled_from([None, "", "plan"])),
    st.builds(lambda r: text("done", reasoning=r), st.sampled_from([None, "", "why"])),
)
actions = st.sampled_from(
    [
        "state",
        "clear_state",
        "announce_auto",
        "announce_system",
        "announce_tail",
        "retract",
        "block",
        "unblock",
        "recompile",
        "user_again",
        "snapshot",
        "memory",
    ]
)
sessions = st.tuples(
    st.sampled_from(sorted(TARGETS)),
    st.lists(st.tuples(st.lists(actions, max_size=3), turns), min_size=1, max_size=6),
)


def act(chef: ContextChef, action: str, step: int) -> ContextChef:
    if action == "state":
        chef.set_dynamic_state(State(step=step))
    elif action == "clear_state":
        chef.set_dynamic_state(None)
    elif action.startswith("announce_"):
        channel = {"auto": "auto", "system": "system", "tail": "user_tail"}[action[9:]]
        chef.announce(action, f"note {step}", channel=channel)  # type: ignore[arg-type]
    elif action == "retract":
        for a in chef.get_announcements()[:1]:
            chef.retract_announcement(a.id)
    elif action == "block":
        chef.set_blocked_tools(["grep"])
    elif action == "unblock":
        chef.set_blocked_tools([])
    elif action == "memory":
        chef.execute(
            {
                "id": f"m{step}",
                "name": "create_memory",
                "arguments": {"key": f"k{step}", "value": "x"},
            }
        )
    elif action == "snapshot":
        other = new_chef()
        other.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
        return other
    return chef


def new_chef() -> ContextChef:
    chef = ContextChef(memory=InMemoryStore())
    chef.register_tools([read_file, grep], handlers={"read_file": read_file, "grep": grep})
    chef.set_system_prompt("You are careful.")
    return chef


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(session=sessions)
def test_random_sessions_are_never_rejected(
    session: tuple[str, list[tuple[list[str], Turn]]], gemini: GeminiSender
) -> None:
    target, steps = session
    fake_type, _, model = TARGETS[target]
    fake = fake_type().script(*(turn for _, turn in steps))
    chef = new_chef()
    chef.set_history([user("Start.")])
    requests = []
    for step, (host, _) in enumerate(steps):
        for action in host:
            if action == "recompile":
                chef.compile(target, model=model)  # compiled, never sent
            elif action == "user_again":
                chef.append(user(f"Also this {step}."))
            else:
                chef = act(chef, action, step)
        request = chef.compile(target, model=model)
        requests.append(request)
        response = send(target, fake, request, gemini)
        assert fake.violations == (), fake.violations
        found = chef.ingest(response)
        if found:
            chef.append(tool_results([chef.execute(call).result for call in found]))
        else:
            chef.append(user(f"Next {step}."))
    if target == "anthropic":
        assert prefix_problems([(r.body, r.reply) for r in fake.requests]) == []
    for before, after in itertools.pairwise(requests):
        assert after.edits == ()
        assert after.segments["messages"].startswith(before.segments["messages"][:-1])
