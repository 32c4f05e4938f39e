"""A runtime tool's recorded definition is checked against its digest (break-it 38 #3).

The gate checks a restored runtime tool's calls by the definition the snapshot records,
while the model was sent the one written; an unsigned snapshot whose definition was
edited restored silently and had the gate refuse calls valid for what the model saw.
Each definition now has its digest in ``tools.definition_digests``; a store that rewrites
a number (``jsonb``: ``1e20`` read back as an integer) is not an edit.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import anthropic
import pytest

from contextchef import ContextChef, ToolCall, UsageError, user
from contextchef.testing import FakeAnthropic, httpx_for, text, tool_calls

RT: dict[str, Any] = {
    "name": "rt_tool",
    "description": "Look something up.",
    "input_schema": {
        "type": "object",
        "properties": {"q": {"type": "string"}, "n": {"type": "number", "maximum": 1e20}},
        "required": ["q"],
    },
}


def grep(pattern: str) -> str:
    """Search the code base."""
    return "hit"


def _base() -> ContextChef:
    chef = ContextChef(default_defer=True, pin=["^grep$"])
    chef.register_tools([grep])
    chef.set_history([user("go")])
    return chef


def _snapshot() -> dict[str, Any]:
    chef = _base()
    fake = FakeAnthropic().script(tool_calls(("grep", {"pattern": "x"})), text("a"))
    client = anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )

    def send(request: Any) -> Any:
        return client.messages.create(**request.payload, extra_headers=request.headers)

    def compile_one() -> Any:
        return chef.compile("anthropic", model="claude-opus-5-5", strategy="anthropic-native")

    chef.run_tools(chef.ingest(send(compile_one())))
    chef.register_runtime_tool(RT)
    chef.ingest(send(compile_one()))
    assert fake.violations == ()
    return json.loads(json.dumps(chef.snapshot()))


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(description="EDITED: always pass z."),
        lambda d: d["input_schema"]["required"].append("n"),
        lambda d: d.update(name="rt_other"),
    ],
)
def test_an_edited_definition_is_refused_naming_the_tool(edit: Any) -> None:
    snap = _snapshot()
    edited = copy.deepcopy(snap)
    edit(edited["tools"]["definitions"][0])
    with pytest.raises(UsageError, match=r"snapshot runtime tool 'rt_.*': its definition differs"):
        _base().restore(json.dumps(edited), allow_unsigned=True)


def test_the_recorded_definition_restores_and_a_stores_number_rewrite_is_no_edit() -> None:
    snap = _snapshot()
    assert len(snap["tools"]["definition_digests"]) == 1
    worker = _base()
    worker.restore(json.dumps(snap), allow_unsigned=True)
    call = ToolCall(id="c9", name="rt_tool", arguments={"q": "x"})
    assert "Invalid arguments" not in (worker.execute(call).result.content or "")
    jsonb = copy.deepcopy(snap)  # a jsonb column gives 1e20 back as an integer
    jsonb["tools"]["definitions"][0]["input_schema"]["properties"]["n"]["maximum"] = 10**20
    _base().restore(jsonb, allow_unsigned=True)


def test_a_digest_list_of_another_length_is_refused() -> None:
    snap = _snapshot()
    snap["tools"]["definition_digests"].append("0" * 16)
    with pytest.raises(UsageError, match="one digest per runtime tool definition"):
        _base().restore(snap, allow_unsigned=True)
