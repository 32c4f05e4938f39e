"""A call made on another provider to a tool that a Responses search loaded into a namespace.

Found by a fresh user's fuzz: hosted tool search loaded ``filesystem__search_files`` into
namespace ``filesystem_2`` (a ``tool_search_output`` item, replayed in every later request);
the conversation moved to Anthropic, whose model called the tool; back on Responses the call
went out without a ``namespace`` and the API (the fake) refused that request and every one
after it: "Missing namespace for function_call ... It does not exist in the default
namespace." The call must take the namespace the earlier item loaded it into, whatever
strategy or mode the next request uses, unless the request declares it in the default
namespace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from contextchef import ContextChef, user
from contextchef.testing import (
    FakeAnthropic,
    FakeResponses,
    Ids,
    httpx_for,
    provider_search,
    text,
    tool_calls,
)

TOOL = "filesystem__search_files"


def _function_calls(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in payload["input"] if i.get("type") == "function_call"]


@pytest.mark.parametrize(
    ("strategy", "mode", "namespace"),
    [
        ("client", None, "filesystem_2"),
        ("openai-native", None, "filesystem_2"),
        ("flat", None, None),  # the request declares it in the default namespace
        ("flat", "read", "filesystem_2"),  # a mode hides it: only the loaded namespace has it
    ],
)
def test_a_call_made_elsewhere_takes_the_namespace_a_search_loaded(
    catalogs_dir: Path, strategy: str, mode: str | None, namespace: str | None
) -> None:
    hx = httpx_for(anthropic)
    ids = Ids()
    chef = ContextChef(default_defer=True, modes={"read": ["filesystem__read_*"]})
    chef.register_catalog(catalogs_dir / "mcp-filesystem.json")
    chef.set_history([user("find files")])
    fake_responses = FakeResponses(ids=ids).script(
        provider_search(TOOL, then=text("found")), text("done"), text("still fine")
    )
    oa = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake_responses.http_client(httpx_for(openai))
    )
    fake_anthropic = FakeAnthropic(ids=ids).script(
        tool_calls((TOOL, {"path": "/", "pattern": "*.py"}))
    )
    an = anthropic.Anthropic(api_key="x", max_retries=0, http_client=fake_anthropic.http_client(hx))

    request = chef.compile("responses", model="gpt-5.5", strategy="openai-native")
    chef.ingest(oa.responses.create(**request.payload))
    chef.append(user("now search"))
    request = chef.compile("anthropic", model="claude-opus-5-5", strategy="flat")
    calls = chef.ingest(an.messages.create(**request.payload, extra_headers=request.headers))
    chef.run_tools(calls, fallback=lambda call: "a.py")
    chef.set_mode(mode)
    for turn in range(2):  # the replayed call stays accepted in the request after, too
        request = chef.compile("responses", model="gpt-5.5", strategy=strategy)
        (call,) = _function_calls(request.payload)
        assert call["name"] == TOOL
        assert call.get("namespace") == namespace
        chef.ingest(oa.responses.create(**request.payload))
        chef.append(user(f"and then {turn}"))
    assert fake_responses.violations == ()
