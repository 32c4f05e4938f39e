"""``format`` is an annotation: values outside a tool's format pass the gate (break-it 20).

The gate asserted ``format`` for a while and refused URLs mcp-fetch's own server accepts
(its pydantic ``AnyUrl``, like WHATWG URL parsing, takes IRIs, spaces and ``|``). Servers
differ on every format, so the gate leaves ``format`` to the tool, as JSON Schema 2020-12
and the jsonschema library do by default.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import shared_data
from contextchef import Allowed, ContextChef, ToolCall
from contextchef.tools._validate import validation_errors

URLS = [
    "https://en.wikipedia.org/wiki/Café",
    "https://例子.测试/路径",
    "https://example.com/search?q=hello world",
    "https://x.com/a|b",
    "https://x.com/%zz",
]


def check(chef: ContextChef, name: str, args: dict[str, Any]) -> Any:
    return chef.check_tool_call(ToolCall(id="c", name=name, arguments=args))


@pytest.mark.parametrize("url", URLS)
def test_mcp_fetch_urls_its_server_accepts_pass_the_gate(url: str) -> None:
    chef = ContextChef()
    chef.register_catalog(shared_data() / "catalogs" / "mcp-fetch.json")
    (fetch,) = chef.tools
    assert fetch.input_schema["properties"]["url"]["format"] == "uri"
    decided = check(chef, "fetch__fetch", {"url": url})
    assert isinstance(decided, Allowed) and decided.arguments == {"url": url}


SCHEMA = {
    "type": "object",
    "properties": {
        "ip": {"type": "string", "format": "ipv4"},
        "since": {"type": "string", "format": "date-time"},
        "page": {"type": "string", "format": "uri"},
        "n": {"type": "integer"},
    },
    "additionalProperties": False,
}


def test_date_time_without_offset_and_out_of_range_ipv4_pass() -> None:
    chef = ContextChef()
    chef.register_tools([{"name": "f", "description": "F.", "input_schema": SCHEMA}])
    args = {"ip": "999.1.1.1", "since": "2026-01-01T10:00:00", "page": URLS[3]}
    assert isinstance(check(chef, "f", args), Allowed)
    assert validation_errors(SCHEMA, args) == []


def test_the_rest_of_the_schema_is_still_checked() -> None:
    assert validation_errors(SCHEMA, {"ip": "999.1.1.1", "n": "x"}) == [
        "n: 'x' is not of type 'integer' (rule: type)"
    ]
