"""README's "## Quick start" runs as written, against the `contextchef.testing` fakes.

Every ```python block of the section starts with a ``# quick start: <label>`` line; the
test runs them through the official SDK clients, whose constructors are pointed at a fake
(``anthropic.Anthropic()`` becomes a client over `FakeAnthropic`, and so on), so the
snippets keep the exact lines a user copies. Each loop block is at most 10 lines. The
scripted model calls ``tool_search`` and ``read_text`` in one turn, then answers; the
fake must accept every request (tool-call pairing included).
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from contextchef import ContextChef, ToolCall, ToolResult
from contextchef.testing import (
    FakeAnthropic,
    FakeGemini,
    FakeGeminiInteractions,
    FakeOpenAIChat,
    FakeProvider,
    FakeResponses,
    httpx_for,
    text,
    tool_calls,
)

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
LABEL = re.compile(r"# quick start: (.+)")
HX = httpx_for(anthropic)
LOOPS = {
    "Anthropic Messages": FakeAnthropic,
    "OpenAI Chat Completions": FakeOpenAIChat,
    "OpenAI Responses": FakeResponses,
    "Gemini": FakeGemini,
    "Gemini Interactions": FakeGeminiInteractions,
}


def blocks() -> dict[str, tuple[int, str]]:
    """{label: (line of the opening fence, code)} of the Quick start section's blocks."""
    text_ = README.read_text("utf-8")
    start = text_.index("\n## Quick start\n")
    end = text_.index("\n## ", start + 1)
    found: dict[str, tuple[int, str]] = {}
    for match in FENCE.finditer(text_, start, end):
        label = LABEL.match(match.group(1))
        assert label, f"README.md:{text_.count(chr(10), 0, match.start()) + 1}: no label"
        found[label.group(1)] = (text_.count("\n", 0, match.start()) + 1, match.group(1))
    return found


BLOCKS = blocks()


def run_block(label: str, namespace: dict[str, Any]) -> None:
    line, code = BLOCKS[label]
    source = "\n" * line + code  # tracebacks point at README.md's own lines
    exec(compile(source, "README.md", "exec"), namespace)


def session(monkeypatch: pytest.MonkeyPatch, catalogs_dir: Path) -> dict[str, Any]:
    """The namespace after the session block (catalog read from the shared data)."""
    monkeypatch.chdir(REPO)  # the block's read_text reads README.md from here
    line, code = BLOCKS["the session"]
    code = code.replace("../shared/data/catalogs/", f"{catalogs_dir.as_posix()}/")
    namespace: dict[str, Any] = {"__name__": "readme_quick_start"}
    exec(compile("\n" * line + code, "README.md", "exec"), namespace)
    assert isinstance(namespace["chef"], ContextChef)
    return namespace


def point_sdks_at(fake: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the SDK constructors the README calls build clients over `fake`."""

    def bound(factory: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
        return functools.partial(factory, **kwargs)

    sync, asyn = fake.http_client(HX), fake.async_http_client(HX)
    monkeypatch.setattr(
        anthropic,
        "Anthropic",
        bound(anthropic.Anthropic, api_key="x", max_retries=0, http_client=sync),
    )
    monkeypatch.setattr(
        anthropic,
        "AsyncAnthropic",
        bound(anthropic.AsyncAnthropic, api_key="x", max_retries=0, http_client=asyn),
    )
    monkeypatch.setattr(
        openai, "OpenAI", bound(openai.OpenAI, api_key="x", max_retries=0, http_client=sync)
    )
    options = genai_types.HttpOptions(httpx_client=sync)
    monkeypatch.setattr(genai, "Client", bound(genai.Client, api_key="x", http_options=options))


CREATE_ISSUE = "issue-tracker__create_issue"  # the demo catalog's issue-tracker server
SCRIPT = (
    tool_calls(
        ("tool_search", {"queries": ["create issue"]}), ("read_text", {"path": "README.md"})
    ),
    text("Opened it."),
)


def answered(chef: ContextChef) -> list[ToolResult]:
    return [r for m in chef.history for r in m.tool_results]


def test_every_provider_has_a_loop_of_at_most_ten_lines() -> None:
    assert {"the session", *LOOPS, "async", "fallback (after the Anthropic loop above)"} <= set(
        BLOCKS
    )
    for label in LOOPS:
        code = BLOCKS[label][1]
        assert len(code.strip().splitlines()) <= 10, label
        assert "chef.run_tools(chef.ingest(" in code and "check_tool_call" not in code


@pytest.mark.parametrize("label", list(LOOPS))
def test_the_quick_start_loop_runs(
    label: str, monkeypatch: pytest.MonkeyPatch, catalogs_dir: Path
) -> None:
    namespace = session(monkeypatch, catalogs_dir)
    fake = LOOPS[label]().script(*SCRIPT)
    point_sdks_at(fake, monkeypatch)
    run_block(label, namespace)
    chef: ContextChef = namespace["chef"]
    assert fake.violations == () and len(fake.requests) == 2
    search, read = answered(chef)
    assert not search.is_error and "issue-tracker__create_issue" in search.content
    assert read.content == README.read_text("utf-8")[: len(read.content)] and read.content
    assert chef.history[-1].role == "assistant"  # the loop stopped at the answer


def test_the_async_quick_start_loop_runs(
    monkeypatch: pytest.MonkeyPatch, catalogs_dir: Path
) -> None:
    namespace = session(monkeypatch, catalogs_dir)
    fake = FakeAnthropic().script(*SCRIPT)
    point_sdks_at(fake, monkeypatch)
    run_block("async", namespace)
    chef: ContextChef = namespace["chef"]
    asyncio.run(namespace["agent_loop"](chef))
    assert fake.violations == () and len(fake.requests) == 2
    assert [r.is_error for r in answered(chef)] == [False, False]


def test_the_fallback_block_runs_tools_without_a_handler(
    monkeypatch: pytest.MonkeyPatch, catalogs_dir: Path
) -> None:
    namespace = session(monkeypatch, catalogs_dir)
    issue = {"project": "PAY", "title": "Flaky test"}
    fake = FakeAnthropic().script(
        *SCRIPT,
        tool_calls(("defer_execute", {"tool_name": CREATE_ISSUE, "params": issue})),
        text("Done."),
    )
    point_sdks_at(fake, monkeypatch)
    run_block("Anthropic Messages", namespace)
    run_block("fallback (after the Anthropic loop above)", namespace)
    chef: ContextChef = namespace["chef"]
    last = answered(chef)[-1]
    wired = "issue-tracker/create_issue is not wired up yet"
    assert (last.content, last.is_error) == (wired, False)
    # without the fallback the model is told the tool cannot run here
    (refused,) = chef.run_tools(
        [
            ToolCall(
                id="again",
                name="defer_execute",
                arguments={"tool_name": CREATE_ISSUE, "params": issue},
            )
        ],
        append=False,
    )
    assert refused.is_error and "cannot be run here" in refused.content
    run_block("Anthropic Messages", namespace)  # the loop goes on: the answer, accepted
    assert fake.violations == () and len(fake.requests) == 4
