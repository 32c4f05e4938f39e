"""The volatile-value lint sees every text the library puts into the cached prefix.

Break-it round 19 (p22b): namespace and skill descriptions reached the payload's
``tools`` unlinted. Each kind of entry below carries its own per-request value; the lint
must name each one, once, at registration, and every such value in a compiled payload
must be one the lint named.
"""

from __future__ import annotations

import datetime
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_data
from contextchef import ContextChef, Skill, Tool, VolatileValueError, user
from contextchef.providers import TARGETS
from contextchef.tools._catalogs import load_catalog
from contextchef.tools._lint import find_volatile

UUIDS = {
    kind: f"7e07485f-12f9-416b-8b14-{n:012d}"
    for n, kind in enumerate(
        ["tool", "server", "namespace", "skill", "toolkit", "kit_tool", "catalog", "mcp"], 1
    )
}
EPOCH = str(int(datetime.datetime.now(datetime.timezone.utc).timestamp()))


def _tool(name: str, description: str = "Plain.") -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": {"type": "object"}}


def _register_everything(chef: ContextChef, tmp_path: Path) -> None:
    chef.register_tools(
        [_tool("plain"), _tool("stamped", f"Session {UUIDS['tool']}.")],
        server="ops",
        server_description=f"Ops server, boot {UUIDS['server']}.",
    )
    chef.register_namespaces(
        [
            {
                "name": "ns",
                "description": f"Namespace {UUIDS['namespace']} at {EPOCH}",
                "tools": [
                    {"name": "g", "description": "g", "parameters": {"a": {"type": "string"}}}
                ],
            }
        ]
    )
    chef.register_skills(
        [
            Skill(
                name="s1",
                description=f"Skill {UUIDS['skill']}",
                instructions="do",
                tools=("plain",),
            )
        ]
    )
    chef.register_toolkits(
        [
            {
                "name": "kit",
                "description": f"Kit {UUIDS['toolkit']}",
                "tools": [_tool("kit_tool", f"Kit tool {UUIDS['kit_tool']}")],
            }
        ]
    )
    path = tmp_path / "cat.json"
    path.write_text(
        json.dumps(
            {"server": "cat", "description": f"Catalog {UUIDS['catalog']}", "tools": [_tool("c1")]}
        ),
        "utf-8",
    )
    chef.register_catalog(path)
    chef.register_mcp_tools(
        {"tools": [{"name": "m1", "description": "M.", "inputSchema": {"type": "object"}}]},
        server="mcpsrv",
        description=f"MCP server {UUIDS['mcp']}",
    )


def test_warn_names_each_entry_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    chef = ContextChef(default_defer=True, pin=["plain", "stamped"])
    with caplog.at_level(logging.WARNING, logger="contextchef"):
        _register_everything(chef, tmp_path)
        chef.load_toolkit("kit")  # linted when registered: not logged again
    found = {(v.location, v.text) for v in chef.volatile_values}
    assert found == {
        ("tool 'stamped' description", UUIDS["tool"]),
        ("server 'ops' description", UUIDS["server"]),
        ("namespace 'ns' description", UUIDS["namespace"]),
        ("namespace 'ns' description", EPOCH),
        ("skill 's1' description", UUIDS["skill"]),
        ("toolkit 'kit' description", UUIDS["toolkit"]),
        ("tool 'kit_tool' description", UUIDS["kit_tool"]),
        ("server 'cat' description", UUIDS["catalog"]),
        ("server 'mcpsrv' description", UUIDS["mcp"]),
    }
    assert len(chef.volatile_values) == len(found)
    logged = [
        r.getMessage() for r in caplog.records if "changes the cached prefix" in r.getMessage()
    ]
    assert len(logged) == len(found)


@pytest.mark.parametrize("target", TARGETS)
def test_every_value_in_a_payload_is_one_the_lint_named(target: str, tmp_path: Path) -> None:
    chef = ContextChef(default_defer=True, pin=["plain", "stamped"])
    _register_everything(chef, tmp_path)
    chef.set_history([user("hi")])
    payload = chef.compile(target).payload
    text = json.dumps(payload, ensure_ascii=False)
    in_payload = {v for _, _, v in find_volatile(text)}
    assert UUIDS["namespace"] in in_payload and UUIDS["skill"] in in_payload
    assert in_payload <= {v.text for v in chef.volatile_values}


@pytest.mark.parametrize(
    ("step", "location"),
    [
        ("namespace", "namespace 'ns' description"),
        ("skill", "skill 's1' description"),
        ("toolkit", "toolkit 'kit' description"),
        ("kit_tool", "tool 'kit_tool' description"),
        ("catalog", "server 'cat' description"),
        ("mcp", "server 'mcpsrv' description"),
    ],
)
def test_raise_refuses_each_entry_before_it_is_taken(
    step: str, location: str, tmp_path: Path
) -> None:
    chef = ContextChef(volatile_lint="raise")
    chef.register_tools([_tool("plain")])
    stamp = UUIDS[step]
    kit_tool = _tool("kit_tool", f"Kit tool {stamp}" if step == "kit_tool" else "K.")
    catalog = tmp_path / "cat.json"
    catalog.write_text(
        json.dumps({"server": "cat", "description": f"C {stamp}", "tools": [_tool("c1")]}), "utf-8"
    )
    calls = {
        "namespace": lambda: chef.register_namespaces(
            [{"name": "ns", "description": f"N {stamp}", "tools": [_tool("g")]}]
        ),
        "skill": lambda: chef.register_skills(
            [{"name": "s1", "description": f"S {stamp}", "instructions": "i", "tools": ["plain"]}]
        ),
        "toolkit": lambda: chef.register_toolkits(
            [{"name": "kit", "description": f"K {stamp}", "tools": [kit_tool]}]
        ),
        "kit_tool": lambda: chef.register_toolkits(
            [{"name": "kit", "description": "K", "tools": [kit_tool]}]
        ),
        "catalog": lambda: chef.register_catalog(catalog),
        "mcp": lambda: chef.register_mcp_tools(
            {"tools": [{"name": "m1", "description": "M.", "inputSchema": {"type": "object"}}]},
            server="mcpsrv",
            description=f"MCP {stamp}",
        ),
    }
    with pytest.raises(VolatileValueError, match=location) as info:
        calls[step]()
    assert [v.text for v in info.value.values] == [stamp]
    assert [t.name for t in chef.tools] == ["plain"]
    assert chef.namespaces == chef.toolkits == () and chef.skills == ()


def test_a_tool_name_and_a_server_name_are_linted() -> None:
    """Both reach the payload in the tool's wire name."""
    chef = ContextChef(volatile_lint="raise")
    name = "session_7e07485f-12f9-416b-8b14-26260799b51f"
    with pytest.raises(VolatileValueError, match=f"tool '{name}' name"):
        chef.register_tools([Tool(name=name, description="x", input_schema={"type": "object"})])
    server = "mcp-7e07485f-12f9-416b-8b14-26260799b51f"
    with pytest.raises(VolatileValueError, match=f"server '{server}' name"):
        chef.register_tools([_tool("x")], server=server)
    assert chef.tools == ()
    warn = ContextChef()
    warn.register_tools([_tool("x"), _tool("y")], server=server, server_description="Ops.")
    assert [v.location for v in warn.volatile_values] == [f"server '{server}' name"]


def test_the_real_livemcpbench_catalog_registers_under_raise() -> None:
    """getBaziDetail's ``例如…`2000-5-5 12:00:00``` is an example, not a clock reading."""
    catalog = load_catalog(
        shared_data() / "retrieval" / "livemcpbench.catalog.json", repair_schemas=True
    )
    chef = ContextChef(volatile_lint="raise")
    chef.register_catalog(catalog)
    assert chef.volatile_values == ()
    assert any(t.name == "getBaziDetail" for t in chef.tools)


def test_a_shared_catalogs_servers_are_read_once_and_still_linted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every session over a shared catalog read all its tools again for their servers'
    names (6 ms of a 7 ms start at 23k tools, benchmarks/catalog_start.py); the batch now
    keeps them, and a volatile server name is still named by each session."""
    from contextchef.session import _linting

    calls: list[int] = []
    real = _linting._servers
    monkeypatch.setattr(_linting, "_servers", lambda tools: calls.append(1) or real(tools))
    server = "mcp-7e07485f-12f9-416b-8b14-26260799b51f"
    tools = [
        Tool(name=n, description="x", input_schema={"type": "object"}, server=s)
        for n, s in (("a", server), ("b", "ops"), ("c", None))
    ]
    for _ in range(3):
        chef = ContextChef()
        chef.register_tools(tools)
        assert [v.location for v in chef.volatile_values] == [f"server '{server}' name"]
    assert calls == [1]
