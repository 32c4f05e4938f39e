"""A tool whose wire name lost its own name's letters shows that name (break-it 37 #7).

ACEBench-zh's Chinese-named tools went as ``ace______________ca4e722c``: every CJK letter
became ``_`` and the real name was nowhere the model reads. As a renamed property's
description leads with its real key (`tools._property_keys`), such a tool's description
leads with its own name, its directory line is followed by it, and its ``tool_search``
entry names it; a tool whose wire name ends with its own name is left as it was.
"""

from __future__ import annotations

import anthropic

from conftest import shared_data
from contextchef import ContextChef, DeferredConfig, ToolCall, load_catalog, user
from contextchef.testing import FakeAnthropic, httpx_for, text

NAME = "办公自动化配置推荐工具"


def _chef(default_defer: bool) -> ContextChef:
    path = shared_data() / "retrieval" / "acebench_zh.catalog.json"
    chef = ContextChef(default_defer=default_defer, deferred=DeferredConfig(directory_chars=10**7))
    chef.register_catalog(load_catalog(path, server="ace", repair_schemas=True))
    chef.set_history([user("推荐办公自动化配置")])
    return chef


def test_the_description_leads_with_the_own_name() -> None:
    chef = _chef(default_defer=False)
    request = chef.compile("anthropic", model="claude-sonnet-4-5", strategy="flat")
    by_name = {t["name"]: t for t in request.payload["tools"]}
    wire = chef.view.wire_names[("ace", NAME)]
    assert wire.startswith("ace__") and NAME not in wire
    assert by_name[wire]["description"].startswith(f"[ace] {NAME}: ")
    for (_, own), w in chef.view.wire_names.items():  # one that keeps its name: as before
        if w.endswith(own) and w in by_name:
            tool = next(t for t in chef.registry.tools if t.name == own)
            assert by_name[w]["description"] == f"[ace] {tool.description}".rstrip()
            break
    else:
        raise AssertionError("no tool kept its name")
    fake = FakeAnthropic().script(text("好的"))
    client = anthropic.Anthropic(
        api_key="t", max_retries=0, http_client=fake.http_client(httpx_for(anthropic))
    )
    client.messages.create(**request.payload)
    assert fake.violations == ()


def test_the_directory_and_tool_search_name_it() -> None:
    chef = _chef(default_defer=True)
    wire = chef.view.wire_names[("ace", NAME)]
    assert f"\n  {wire} ({NAME})\n" in chef.view.directory
    found = chef.execute(
        ToolCall(id="q", name="tool_search", arguments={"queries": [NAME]})
    ).result.content
    assert f"{wire}  [server: ace]  [name: {NAME}]" in found
