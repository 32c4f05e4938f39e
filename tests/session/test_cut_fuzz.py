"""Random cuts in random sessions: whatever the host does, every request is accepted.

Hypothesis draws a target, a strategy, thinking on or off, and a sequence of steps: the
host cuts the history (`ContextChef.set_history` back to any earlier message, or back to
the end of a user turn), drops the oldest turns, appends a user message, changes the
volatile state (dynamic state, announcements on every channel, a retraction, a memory
write), changes the tools (a mode, the blocklist, a runtime tool), the system prompt,
the model (within the target), the strategy or thinking, compacts, clears tool results,
restores a snapshot into a new chef, compiles without sending; or the model answers
(text, parallel calls, a search, a memory write, an unknown tool; signed thinking where
the target has it). Before each request the host makes the history end with a turn the
model can answer, as an agent loop would (the open calls answered, else a user message).

Every request goes through the official SDK client of its target to the target's fake,
which enforces the provider's rules (roles in order, system messages only where the
model takes them and where they may sit, pairing, and on the prefix-check models the
preserved-thinking prefix check); a refusal fails the test. A request that reports no
edit, with no cut or rewrite of the history since the last one, extends it.

Anthropic sessions switch among models with and without mid-conversation system
messages, tool changes and the prefix check (`ANTHROPIC_MODELS`); Responses between one
with tool changes and one without.

Sessions per target: 1,000 under ``CONTEXTCHEF_FULL_TESTS=1``, 10 by default
(tests/conftest.py).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from conftest import examples
from contextchef import (
    ContextChef,
    InMemoryStore,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    tool_results,
    user,
)
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

HX = httpx_for(anthropic)
EXAMPLES = examples(full=1_000, default=10)

ANTHROPIC_MODELS = (
    "claude-opus-5-5",  # prefix check, system messages, tool changes
    "claude-sonnet-5-5",  # prefix check, system messages, no tool changes
    "claude-haiku-5-5",  # prefix check, no system messages
    "claude-opus-4-8",  # system messages and tool changes, no prefix check
    "claude-sonnet-5",  # none of them
)
TARGETS: dict[str, tuple[type[FakeProvider], tuple[str, ...]]] = {
    "anthropic": (FakeAnthropic, ANTHROPIC_MODELS),
    "openai": (FakeOpenAIChat, ("gpt-x",)),
    "responses": (FakeResponses, ("gpt-5.4", "gpt-x")),
    "gemini": (FakeGemini, ("gemini-x",)),
    "gemini-interactions": (FakeGeminiInteractions, ("gemini-4-argon",)),
}
STRATEGIES = ("client", "auto", "flat")
THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}


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


def write_file(path: str, text: str) -> str:
    """Write a file.

    Args:
        path: The file.
        text: What to write.
    """
    return f"wrote {path}"


def lint(path: str) -> str:
    """Lint a file (registered at run time).

    Args:
        path: The file.
    """
    return f"{path}: clean"


HANDLERS = {"read_file": read_file, "grep": grep, "write_file": write_file}


class Senders:
    """The official SDK client of each target, all routed to the fake of the session."""

    def __init__(self) -> None:
        self.fake: FakeProvider | None = None
        http = HX.Client(transport=HX.MockTransport(self._route))
        self.anthropic = anthropic.Anthropic(api_key="x", max_retries=0, http_client=http)
        self.openai = openai.OpenAI(api_key="x", max_retries=0, http_client=http)
        options = genai_types.HttpOptions(httpx_client=http)
        self.gemini = genai.Client(api_key="x", http_options=options)
        self.http = http

    def _route(self, request: Any) -> Any:
        assert self.fake is not None
        return self.fake(request)

    def send(self, target: str, fake: FakeProvider, request: Any) -> Any:
        """`request` sent to `fake` through the target's SDK (a refusal raises)."""
        self.fake = fake
        payload = request.payload
        if target == "anthropic":
            return self.anthropic.messages.create(**payload, extra_headers=request.headers)
        if target == "openai":
            return self.openai.chat.completions.create(**payload)
        if target == "responses":
            return self.openai.responses.create(**payload)
        if target == "gemini-interactions":
            return self.gemini.interactions.create(**payload)
        return self.gemini.models.generate_content(**payload)


SENT: Counter[str] = Counter()
"""Sessions and requests sent per target, printed at the end of the module (``-s``)."""


@pytest.fixture(scope="module")
def senders() -> Iterator[Senders]:
    made = Senders()
    yield made
    made.http.close()
    print("\ncut fuzz:", dict(sorted(SENT.items())))


calls = st.lists(
    st.sampled_from(
        [
            ("read_file", {"path": "a.py"}),
            ("grep", {"pattern": "TODO"}),
            ("write_file", {"path": "b.py", "text": "x"}),
            ("tool_search", {"query": "write a file"}),
            ("create_memory", {"key": "k", "value": "v"}),
            ("nope", {}),  # unknown tool: answered with an error
        ]
    ),
    min_size=1,
    max_size=3,
)
turns = st.one_of(
    st.builds(lambda c, r: tool_calls(*c, reasoning=r), calls, st.sampled_from([None, "plan"])),
    st.builds(lambda r: text("done", reasoning=r), st.sampled_from([None, "why"])),
)
HOST = (
    "cut",
    "cut",
    "undo",
    "undo",
    "trim_front",
    "user",
    "state",
    "clear_state",
    "announce_auto",
    "announce_system",
    "announce_tail",
    "retract",
    "memory",
    "mode",
    "no_mode",
    "block",
    "unblock",
    "runtime_tool",
    "switch_model",
    "switch_strategy",
    "system_prompt",
    "thinking",
    "compact",
    "clear_results",
    "snapshot",
    "recompile",
)
REWRITES = frozenset({"cut", "undo", "trim_front", "compact", "clear_results"})
"""Host steps that replace the history (the others append or change state)."""
steps = st.one_of(
    st.tuples(st.just("send"), turns, st.integers(0, 10**6)),
    st.tuples(st.sampled_from(HOST), st.none(), st.integers(0, 10**6)),
)
sessions = st.tuples(
    st.sampled_from(STRATEGIES),
    st.sampled_from([True, False]),  # thinking on (Anthropic)
    st.lists(steps, min_size=4, max_size=24),
)


def is_prompt(message: Message) -> bool:
    """A user message with words of its own (not only tool results)."""
    return message.role == "user" and any(isinstance(p, TextPart) for p in message.parts)


def new_chef() -> ContextChef:
    chef = ContextChef(memory=InMemoryStore(), defer=["^write_file$"], modes={"ro": ["^read_*"]})
    chef.register_tools([read_file, grep, write_file], handlers=HANDLERS)
    chef.set_system_prompt("You are careful.")
    return chef


@dataclass
class CutSession:
    """One session of steps (see the module docstring)."""

    target: str
    strategy: str
    thinking: bool
    senders: Senders
    chef: ContextChef = field(default_factory=new_chef)
    model: str = ""
    sent: str = ""
    """The messages of the last request sent (canonical JSON)."""
    rewritten: bool = False
    """The history was cut or rewritten since that request."""

    def __post_init__(self) -> None:
        self.fake = TARGETS[self.target][0]()
        self.fake.refuse_unrevealed = False  # the model's stray calls are part of the fuzz
        self.model = TARGETS[self.target][1][0]
        self.chef.set_history([user("Start.")])

    def run(self, drawn: list[tuple[str, Turn | None, int]]) -> None:
        for n, (kind, turn, number) in enumerate(drawn):
            if turn is not None:
                self.send(turn, n)
            else:
                self.host(kind, number, n)
        self.send(text("end"), len(drawn))

    def host(self, kind: str, number: int, n: int) -> None:
        chef = self.chef
        self.rewritten = self.rewritten or kind in REWRITES
        if kind == "cut":  # back to any earlier point, even the start
            chef.set_history(chef.history[: number % (len(chef.history) + 1)])
        elif kind == "undo":  # back to the end of a user turn: its answer and all after go
            ends = [i + 1 for i, m in enumerate(chef.history) if m.role == "user"] or [0]
            chef.set_history(chef.history[: ends[number % len(ends)]])
        elif kind == "trim_front":  # the oldest turns dropped, from a user's words on
            starts = [i for i, m in enumerate(chef.history) if is_prompt(m)] or [0]
            chef.set_history(chef.history[starts[number % len(starts)] :])
        elif kind == "user":
            chef.append(user(f"Also this {n}."))
        elif kind == "state":
            chef.set_dynamic_state(State(step=n))
        elif kind == "clear_state":
            chef.set_dynamic_state(None)
        elif kind.startswith("announce_"):
            channel = {"auto": "auto", "system": "system", "tail": "user_tail"}[kind[9:]]
            chef.announce(kind, f"note {n}", channel=channel)  # type: ignore[arg-type]
        elif kind == "retract":
            for a in chef.get_announcements()[:1]:
                chef.retract_announcement(a.id)
        elif kind == "memory":
            call = {"id": f"m{n}", "name": "create_memory", "arguments": {"key": f"k{n}"}}
            chef.execute({**call, "arguments": {"key": f"k{n}", "value": "x"}})
        elif kind in ("mode", "no_mode"):
            chef.set_mode("ro" if kind == "mode" else None)
        elif kind in ("block", "unblock"):
            chef.set_blocked_tools(["grep"] if kind == "block" else [])
        elif kind == "runtime_tool":
            if "lint" not in {t.name for t in chef.tools}:
                chef.register_runtime_tool(lint, handler=lint)
        elif kind == "switch_model":
            models = TARGETS[self.target][1]
            self.model = models[number % len(models)]
        elif kind == "switch_strategy":
            self.strategy = STRATEGIES[number % len(STRATEGIES)]
        elif kind == "system_prompt":
            chef.set_system_prompt(f"You are careful ({number % 2}).")
        elif kind == "thinking":
            self.thinking = not self.thinking
        elif kind == "compact" and len(chef.history) > 2:
            chef.compact(lambda _: "Summary: earlier work.", keep_recent_turns=1 + number % 2)
        elif kind == "clear_results":
            chef.clear_tool_results(keep_recent=number % 2)
        elif kind == "snapshot":
            other = new_chef()
            if "lint" in {t.name for t in chef.tools}:
                other.register_runtime_tool(lint, handler=lint)
            other.restore(json.loads(json.dumps(chef.snapshot())), allow_unsigned=True)
            self.chef = other
        elif kind == "recompile":
            self.ready()
            self.compile()  # compiled, never sent

    def ready(self) -> None:
        """End the history with a turn the model can answer, as an agent loop would."""
        chef = self.chef
        if not chef.history:
            chef.append(user("Start again."))
        last = chef.history[-1]
        if last.role == "user":
            return
        open_calls = [p for p in last.parts if isinstance(p, ToolCall)]
        if open_calls:
            chef.append(
                tool_results(
                    [ToolResult(call_id=c.id, name=c.name, content="done") for c in open_calls]
                )
            )
        else:
            chef.append(user("Go on."))

    def compile(self) -> Any:
        extra = THINKING if self.thinking and self.target == "anthropic" else {}
        return self.chef.compile(self.target, model=self.model, strategy=self.strategy, extra=extra)

    def send(self, turn: Turn, n: int) -> None:
        self.ready()
        request = self.compile()
        self.fake.script(turn)
        reply = self.senders.send(self.target, self.fake, request)
        SENT[f"{self.target} requests"] += 1
        assert self.fake.violations == (), (self.target, self.model, self.fake.violations)
        messages = request.segments["messages"]
        if not request.edits and not self.rewritten:  # append-only: extends what was sent
            assert messages.startswith(self.sent[:-1]), (self.target, self.model)
        self.sent, self.rewritten = messages, False
        found = self.chef.ingest(reply)
        if found:
            self.chef.append(tool_results([self.chef.execute(c).result for c in found]))
        else:
            self.chef.append(user(f"Next {n}."))


@pytest.mark.parametrize("target", sorted(TARGETS))
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(session=sessions)
def test_random_cuts_are_never_refused(
    target: str, session: tuple[str, bool, list[tuple[str, Turn | None, int]]], senders: Senders
) -> None:
    strategy, thinking, drawn = session
    SENT[f"{target} sessions"] += 1
    CutSession(target, strategy, thinking, senders).run(drawn)


# -- the two shapes the fuzz found, one deterministic reproducer each ------------------------


def _opus_session() -> tuple[ContextChef, FakeAnthropic, Any]:
    chef = new_chef()
    chef.set_history([user("Start.")])
    fake = FakeAnthropic()
    client = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake.http_client(HX))
    return chef, fake, client


def _send(chef: ContextChef, fake: FakeAnthropic, client: Any, answer: str) -> Any:
    request = chef.compile("anthropic", model="claude-opus-5-5")
    fake.script(text(answer))
    chef.ingest(client.messages.create(**request.payload, extra_headers=request.headers))
    return request


def _roles(request: Any) -> list[str]:
    return [m["role"] for m in request.payload["messages"]]


def test_an_update_after_a_cut_joins_the_user_turn_before_a_system_entry() -> None:
    """``claude-opus-5-5``: the request the cut goes back to ended with a system entry.

    The second request stated a ``system``-channel announcement as a system entry after
    the user turn ``Next.``; after a third request, the host cuts the history back to
    ``Next.`` and sets dynamic state. The update once became a user message after the
    system entry (a user turn after a user turn, and a system message before a user
    message: both a 400). Expected: ``Next.`` sent again with the update joined to it,
    then the system entry; the cut reported as a ``history`` edit.
    """
    chef, fake, client = _opus_session()
    _send(chef, fake, client, "One.")
    chef.append(user("Next."))
    chef.announce("ro", "Read-only now.", channel="system")
    second = _send(chef, fake, client, "Two.")
    assert _roles(second) == ["user", "assistant", "user", "system"]
    chef.append(user("More."))
    _send(chef, fake, client, "Three.")
    chef.set_dynamic_state(State(step=1))
    chef.set_history(chef.history[:3])  # back to "Next."
    cut = _send(chef, fake, client, "Four.")
    client.close()
    assert fake.violations == ()
    assert _roles(cut) == ["user", "assistant", "user", "system"]
    joined = cut.payload["messages"][2]["content"]
    assert joined[0]["text"] == "Next." and "<dynamic_state>" in joined[-1]["text"]
    assert [(e.kind, e.history_index) for e in cut.edits] == [("history", 3)]


def test_an_update_after_cutting_an_unsent_request_joins_the_answered_user_turn() -> None:
    """``claude-opus-5-5``: the host compiles, does not send, cuts back to ``Start.``.

    Cutting what only the unsent request carried is no edit, and the base is the first
    answered request's; with memories written since, their ``read_memories`` exchange
    once came after a ``(memories follow)`` user message right after ``Start.``.
    Expected: ``Start.`` sent again, the exchange after it, as a retry of the first
    request (the host cut its answer: no edit).
    """
    chef, fake, client = _opus_session()
    _send(chef, fake, client, "One.")
    chef.append(user("Next."))
    chef.compile("anthropic", model="claude-opus-5-5")  # never sent
    chef.execute({"id": "m1", "name": "create_memory", "arguments": {"key": "k", "value": "v"}})
    chef.set_history(chef.history[:1])
    request = _send(chef, fake, client, "Two.")
    client.close()
    assert fake.violations == ()
    assert _roles(request) == ["user", "assistant", "user"]
    assert request.payload["messages"][0]["content"][0]["text"] == "Start."
    assert request.edits == ()
