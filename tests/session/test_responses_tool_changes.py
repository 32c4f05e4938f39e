"""Mid-conversation tool changes on OpenAI Responses: ``additional_tools`` items.

Under a native strategy on a first-party model, the ``tools`` array first sent stays
byte-identical; a tool the host, a skill or a mode makes callable is defined in an
``additional_tools`` input item (role ``developer``) appended at the end, and a tool a
mode withdraws is named in a developer message and refused by the gate (Responses has
no withdrawal item). Research note rules 22, 23, 25; multi-turn through the official SDK
against `FakeResponses`.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from contextchef import ContextChef, Denied, ToolCall, UsageError, assistant, tool_results, user
from contextchef.session._request import CompiledRequest
from contextchef.testing import FakeResponses, httpx_for, text, tool_calls
from contextchef.tools._catalogs import load_catalog
from sdk_check import sdk_problems

MODEL = "gpt-5.4"
GONE = "These tools are no longer available; do not call them: "


def _answer(**args: Any) -> str:
    return "ok: " + json.dumps(args, sort_keys=True)


def _session(catalogs: Path) -> ContextChef:
    modes = {"read_only": ["filesystem__read_*", "filesystem__list_*", "github__get_*"]}
    chef = ContextChef(defer=["github__*"], modes=modes)
    for name in ("mcp-filesystem", "github"):
        tools = load_catalog(catalogs / f"{name}.json").tools
        chef.register_tools(tools, handlers={t.name: _answer for t in tools})
    chef.set_system_prompt("You are a careful coding agent.")
    chef.set_history([user("Triage the open issues.")])
    return chef


def _added(payload: dict[str, Any]) -> dict[str, str | None]:
    """Function name -> the namespace an additional_tools item defines it in."""
    out: dict[str, str | None] = {}
    for item in payload["input"]:
        if item.get("type") != "additional_tools":
            continue
        assert item["role"] == "developer"
        for tool in item["tools"]:
            if tool["type"] == "namespace":
                out.update({f["name"]: tool["name"] for f in tool["tools"]})
            else:
                out[tool["name"]] = None
    return out


def _stable(requests: list[CompiledRequest]) -> None:
    for before, after in itertools.pairwise(requests):
        assert after.segments["tools"] == before.segments["tools"]
        assert after.segments["system"] == before.segments["system"]
        assert after.segments["messages"].startswith(before.segments["messages"][:-1])
        assert after.edits == ()


@pytest.mark.parametrize("strategy", ["openai-native", "openai-native-client"])
def test_a_host_reveal_is_an_additional_tools_item_and_the_call_passes(
    catalogs_dir: Path, strategy: str
) -> None:
    chef = _session(catalogs_dir)
    fake = FakeResponses().script(
        text("Looking."),
        tool_calls(("github__create_issue", {"owner": "acme", "repo": "app", "title": "Crash"})),
        text("Filed."),
    )
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    requests = [chef.compile("responses", model=MODEL, strategy=strategy)]
    chef.ingest(client.responses.create(**requests[0].payload))
    chef.reveal_tools("github__create_issue")
    chef.append(user("File it."))
    requests.append(chef.compile("responses", model=MODEL, strategy=strategy))
    (call,) = chef.ingest(client.responses.create(**requests[1].payload))
    chef.append(tool_results([chef.execute(call).result]))
    requests.append(chef.compile("responses", model=MODEL, strategy=strategy))
    client.responses.create(**requests[2].payload)
    client.close()
    assert fake.violations == ()
    _stable(requests)
    declared = {
        f["name"]: t["name"]
        for t in requests[0].payload["tools"]
        if t["type"] == "namespace"
        for f in t["tools"]
    }
    assert _added(requests[1].payload) == {"github__create_issue": declared["github__create_issue"]}
    (item,) = [i for i in requests[1].payload["input"] if i.get("type") == "additional_tools"]
    assert "defer_loading" not in json.dumps(item)  # offered from here on
    sent = fake.requests[2].body["input"]
    function_call = next(i for i in sent if i["type"] == "function_call")
    assert function_call["namespace"] == declared["github__create_issue"]
    assert next(i for i in sent if i["type"] == "function_call_output")["output"].startswith("ok")
    assert all(sdk_problems("responses", r.payload) == [] for r in requests)


def test_a_mode_is_stated_in_words_and_its_end_defines_the_tools_again(
    catalogs_dir: Path,
) -> None:
    chef = _session(catalogs_dir)
    requests = [chef.compile("responses", model=MODEL, strategy="openai-native")]
    chef.append(assistant("On it."))  # answered: what was sent stays sent
    chef.append(user("Now only read."))
    chef.set_mode("read_only")
    requests.append(chef.compile("responses", model=MODEL, strategy="openai-native"))
    chef.append(assistant("Reading only."))
    note = requests[1].payload["input"][-1]
    assert note["role"] == "developer" and note["content"].startswith(GONE)
    withdrawn = note["content"][len(GONE) : -1].split(", ")
    assert "filesystem__write_file" in withdrawn and "github__create_issue" in withdrawn
    assert "filesystem__read_file" not in withdrawn
    assert withdrawn == sorted(withdrawn)
    refused = chef.check_tool_call(
        ToolCall(id="c1", name="filesystem__write_file", arguments='{"path":"a","content":"b"}')
    )
    assert isinstance(refused, Denied)
    chef.append(user("Back to work."))
    chef.set_mode(None)
    requests.append(chef.compile("responses", model=MODEL, strategy="openai-native"))
    again = _added(requests[2].payload)
    assert set(again) == set(withdrawn)
    assert again["filesystem__write_file"] is None  # declared flat, defined flat
    _stable(requests)
    assert all(sdk_problems("responses", r.payload) == [] for r in requests)


def test_a_runtime_tool_is_defined_without_editing_tools(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    fake = FakeResponses().script(
        text("Ready."),
        tool_calls(("deploy_preview", {"branch": "main"})),
        text("Deployed."),
    )
    client = openai.OpenAI(
        api_key="x", max_retries=0, http_client=fake.http_client(httpx_for(openai))
    )
    requests = [chef.compile("responses", model=MODEL, strategy="openai-native")]
    chef.ingest(client.responses.create(**requests[0].payload))

    def deploy_preview(branch: str) -> str:
        """Deploy a preview of a branch.

        Args:
            branch: The branch to deploy.
        """
        return f"deployed {branch}"

    chef.register_runtime_tool(deploy_preview)
    chef.append(user("Deploy a preview."))
    requests.append(chef.compile("responses", model=MODEL, strategy="openai-native"))
    (call,) = chef.ingest(client.responses.create(**requests[1].payload))
    chef.append(tool_results([chef.execute(call).result]))
    requests.append(chef.compile("responses", model=MODEL, strategy="openai-native"))
    client.responses.create(**requests[2].payload)
    client.close()
    assert fake.violations == ()
    _stable(requests)
    assert _added(requests[1].payload) == {"deploy_preview": None}
    sent = fake.requests[2].body["input"]
    assert next(i for i in sent if i["type"] == "function_call_output")["output"] == (
        "deployed main"
    )


def test_a_compatible_endpoint_gets_a_tools_edit_not_an_item(catalogs_dir: Path) -> None:
    """Rule 25: ``additional_tools`` only on first-party Responses (known OpenAI names)."""
    chef = _session(catalogs_dir)
    chef.compile("responses", model="acme-responses-1", strategy="openai-native")
    chef.append(assistant("On it."))
    chef.append(user("Now only read."))
    chef.set_mode("read_only")
    second = chef.compile("responses", model="acme-responses-1", strategy="openai-native")
    assert "additional_tools" not in json.dumps(second.payload)
    assert [e.kind for e in second.edits] == ["tools"]


def test_the_fake_refuses_a_malformed_additional_tools_item() -> None:
    """Rule 25, enforced by `FakeResponses`: role developer, real definitions only."""
    from contextchef.testing import RESPONSES_NATIVE_RULES

    def problems(item: dict[str, Any]) -> list[str]:
        body = {"model": MODEL, "input": [{"role": "user", "content": "hi"}, item]}
        return [p for rule in RESPONSES_NATIVE_RULES for p in rule(body, ())]

    good = {
        "type": "additional_tools",
        "role": "developer",
        "tools": [{"type": "function", "name": "f", "parameters": {}, "strict": False}],
    }
    assert problems(good) == []
    assert problems({**good, "role": "user"}) == [
        "input.1.role: an additional_tools item takes role 'developer' only"
    ]
    assert problems({**good, "tools": ["f"]}) == [
        "input.1.tools.0: not a tool definition (type None)"
    ]
    empty_space = {"type": "namespace", "name": "crm", "description": "d", "tools": []}
    assert problems({**good, "tools": [empty_space]}) == [
        "input.1.tools.0: a namespace needs a name, a description and tools"
    ]


def test_a_snapshot_with_a_corrupt_defined_tool_is_refused_whole(catalogs_dir: Path) -> None:
    chef = _session(catalogs_dir)
    chef.compile("responses", model=MODEL, strategy="openai-native")
    chef.append(assistant("On it."))
    chef.reveal_tools("github__create_issue")
    chef.append(user("File it."))
    chef.compile("responses", model=MODEL, strategy="openai-native")
    snap = json.loads(json.dumps(chef.snapshot()))
    marks = snap["ledgers"]["responses"]["marks"]
    defined = next(
        m["tools"]["defined"]
        for m in [*marks, snap["ledgers"]["responses"]["pending"]]
        if m and m.get("tools", {}).get("defined")
    )
    defined["github__create_issue"] = "{not json"
    other = _session(catalogs_dir)
    before = other.snapshot()
    with pytest.raises(UsageError, match="JSON object of that tool's definition"):
        other.restore(snap, allow_unsigned=True)
    assert other.snapshot() == before
